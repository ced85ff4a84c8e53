#!/usr/bin/env bash
# Builds of eth_vecring against each other, alternately in one run: testpmd
# txonly (CPU 0) -> rxonly (CPU 1) over one link, each build in turn, the
# order reversed every other pair (A B, B A, ...). Prints per run the
# receiver's and sender's median pps per stats period (first and last
# dropped), every period's Rx rate in M pps, and the core-to-core latency
# just before and after the run (the vCPU placement it drew).
#
# Usage: benches/pmd-ab.sh PAIRS SIZE NAME=/path/librte_net_vecring.so[,DEVARGS] ...
# SECS= sets the seconds per run (default 9); DEVARGS= appends devargs to
# the master of every variant (e.g. ",slots=1024"), and a variant's own
# devargs after its path to its master only (e.g. small=$SO,slots=4096:
# one build, two ring geometries). TESTPMD_OPTS= adds options to both
# testpmds (e.g. "--burst=128").
# Needs root, hugepages and the latency probe (cargo build --release -p
# vecring-benches).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 3 ] || { sed -n '2,15p' "$0"; exit 2; }
PAIRS=$1
SIZE=$2
shift 2
VARIANTS=("$@")
SECS=${SECS:-9}
DEVARGS=${DEVARGS:-}
# shellcheck source=benches/periods.sh
. "$ROOT/benches/periods.sh"
LATENCY=$ROOT/target/release/core-latency
[ -x "$LATENCY" ] || { echo "missing $LATENCY: cargo build --release -p vecring-benches" >&2; exit 1; }

# run SO: one txonly -> rxonly run over the driver SO.
run() {
	local so=${1%%,*} own= work prefix rx tx r t per
	[ "$so" = "$1" ] || own=,${1#*,}
	work=$(mktemp -d /run/vecring-ab.XXXXXX)
	prefix=vab$$x$RANDOM
	local common=(--no-pci --log-level=lib.eal:warning -d "$so")
	local opts=(--stats-period=1 --txd=1024 --rxd=1024)
	# shellcheck disable=SC2206
	opts+=(${TESTPMD_OPTS:-})
	dpdk-testpmd --lcores='(0,1)@1' --file-prefix="${prefix}rx" "${common[@]}" \
		--vdev="eth_vecring0,domain=b,link=l,master=true,run_dir=$work/run$DEVARGS$own" \
		-- --forward-mode=rxonly "${opts[@]}" >"$work/rx.log" 2>&1 &
	rx=$!
	sleep 1
	dpdk-testpmd --lcores='(0,1)@0' --file-prefix="${prefix}tx" "${common[@]}" \
		--vdev="eth_vecring0,domain=b,link=l,run_dir=$work/run" \
		-- --forward-mode=txonly "${opts[@]}" --txpkts="$SIZE" >"$work/tx.log" 2>&1 &
	tx=$!
	sleep "$SECS"
	kill -TERM "$tx" "$rx"
	wait "$tx" "$rx" 2>/dev/null || true
	r=$(median_periods Rx-pps "$work/rx.log")
	t=$(median_periods Tx-pps "$work/tx.log")
	per=$({ grep -o "Rx-pps: *[0-9]*" "$work/rx.log" || true; } | awk '{printf "%.1f ", $2 / 1e6}')
	echo "rx=$r tx=$t periods=[$per]"
	rm -rf "$work"
	rm -f /dev/hugepages/"$prefix"*
}

for ((i = 0; i < PAIRS; i++)); do
	order=("${VARIANTS[@]}")
	if ((i % 2)); then
		order=()
		for ((j = ${#VARIANTS[@]} - 1; j >= 0; j--)); do order+=("${VARIANTS[j]}"); done
	fi
	for v in "${order[@]}"; do
		c1=$("$LATENCY")
		out=$(run "${v#*=}")
		c2=$("$LATENCY")
		echo "pair=$i ${v%%=*} c2c=$c1/$c2 $out"
	done
done
