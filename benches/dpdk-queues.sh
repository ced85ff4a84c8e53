#!/usr/bin/env bash
# The per-queue overhead of eth_vecring: one dpdk-testpmd lcore serving 1,
# 2 and 4 queue pairs on the same core. txonly (CPU 0, one forwarding lcore,
# --txq=Q) -> rxonly (CPU 1, one forwarding lcore, --rxq=Q) over a link of
# Q queue pairs (queues=Q on the master); the queue counts alternate round
# by round (1 2 4, then 4 2 1, ...), so that every ratio compares runs of
# one time window (docs/benchmarks/method.md). The receiver's Rx-pps per
# stats period is the figure: first and last periods dropped, median of
# the rest; each run is tagged with its core-to-core latency (the larger of
# before and after).
#
# Usage: benches/dpdk-queues.sh [-s "64 1514"] [-q "1 2 4"] [-r ROUNDS] [-t SECONDS]
# VECRING_DEVARGS=",hugepages=never" appends devargs to the master.
# Needs root, hugepages, the built PMD and latency probe
# (cargo build --release -p vecring-pmd -p vecring-benches).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIZES="64 1514"
QUEUES="1 2 4"
ROUNDS=3
SECONDS_PER_RUN=8
while getopts "s:q:r:t:" o; do
	case $o in
	s) SIZES=$OPTARG ;;
	q) QUEUES=$OPTARG ;;
	r) ROUNDS=$OPTARG ;;
	t) SECONDS_PER_RUN=$OPTARG ;;
	*) sed -n '2,15p' "$0"; exit 2 ;;
	esac
done
[ "$SECONDS_PER_RUN" -ge 8 ] || { echo "dpdk-queues: -t needs at least 8 seconds per run" >&2; exit 2; }

# shellcheck source=benches/plugin.sh
. "$ROOT/benches/plugin.sh"
# shellcheck source=benches/periods.sh
. "$ROOT/benches/periods.sh"
LATENCY=$ROOT/target/release/core-latency
[ -x "$LATENCY" ] || { echo "missing $LATENCY: cargo build --release -p vecring-benches" >&2; exit 1; }

WORK=$(mktemp -d /run/vecring-queues.XXXXXX)
PREFIX=vrq$$
cleanup() {
	[ ! -f "$WORK/pids" ] || xargs -r kill -TERM <"$WORK/pids" 2>/dev/null || true
	sleep 0.5
	rm -f /dev/hugepages/"$PREFIX"rxmap_* /dev/hugepages/"$PREFIX"txmap_*
	[ "${VECRING_BENCH_KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT
COMMON="--no-pci --log-level=lib.eal:warning -d $SO"

# run Q SIZE -> "rx_pps latency_ns"
run() {
	local q=$1 size=$2 lat_before lat_after link="q${1}s$2r$RANDOM"
	lat_before=$("$LATENCY")
	local opts="--stats-period=1 --txd=1024 --rxd=1024 --rxq=$q --txq=$q --nb-cores=1"
	# shellcheck disable=SC2086
	timeout $((SECONDS_PER_RUN + 45)) dpdk-testpmd --lcores='(0,1)@1' --file-prefix="$PREFIX"rx $COMMON \
		--vdev="eth_vecring0,domain=bench,link=$link,master=true,queues=$q,run_dir=$WORK/run${VECRING_DEVARGS:-}" \
		-- --forward-mode=rxonly $opts >"$WORK/rx.log" 2>&1 &
	local rx=$!
	echo "$rx" >>"$WORK/pids"
	sleep 1
	# shellcheck disable=SC2086
	timeout $((SECONDS_PER_RUN + 40)) dpdk-testpmd --lcores='(0,1)@0' --file-prefix="$PREFIX"tx $COMMON \
		--vdev="eth_vecring0,domain=bench,link=$link,run_dir=$WORK/run" \
		-- --forward-mode=txonly $opts --txpkts="$size" >"$WORK/tx.log" 2>&1 &
	local tx=$!
	echo "$tx" >>"$WORK/pids"
	local waited=0
	while ! grep -q "packet forwarding - ports" "$WORK/tx.log" 2>/dev/null && [ $waited -lt 300 ]; do
		sleep 0.1
		waited=$((waited + 1))
	done
	sleep "$SECONDS_PER_RUN"
	kill -TERM "$tx" "$rx" 2>/dev/null || true
	wait "$tx" "$rx" 2>/dev/null || true
	lat_after=$("$LATENCY")
	if ! grep -q "packet len=$size " "$WORK/tx.log" || ! grep -q "RX queue number: $q " "$WORK/rx.log"; then
		echo "dpdk-queues: $q queues, $size B: testpmd did not run as asked:" >&2
		grep -m3 -i "fail\|error\|queues=" "$WORK/rx.log" "$WORK/tx.log" >&2 || true
		echo "ERR ERR"
		return
	fi
	echo "$(median_periods Rx-pps "$WORK/rx.log") $((lat_before > lat_after ? lat_before : lat_after))"
}

echo "eth_vecring, one testpmd lcore per side serving Q queue pairs: txonly (CPU 0) -> rxonly (CPU 1), $ROUNDS rounds of ${SECONDS_PER_RUN} s per queue count, alternating"
for size in $SIZES; do
	declare -A all=() ratio=()
	base_q=$(echo "$QUEUES" | awk '{print $1}')
	for round in $(seq 1 "$ROUNDS"); do
		order=$QUEUES
		[ $((round % 2)) = 0 ] && order=$(echo "$QUEUES" | tr ' ' '\n' | tac | tr '\n' ' ')
		declare -A this=()
		line="  round $round, $size B:"
		for q in $order; do
			read -r r l < <(run "$q" "$size")
			[ "$r" = ERR ] && exit 1
			this[$q]=$r
			all[$q]="${all[$q]:-} $r"
			line="$line q=$q $r pps ($l ns)"
		done
		echo "$line"
		for q in $QUEUES; do
			ratio[$q]="${ratio[$q]:-} $(awk -v a="${this[$q]}" -v b="${this[$base_q]}" 'BEGIN {if (b > 0) printf "%.3f", a / b; else print 0}')"
		done
		unset this
	done
	printf "%6s | %6s | %14s | %24s | %s\n" frame queues "RX pps (median)" "vs $base_q queue(s): median" "per round"
	for q in $QUEUES; do
		printf "%6d | %6d | %14d | %24s | %s\n" "$size" "$q" "$(echo "${all[$q]}" | median)" "$(echo "${ratio[$q]}" | median)" "${ratio[$q]# }"
	done
	unset all ratio
done
