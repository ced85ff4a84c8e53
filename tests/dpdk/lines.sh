#!/usr/bin/env bash
# eth_vecring on every DPDK line it supports, and links between lines.
#
#   tests/dpdk/lines.sh [LINE...]      (as root; default: 24.11 25.11)
#
# For each LINE (besides the distribution's 22.11, which tests/dpdk/run.sh
# covers in full): the line is built once (scripts/dpdk.sh, from
# $VECRING_DPDK_SOURCES), the driver is built for it and installed into its
# driver directory (scripts/build-pmd.sh), and the line's own dpdk-testpmd,
# dpdk-proc-info and dpdk-dumpcap run the core set of tests/dpdk/run.sh:
# probe and bad devargs, traffic both ways with counts checked, jumbo
# chains, kill -9 and reconnect, 4 queues, link down/up, stats and
# per-queue xstats through testpmd and dpdk-proc-info, telemetry, Rx
# interrupts, every byte through the Rust API, and the pktgen release made
# for the line (scripts/pktgen.sh) on the host and in an LXC container, its
# counts checked against both drivers' xstats. The C API (libvecring)
# exchanges frames with the line's testpmd (tests/ffi.rs).
#
# Then links between lines (tests/dpdk_lines.rs: every frame intact across
# the link both ways): each new line as the master of a 22.11 slave and as
# the slave of a 22.11 master, and the two newest lines (24.11 and 25.11)
# in both roles; VECRING_LINES_ALL_PAIRS=1 adds every other pair.
#
# The last line is "N passed, N failed"; the exit status is non-zero if
# anything failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LINES=("$@")
[ ${#LINES[@]} -gt 0 ] || LINES=(24.11 25.11)
# The groups and cases of run.sh each line runs (the LXC group needs the
# line's libraries inside a container and the hostile-peer group tests
# line-independent Rust: both run on the distribution's line only; the
# pktgen group's container holds the line's own, from scripts/image.sh).
CORE=(devargs traffic link_state queues rust_interop rust_port rust_tools rust_intr rust_monitor rust_rx tap pktgen)
PASSED=0
FAILED=0
pass() { echo "PASS: $*"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL: $*"; FAILED=$((FAILED + 1)); }
log() { echo "dpdk-lines: $*"; }

# The distribution's line, as tests/dpdk/run.sh uses it.
declare -A PREFIX=([22.11]=/usr)
for line in "${LINES[@]}"; do
	log "=== DPDK $line"
	if ! prefix=$(bash "$ROOT/scripts/dpdk.sh" "$line"); then
		fail "DPDK $line: scripts/dpdk.sh could not provide it (VECRING_DPDK_SOURCES=${VECRING_DPDK_SOURCES:-unset})"
		continue
	fi
	if ! so=$(bash "$ROOT/scripts/build-pmd.sh" "$prefix"); then
		fail "DPDK $line: the driver does not build against $prefix"
		continue
	fi
	pass "DPDK $line: driver built and installed as $so"
	PREFIX[$line]=$prefix
	out=$(mktemp)
	# This line's driver, whatever VECRING_PMD_SO the caller exported (a
	# 22.11 driver in a 25.11 testpmd would be a second EAL).
	VECRING_DPDK=$prefix VECRING_PMD_SO=$so bash "$ROOT/tests/dpdk/run.sh" "${CORE[@]}" 2>&1 | tee "$out" | grep -E '^(PASS|FAIL|    )'
	summary=$(tail -n1 "$out")
	rm -f "$out"
	if [[ "$summary" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
		PASSED=$((PASSED + BASH_REMATCH[1]))
		FAILED=$((FAILED + BASH_REMATCH[2]))
	else
		fail "DPDK $line: tests/dpdk/run.sh ended without its summary: $summary"
	fi
	# The C API against this line's testpmd.
	if (cd "$ROOT" && PATH="$prefix/bin:$PATH" TESTPMD="$prefix/bin/dpdk-testpmd" VECRING_PMD_SO=$so \
		timeout --kill-after=10 300 cargo test --release -q -p vecring-tests --test ffi testpmd \
		-- --test-threads=1) >"/tmp/vecring-lines-ffi-$line.log" 2>&1; then
		pass "DPDK $line: the C API exchanges frames with the line's testpmd ($(grep -o '[0-9]* passed' "/tmp/vecring-lines-ffi-$line.log" | head -n1))"
	else
		fail "DPDK $line: the C API against the line's testpmd, see /tmp/vecring-lines-ffi-$line.log"
	fi
done

# cross A B: a frame crosses the link between line A (master) and line B
# (slave) both ways, intact.
cross() {
	local a=$1 b=$2 log
	log=/tmp/vecring-lines-$a-$b.log
	if (cd "$ROOT" && VECRING_DPDK_A=${PREFIX[$a]} VECRING_DPDK_B=${PREFIX[$b]} \
		timeout --kill-after=10 200 cargo test --release -q -p vecring-tests --test dpdk_lines \
		-- --ignored --test-threads=1 --nocapture) >"$log" 2>&1; then
		pass "DPDK $a master <-> DPDK $b slave: $(grep -o '[0-9]* frames ([0-9]* bytes) crossed.*' "$log")"
	else
		fail "DPDK $a master <-> DPDK $b slave, see $log"
		grep -E "panicked|timeout|assert" "$log" | head -n 5 | sed 's/^/    /'
	fi
}
built=()
for line in "${LINES[@]}"; do
	[ -n "${PREFIX[$line]:-}" ] && built+=("$line")
done
for a in "${built[@]}"; do
	cross "$a" 22.11
	cross 22.11 "$a"
done
# The two newest lines with each other (the pairs of a host a line ahead
# of its containers; VECRING_LINES_ALL_PAIRS=1 runs every pair).
n=${#built[@]}
for ((i = 0; i < n; i++)); do
	for ((j = i + 1; j < n; j++)); do
		if [ "${VECRING_LINES_ALL_PAIRS:-0}" = 1 ] || { [ "$j" -eq $((n - 1)) ] && [ "$i" -eq $((n - 2)) ]; }; then
			cross "${built[i]}" "${built[j]}"
			cross "${built[j]}" "${built[i]}"
		fi
	done
done

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
