#!/usr/bin/env bash
# Where eth_vecring's two sides spend their time at one frame size: testpmd
# txonly (CPU 0) -> rxonly (CPU 1) over one link, each side sampled by
# `perf record -e cpu-clock` for 4 s in mid-run; prints the receiver's and
# sender's median pps (first and last stats periods dropped), the
# core-to-core latency after the run, the sender's packet total and each
# side's top six symbols.
#
# Usage: benches/pmd-profile.sh [SIZE]   (default 64)
# SO= the driver to load (default: the installed one, as benches/plugin.sh
# finds it); DEVARGS= appends devargs to the master; TESTPMD_OPTS= adds
# options to both testpmds (e.g. "--burst=16"); TOP= symbols a side
# (default 6).
# Needs root, hugepages, perf and the latency probe (cargo build --release
# -p vecring-benches).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIZE=${1:-64}
DEVARGS=${DEVARGS:-}
if [ -n "${SO:-}" ]; then
	VECRING_PMD_SO=$SO
	export VECRING_PMD_SO
fi
# shellcheck source=benches/plugin.sh
. "$ROOT/benches/plugin.sh"
# shellcheck source=benches/periods.sh
. "$ROOT/benches/periods.sh"
LATENCY=$ROOT/target/release/core-latency
[ -x "$LATENCY" ] || { echo "missing $LATENCY: cargo build --release -p vecring-benches" >&2; exit 1; }

WORK=$(mktemp -d /run/vecring-profile.XXXXXX)
PREFIX=vrp$$
cleanup() {
	rm -rf "$WORK"
	rm -f /dev/hugepages/"$PREFIX"*
}
trap cleanup EXIT
COMMON=(--no-pci --log-level=lib.eal:warning -d "$SO")
OPTS=(--stats-period=1 --txd=1024 --rxd=1024)
# shellcheck disable=SC2206
OPTS+=(${TESTPMD_OPTS:-})

dpdk-testpmd --lcores='(0,1)@1' --file-prefix="${PREFIX}rx" "${COMMON[@]}" \
	--vdev="eth_vecring0,domain=b,link=l,master=true,run_dir=$WORK/run$DEVARGS" \
	-- --forward-mode=rxonly "${OPTS[@]}" >"$WORK/rx.log" 2>&1 &
rx=$!
sleep 1
dpdk-testpmd --lcores='(0,1)@0' --file-prefix="${PREFIX}tx" "${COMMON[@]}" \
	--vdev="eth_vecring0,domain=b,link=l,run_dir=$WORK/run" \
	-- --forward-mode=txonly "${OPTS[@]}" --txpkts="$SIZE" >"$WORK/tx.log" 2>&1 &
tx=$!
until grep -q "packet forwarding - ports" "$WORK/tx.log" 2>/dev/null; do sleep 0.1; done
sleep 3
perf record -e cpu-clock -F 2000 -o "$WORK/tx.data" -p "$tx" -- sleep 4 2>/dev/null &
perf_tx=$!
perf record -e cpu-clock -F 2000 -o "$WORK/rx.data" -p "$rx" -- sleep 4 2>/dev/null
wait "$perf_tx" || true
sleep 1
kill -TERM "$tx" "$rx"
wait "$tx" "$rx" 2>/dev/null || true

echo "rx_pps=$(median_periods Rx-pps "$WORK/rx.log") tx_pps=$(median_periods Tx-pps "$WORK/tx.log") c2c=$("$LATENCY")"
grep -A3 "Forward statistics for port 0" "$WORK/tx.log" | grep TX-packets | head -1 || true
for side in tx rx; do
	echo "  $side:"
	perf report -i "$WORK/$side.data" --no-children --sort sym --stdio 2>/dev/null | grep -v "^#" | grep -v "^$" | head -"${TOP:-6}" || true
done
