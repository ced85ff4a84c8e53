# shellcheck shell=bash
# Group "rust", sourced by tests/dpdk/run.sh: the ignored Rust tests that
# need root, testpmd and the PMD (tests/dpdk_interop.rs, dpdk_hostile.rs,
# dpdk_port.rs, dpdk_tools.rs, dpdk_cli.rs, dpdk_intr.rs, dpdk_monitor.rs,
# dpdk_rx.rs), built with cargo and run here; each passing Rust test is one
# PASS, and each binary must list and pass exactly the expected number of
# tests.

group rust rust_interop rust_hostile rust_port rust_tools rust_cli rust_intr rust_monitor rust_rx

# rust_tests LABEL TEST COUNT: runs the ignored tests of tests/TEST.rs (each
# counts as one check here). The binary must list exactly COUNT ignored
# tests, exactly COUNT must run and pass, and each cargo invocation must
# exit 0: a test that is renamed away, un-ignored, never reached or lost to a
# crash of the binary is a failure, not a silent gap.
rust_tests() {
	local label=$1 test=$2 want=$3
	local target=${CARGO_TARGET_DIR:-$ROOT/target} out=$WORK/$test.log line n=0 listed rc
	log "building tests/$test.rs"
	if ! (cd "$ROOT" && CARGO_TARGET_DIR=$target cargo test --release -p vecring-tests \
		--test "$test" --no-run) >"$out" 2>&1; then
		fail "$label: cargo test --no-run failed"
		tail -n 20 "$out" | sed 's/^/    /'
		return
	fi
	(cd "$ROOT" && CARGO_TARGET_DIR=$target cargo test --release -p vecring-tests \
		--test "$test" -q -- --ignored --list) >"$WORK/$test.list" 2>>"$out"
	rc=$?
	listed=$(grep -c ': test$' "$WORK/$test.list")
	if [ "$rc" -ne 0 ] || [ "$listed" != "$want" ]; then
		fail "$label: tests/$test.rs lists $listed ignored tests (cargo exit status $rc), want exactly $want"
	fi
	(cd "$ROOT" && VECRING_PMD_SO=$SO TESTPMD=$TESTPMD CARGO_TARGET_DIR=$target \
		timeout --kill-after=10 300 cargo test --release -p vecring-tests --test "$test" \
		-- --ignored --test-threads=1 --show-output) >"$out" 2>&1
	rc=$?
	while IFS= read -r line; do
		case $line in
		"test "*" ... ok")
			pass "$label: ${line#test }"
			n=$((n + 1))
			;;
		"test "*" ... FAILED")
			fail "$label: ${line#test }"
			;;
		esac
	done <"$out"
	grep -E "^(tx|io|iozc|iohb|flip|lsc|intr|zc|hb|corrupt)-[a-z0-9-]+: " "$out" | sed 's/^/    /'
	if grep -q "^failures:" "$out"; then
		sed -n '/^failures:/,$p' "$out" | head -n 60 | sed 's/^/    /'
	fi
	[ "$rc" -eq 0 ] || fail "$label: cargo test exit status $rc, see $out"
	[ "$n" -eq "$want" ] || fail "$label: $n tests passed, want exactly $want, see $out"
}

# testpmd on one end, a Rust program using vecring-core on the other, both
# roles and both directions, every byte checked by the Rust side
# (tests/dpdk_interop.rs).
test_rust_interop() {
	rust_tests "rust interop" dpdk_interop 10
}

# A hostile Rust peer flips destination MACs in the ring under testpmd's
# MAC filter; a slave forges the port's count of frames lost; a master
# publishes a corrupt descriptor where the driver reads next; a C DPDK
# program closes its port from its link-state callback when the peer
# leaves (tests/dpdk_hostile.rs, tests/c/lsc_close.c).
test_rust_hostile() {
	rust_tests "rust hostile" dpdk_hostile 7
}

# tests/dpdk_port.rs
test_rust_port() { rust_tests "rust port" dpdk_port 7; }

# tests/dpdk_tools.rs
test_rust_tools() { rust_tests "rust tools" dpdk_tools 5; }
# The vecring tool's frames through a testpmd port's MAC filter, and its
# stats of a testpmd port's link (tests/dpdk_cli.rs).
test_rust_cli() { rust_tests "rust cli" dpdk_cli 2; }

# A C DPDK program sleeps in rte_epoll_wait with Rx interrupts (as
# l3fwd-power does), woken by a Rust peer's frames, by its leaving and by
# its own port's link set down and up, in both roles, and not made to spin
# by a peer ringing its doorbells for nothing; sleeping or polling, its lcore
# is not blocked by descriptors a hostile slave plants on its doorbells, and
# its port closes within a second (tests/dpdk_intr.rs, tests/c/rx_intr.c).
test_rust_intr() { rust_tests "rust intr" dpdk_intr 11; }
test_rust_monitor() { rust_tests "rust monitor" dpdk_monitor 2; }
# Zero-copy mbufs held by a C DPDK program give their slots back in ring
# order only and outlive the link and the port, and copied frames give
# theirs back at once unless behind a held one; hold_back=true holds small
# bursts back at the first poll, hold_back=false never (tests/dpdk_rx.rs,
# tests/c/zero_copy.c, tests/c/hold_back.c).
test_rust_rx() { rust_tests "rust rx" dpdk_rx 6; }
