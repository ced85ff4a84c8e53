#!/usr/bin/env bash
# End-to-end tests of librte_net_vecring.so inside Debian's unmodified
# dpdk-testpmd: bad devargs are refused with a message naming the key, and
# two testpmd processes (master txonly, slave rxonly) exchange frames over a
# vecring link with exact counters, every mbuf back in its pool afterwards
# (TX fast free on and off), multi-segment jumbo frames (7168 and 9000
# bytes), drops counted, and reconnection after the master or the slave is
# killed. The slave also runs inside an LXC container (lxc-execute) that sees
# the link only through its bind-mounted domain directory, with txonly ->
# rxonly and io-forwarding traffic; testpmd interoperates with a Rust
# program using vecring-core (tests/dpdk_interop.rs, every byte checked);
# a hostile Rust peer cannot get frames past the MAC filter, and an
# application may close its port from the link-state callback
# (tests/dpdk_hostile.rs); an application sleeps in rte_epoll_wait with Rx
# interrupts and is woken by frames and by the peer's leaving
# (tests/dpdk_intr.rs); an application holding zero-copy mbufs gives their
# slots back in ring order only and may keep them past its port's close,
# and hold_back=true holds small bursts back (tests/dpdk_rx.rs).
#
# The shell cases check counters, not payloads: testpmd's txonly and
# rxonly do not look at bytes. The bytes of the same kinds of traffic are
# checked frame by frame by tests/dpdk_interop.rs (run here as
# rust_interop): testpmd txonly frames of 64 and 100 bytes (small_frames,
# mac_filter, lxc cases), 9000-byte chains both ways (jumbo_*), and io forwarding with
# scatter receive and multi-segment transmit, in copy, zero-copy and
# hold-back modes (lxc_io).
#
# This file is the runner: setup (the plugin, the work directory, EAL
# memory options), the cleanup trap, PASS/FAIL counting and the summary.
# The shared helpers (testpmd sessions, counters, checks) are in lib.sh;
# the cases are in one file per group under cases/, run in this order:
#   devargs     cases/devargs.sh     bad devargs refused, second master
#   traffic     cases/traffic.sh     txonly -> rxonly: small, jumbo, MAC filter
#   link_state  cases/link_state.sh  kill -9 of the master or the slave, reconnect
#   queues      cases/queues.sh      queue pairs: limits, 4 queues, absent queues
#   lxc         cases/lxc.sh         the slave testpmd in an LXC container
#   rust        cases/rust.sh        the Rust tests tests/dpdk_*.rs
#   tap         cases/tap.sh         `vecring tap` in two namespaces through testpmd
#   pktgen      cases/pktgen.sh      pktgen on the host and in an LXC container, both ways
#
# Usage: tests/dpdk/run.sh [GROUP|CASE...]     (run as root; needs hugepages
#        or VECRING_TEST_NO_HUGE=1)
#        With no argument every group runs; a GROUP runs its cases, a CASE
#        (e.g. jumbo_9000, rust_interop) runs alone, in the order given.
#        An unknown name is a failure before anything runs.
# Env:   VECRING_DPDK     a DPDK install prefix (scripts/dpdk.sh prints one):
#                         its dpdk-testpmd, dpdk-proc-info and dpdk-dumpcap
#                         are used, and the driver scripts/build-pmd.sh
#                         installed in its driver directory
#        VECRING_PMD_SO   use this .so instead of building one (the Rust
#                         interop test is built with cargo either way)
#        TESTPMD          testpmd binary (default dpdk-testpmd)
#        PKTGEN           pktgen binary of that DPDK (default: what
#                         scripts/pktgen.sh builds or built for it)
#        VECRING_TEST_NO_HUGE=1   run testpmd with --no-huge -m 512 --no-shconf
#        VECRING_TEST_KEEP=1      keep the work directory (logs)
#
# Every testpmd runs under `timeout` (watchdog), every wait has a deadline,
# and the script kills what it started on exit. The last line is
# "N passed, N failed"; the exit status is non-zero if anything failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [ -n "${VECRING_DPDK:-}" ]; then
	# Another DPDK line: its tools first in PATH (the Rust tests run them by
	# name too), its installed driver unless one is given.
	export PATH="$VECRING_DPDK/bin:$PATH"
	# The C test programs are built against it too.
	export PKG_CONFIG_PATH="$VECRING_DPDK/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
	if [ -z "${VECRING_PMD_SO:-}" ]; then
		VECRING_PMD_SO=$(find "$VECRING_DPDK"/lib*/ -path '*/dpdk/pmds-*/librte_net_vecring.so' 2>/dev/null | head -n1)
		[ -n "$VECRING_PMD_SO" ] || {
			echo "FAIL: no librte_net_vecring.so in $VECRING_DPDK's driver directory (run scripts/build-pmd.sh $VECRING_DPDK)"
			echo "0 passed, 1 failed"
			exit 1
		}
	fi
	export VECRING_PMD_SO
fi
TESTPMD=${TESTPMD:-dpdk-testpmd}
WATCHDOG=${VECRING_TEST_WATCHDOG:-90}   # seconds one testpmd may live
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vecring-dpdk.XXXXXX")
RUN_DIR=$WORK/run                       # vecring rendezvous (may be in /tmp)
PASSED=0
FAILED=0
PIDS=()

log() { echo "dpdk-test: $*"; }
pass() { echo "PASS: $*"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL: $*"; FAILED=$((FAILED + 1)); }

HERE=$ROOT/tests/dpdk
# shellcheck source=lib.sh
. "$HERE/lib.sh"

cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill9 "$p"
	done
	wait 2>/dev/null
	# EAL's runtime directories of this run's DPDK processes (their
	# telemetry sockets; pktgen's hold its files).
	rm -rf /var/run/dpdk/vrtest_*_$$
	if [ "${VECRING_TEST_KEEP:-0}" = 1 ] || [ "$FAILED" -gt 0 ]; then
		log "logs kept in $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

# --- groups of cases ---------------------------------------------------------

GROUP_NAMES=()          # in the order they run
declare -A GROUP_CASES=()

# group NAME CASE...: register group NAME (called by each cases/NAME.sh);
# each CASE is run by its function test_CASE.
group() {
	GROUP_NAMES+=("$1")
	GROUP_CASES[$1]="${*:2}"
}

# shellcheck source=cases/devargs.sh
. "$HERE/cases/devargs.sh"
# shellcheck source=cases/traffic.sh
. "$HERE/cases/traffic.sh"
# shellcheck source=cases/link_state.sh
. "$HERE/cases/link_state.sh"
# shellcheck source=cases/queues.sh
. "$HERE/cases/queues.sh"
# shellcheck source=cases/lxc.sh
. "$HERE/cases/lxc.sh"
# shellcheck source=cases/rust.sh
. "$HERE/cases/rust.sh"
# shellcheck source=cases/tap.sh
. "$HERE/cases/tap.sh"
# shellcheck source=cases/pktgen.sh
. "$HERE/cases/pktgen.sh"

# is_one_of WORD LIST...: WORD is one of LIST.
is_one_of() {
	local w=$1 x
	shift
	for x in "$@"; do
		[ "$x" = "$w" ] && return 0
	done
	return 1
}

ALL=()
for g in "${GROUP_NAMES[@]}"; do
	read -ra names <<<"${GROUP_CASES[$g]}"
	ALL+=("${names[@]}")
done
TESTS=()
for arg in "$@"; do
	if is_one_of "$arg" "${GROUP_NAMES[@]}"; then
		read -ra names <<<"${GROUP_CASES[$arg]}"
		TESTS+=("${names[@]}")
	elif is_one_of "$arg" "${ALL[@]}"; then
		TESTS+=("$arg")
	else
		echo "FAIL: unknown group or case '$arg' (groups: ${GROUP_NAMES[*]}; cases: ${ALL[*]})"
		echo "0 passed, 1 failed"
		exit 1
	fi
done
[ ${#TESTS[@]} -eq 0 ] && TESTS=("${ALL[@]}")

# --- the plugin --------------------------------------------------------------

# EAL refuses `-d` plugins under a world-writable directory (such as /tmp).
world_writable_dir() {
	local d
	d=$(dirname "$(readlink -f "$1")")
	while [ -n "$d" ]; do
		if [ -n "$(find "$d" -maxdepth 0 -perm -o+w 2>/dev/null)" ]; then
			echo "$d"
			return 0
		fi
		[ "$d" = / ] && break
		d=$(dirname "$d")
	done
	return 1
}

if [ -z "${VECRING_PMD_SO:-}" ]; then
	target=${CARGO_TARGET_DIR:-$ROOT/target}
	log "building vecring-pmd (release) into $target"
	(cd "$ROOT" && CARGO_TARGET_DIR=$target cargo build --release -p vecring-pmd) || {
		echo "FAIL: cargo build -p vecring-pmd"
		echo "0 passed, 1 failed"
		exit 1
	}
	VECRING_PMD_SO=$target/release/librte_net_vecring.so
fi
SO=$(readlink -f "$VECRING_PMD_SO")
if bad=$(world_writable_dir "$SO"); then
	echo "FAIL: $SO lies under world-writable $bad; EAL would refuse it (set VECRING_PMD_SO)"
	echo "0 passed, 1 failed"
	exit 1
fi
command -v "$TESTPMD" >/dev/null || {
	echo "FAIL: $TESTPMD not found (run scripts/setup.sh)"
	echo "0 passed, 1 failed"
	exit 1
}

# EAL memory options of every testpmd: hugepages, no files (--in-memory);
# or without hugepages, where EAL refuses --in-memory (--no-huge implies
# legacy memory) and --no-shconf keeps the files away instead.
MEM_ARGS=(--in-memory)
free_huge=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
if [ "${VECRING_TEST_NO_HUGE:-0}" = 1 ]; then
	log "running testpmd without hugepages (--no-huge -m 512 --no-shconf), as VECRING_TEST_NO_HUGE=1 asks: the tests that need a primary in hugepages are skipped"
	MEM_ARGS=(--no-huge -m 512 --no-shconf)
elif [ "${free_huge:-0}" -lt 512 ]; then
	echo "FAIL: ${free_huge:-0} free 2 MiB hugepages, 512 needed (run scripts/setup.sh as root, or free memory);"
	echo "      VECRING_TEST_NO_HUGE=1 runs without them on purpose, skipping what needs them"
	echo "0 passed, 1 failed"
	exit 1
fi
TESTPMD_EXE=$(readlink -f "$(command -v "$TESTPMD")")
# The driver must be built for testpmd's DPDK: another line's would bring a
# second EAL into the process ("Cannot init trace").
so_abi=$(readelf -d "$SO" 2>/dev/null | sed -n 's/.*\[librte_eal\.so\.\([0-9]*\)\].*/\1/p')
pmd_abi=$(ldd "$TESTPMD_EXE" 2>/dev/null | sed -n 's/.*librte_eal\.so\.\([0-9]*\) .*/\1/p' | head -n1)
if [ -n "$pmd_abi" ] && [ "$so_abi" != "$pmd_abi" ]; then
	echo "FAIL: $SO is built for DPDK ABI ${so_abi:-?}, $TESTPMD_EXE runs ABI $pmd_abi (build the driver for it: scripts/build-pmd.sh PREFIX)"
	echo "0 passed, 1 failed"
	exit 1
fi
# The DPDK line of testpmd (YY.MM), for the commands that changed spelling.
TESTPMD_LINE=$("$TESTPMD" -v --no-pci --in-memory --no-huge -m 64 -l 0 --file-prefix "vrtest_version_$$" -- --help 2>&1 |
	sed -n "s/.*RTE Version: 'DPDK \([0-9]*\.[0-9]*\).*/\1/p" | head -n1)
[ -n "$TESTPMD_LINE" ] || {
	echo "FAIL: cannot tell the DPDK version of $TESTPMD (EAL -v)"
	echo "0 passed, 1 failed"
	exit 1
}
CTR_RUN=$WORK/ctr-run                   # the run dir as containers see it
log "plugin $SO, testpmd $TESTPMD_EXE (DPDK $TESTPMD_LINE), work dir $WORK"

# --- run ---------------------------------------------------------------------

for t in "${TESTS[@]}"; do
	log "--- $t"
	"test_$t"
done
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
