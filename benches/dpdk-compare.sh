#!/usr/bin/env bash
# eth_vecring against DPDK's net_memif, side by side (see
# docs/benchmarks/method.md): two dpdk-testpmd processes per run, txonly on
# CPU 0 -> rxonly on CPU 1, one CPU each; vecring and memif runs alternate
# (A B A B ...) for every frame size. The receiver's Rx-pps per stats
# period is the figure: first and last periods dropped, median of the rest.
# Each run is tagged with the vCPU placement it drew (the core-to-core
# latency measured just before and just after it; a run whose two figures
# fall on different sides of NEAR_NS moved during it): besides the median
# ratio of all pairs, the table gives it over the pairs whose two runs
# drew the same placement and did not move, near (under NEAR_NS, default
# 100 ns) or far, since a pair split across placements compares the
# machine, not the drivers. (Near is not faster: packet rates are often higher in
# the far placement.)
#
# Usage: benches/dpdk-compare.sh [-s "64 1514"] [-p PAIRS] [-t SECONDS] [-z] [-n] [-o FILE]
#   -z  also measure eth_vecring with zero_copy=true on the receiver
#   -n  also measure the ceiling in every pair: testpmd txonly alone on
#       CPU 0 over net_null (a driver that frees what it is given), whose
#       Tx-pps is the most any driver's txonly -> rxonly pair can carry;
#       eth_vecring's RX is then also given as a share of it
#   -o  also write every run's RX and TX pps, with its core-to-core
#       latency, to FILE as CSV (the columns of benches/src/results.rs:
#       bench dpdk, candidates eth_vecring, eth_vecring-zc, net_memif)
# VECRING_DEVARGS=",slots=1024,slot_size=2048" appends devargs to the
# eth_vecring master (e.g. to compare ring geometries).
# Needs root, hugepages, the built PMD and latency probe
# (cargo build --release -p vecring-pmd -p vecring-benches).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIZES="64 128 256 512 1024 1514 9000"
PAIRS=5
SECONDS_PER_RUN=8
ZERO_COPY=0
NULL=0
CSV=
VECRING_DEVARGS=${VECRING_DEVARGS:-}
while getopts "s:p:t:zno:" o; do
	case $o in
	s) SIZES=$OPTARG ;;
	p) PAIRS=$OPTARG ;;
	t) SECONDS_PER_RUN=$OPTARG ;;
	z) ZERO_COPY=1 ;;
	n) NULL=1 ;;
	o) CSV=$OPTARG ;;
	*) sed -n '2,28p' "$0"; exit 2 ;;
	esac
done

# testpmd prints its rates once a second, the first periods come before the
# link is up, and the first and last periods are dropped: runs shorter than
# 8 s left one period or none to take the median of (and printed zeros).
[ "$SECONDS_PER_RUN" -ge 8 ] || { echo "dpdk-compare: -t needs at least 8 seconds per run" >&2; exit 2; }

# shellcheck source=benches/plugin.sh
. "$ROOT/benches/plugin.sh"
# shellcheck source=benches/periods.sh
. "$ROOT/benches/periods.sh"
LATENCY=$ROOT/target/release/core-latency
[ -x "$LATENCY" ] || { echo "missing $LATENCY: cargo build --release -p vecring-benches" >&2; exit 1; }
NEAR_NS=${NEAR_NS:-100}

WORK=$(mktemp -d /run/vecring-bench.XXXXXX)
# EAL file prefixes of this invocation only (another run of this script, or
# anyone's testpmd, may be running beside it): on exit, only the processes
# this script started are stopped and only their hugepage files removed.
PREFIX=vrb$$
cleanup() {
	# (Most have exited by now: kill's complaint about those is no error.)
	[ ! -f "$WORK/pids" ] || xargs -r kill -TERM <"$WORK/pids" 2>/dev/null || true
	sleep 0.5
	rm -f /dev/hugepages/"$PREFIX"rxmap_* /dev/hugepages/"$PREFIX"txmap_*
	[ "${VECRING_BENCH_KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT
[ -z "$CSV" ] || echo "bench,group,candidate,frame,pair,metric,value,c2c_ns" >"$CSV"

# testpmd options shared by every run. (memif needs EAL's multi-process
# support, so no --in-memory; each process gets its own --file-prefix.)
COMMON="--no-pci --log-level=lib.eal:warning"
# app_opts SIZE: default mbufs, or big ones so 9000-byte frames fit one
# segment on both PMDs.
app_opts() {
	local o="--stats-period=1 --txd=1024 --rxd=1024"
	[ "$1" -gt 2048 ] && o="$o --mbuf-size=10240 --total-num-mbufs=32768"
	echo "$o"
}

# run_pair KIND SIZE -> prints "rx_pps tx_pps before/after" (medians; the
# core-to-core latency in ns before and after the run)
run_pair() {
	local kind=$1 size=$2 rx_vdev tx_vdev lat_before lat_after
	lat_before=$("$LATENCY")
	case $kind in
	vecring)
		rx_vdev="eth_vecring0,domain=bench,link=l$size,master=true,run_dir=$WORK/run$VECRING_DEVARGS"
		tx_vdev="eth_vecring0,domain=bench,link=l$size,run_dir=$WORK/run" ;;
	vecring-zc)
		rx_vdev="eth_vecring0,domain=bench,link=z$size,master=true,run_dir=$WORK/run,zero_copy=true$VECRING_DEVARGS"
		tx_vdev="eth_vecring0,domain=bench,link=z$size,run_dir=$WORK/run" ;;
	memif)
		rx_vdev="net_memif0,role=server,socket=$WORK/memif-$size.sock"
		tx_vdev="net_memif0,role=client,socket=$WORK/memif-$size.sock" ;;
	null) tx_vdev="net_null0" ;;
	esac
	local plugin=""
	case $kind in vecring*) plugin="-d $SO" ;; esac
	# net_null has no receiver: the generator alone, its Tx-pps the figure.
	local rx=
	if [ "$kind" != null ]; then
		# shellcheck disable=SC2086,SC2046
		timeout $((SECONDS_PER_RUN + 45)) dpdk-testpmd --lcores='(0,1)@1' --file-prefix="$PREFIX"rx $COMMON $plugin \
			--vdev="$rx_vdev" -- --forward-mode=rxonly $(app_opts "$size") >"$WORK/rx.log" 2>&1 &
		rx=$!
		echo "$rx" >>"$WORK/pids"
		sleep 1
	fi
	# shellcheck disable=SC2086,SC2046
	timeout $((SECONDS_PER_RUN + 40)) dpdk-testpmd --lcores='(0,1)@0' --file-prefix="$PREFIX"tx $COMMON $plugin \
		--vdev="$tx_vdev" -- --forward-mode=txonly $(app_opts "$size") --txpkts="$size" >"$WORK/tx.log" 2>&1 &
	local tx=$!
	echo "$tx" >>"$WORK/pids"
	# Measure from the moment forwarding starts (creating the mbuf pools
	# takes a few seconds), not from the launch.
	local waited=0
	while ! grep -q "packet forwarding - ports" "$WORK/tx.log" 2>/dev/null && [ $waited -lt 300 ]; do
		sleep 0.1
		waited=$((waited + 1))
	done
	sleep "$SECONDS_PER_RUN"
	# shellcheck disable=SC2086
	kill -TERM "$tx" $rx 2>/dev/null || true
	# shellcheck disable=SC2086
	wait "$tx" $rx 2>/dev/null || true
	lat_after=$("$LATENCY")
	# testpmd silently falls back to 64-byte frames when it refuses --txpkts
	# (e.g. longer than its mbufs): never report such a run as SIZE bytes.
	if ! grep -q "packet len=$size " "$WORK/tx.log"; then
		echo "dpdk-compare: $kind: testpmd did not send $size-byte frames:" >&2
		grep -m1 -i "give up\|packet len=" "$WORK/tx.log" >&2 || true
		echo "ERR ERR ERR"
		return
	fi
	local rx_pps tx_pps
	tx_pps=$(median_periods Tx-pps "$WORK/tx.log")
	if [ -n "$rx" ]; then rx_pps=$(median_periods Rx-pps "$WORK/rx.log"); else rx_pps=$tx_pps; fi
	echo "$rx_pps $tx_pps $lat_before/$lat_after"
}

# placement BEFORE/AFTER: "near", "far", or "moved" when the two differ.
placement() {
	local a=${1%/*} b=${1#*/} pa pb
	if [ "$a" -lt "$NEAR_NS" ]; then pa=near; else pa=far; fi
	if [ "$b" -lt "$NEAR_NS" ]; then pb=near; else pb=far; fi
	if [ "$pa" = "$pb" ]; then echo "$pa"; else echo moved; fi
}
# The larger of BEFORE/AFTER, for the CSV's c2c_ns.
larger() { local a=${1%/*} b=${1#*/}; echo $((a > b ? a : b)); }

# same_placement "RATIOS": "median (count)", or "- (0)" when no pair qualified.
same_placement() {
	local n
	n=$(echo "$1" | wc -w)
	if [ "$n" -eq 0 ]; then echo "- (0)"; else echo "$(echo "$1" | median) ($n)"; fi
}

KINDS="vecring memif"
[ "$ZERO_COPY" = 1 ] && KINDS="vecring vecring-zc memif"
[ "$NULL" = 1 ] && KINDS="$KINDS null"
echo "eth_vecring vs net_memif: dpdk-testpmd txonly (CPU 0) -> rxonly (CPU 1), $PAIRS alternating pairs of ${SECONDS_PER_RUN} s per size"
echo "vCPU placement per run: core-to-core latency, near under $NEAR_NS ns (it changes every figure 2-3x; compare ratios only)"
printf "%6s | %-10s | %12s | %12s | %15s | %10s | %7s | %12s | %6s | %13s | %11s | %11s | %6s\n" frame pmd "TX pps" "RX pps" "RX M pps min-max" "Mbit/s" "thr %" "memif RX" "ratio" "ratio min-max" "near pairs" "far pairs" "/ null"
for size in $SIZES; do
	declare -A rx_all=() tx_all=() ratios=() near_ratios=() far_ratios=() null_ratios=()
	for pair in $(seq 1 "$PAIRS"); do
		order=$KINDS
		# Alternate which candidate goes first.
		[ $((pair % 2)) = 0 ] && order=$(echo "$KINDS" | tr ' ' '\n' | tac | tr '\n' ' ')
		declare -A this=() lat=()
		for kind in $order; do
			read -r r t l < <(run_pair "$kind" "$size")
			[ "$r" = ERR ] && exit 1
			rx_all[$kind]="${rx_all[$kind]:-} $r"
			tx_all[$kind]="${tx_all[$kind]:-} $t"
			this[$kind]=$r
			lat[$kind]=$l
			if [ -n "$CSV" ]; then
				case $kind in memif) cand=net_memif ;; null) cand=net_null ;; *) cand=eth_$kind ;; esac
				echo "dpdk,dpdk,$cand,$size,$((pair - 1)),rx_pps,$r,$(larger "$l")" >>"$CSV"
				echo "dpdk,dpdk,$cand,$size,$((pair - 1)),tx_pps,$t,$(larger "$l")" >>"$CSV"
			fi
		done
		line="  pair $pair, $size B:"
		for kind in $order; do line="$line $kind ${this[$kind]} (${lat[$kind]} ns)"; done
		echo "$line" >&2
		for kind in $KINDS; do
			case $kind in memif | null) continue ;; esac
			if [ "$NULL" = 1 ]; then
				null_ratios[$kind]="${null_ratios[$kind]:-} $(awk -v a="${this[$kind]}" -v b="${this[null]}" 'BEGIN {if (b > 0) printf "%.3f", a / b; else print 0}')"
			fi
			r=$(awk -v a="${this[$kind]}" -v b="${this[memif]}" 'BEGIN {if (b > 0) printf "%.3f", a / b; else print 0}')
			ratios[$kind]="${ratios[$kind]:-} $r"
			p=$(placement "${lat[$kind]}")
			if [ "$p" != moved ] && [ "$p" = "$(placement "${lat[memif]}")" ]; then
				if [ "$p" = near ]; then
					near_ratios[$kind]="${near_ratios[$kind]:-} $r"
				else
					far_ratios[$kind]="${far_ratios[$kind]:-} $r"
				fi
			fi
		done
		unset this lat
	done
	memif_rx=$(echo "${rx_all[memif]}" | median)
	for kind in $KINDS; do
		rx=$(echo "${rx_all[$kind]}" | median)
		tx=$(echo "${tx_all[$kind]}" | median)
		ratio="-" near="-" far="-" spread="-" of_null="-"
		case $kind in memif | null) ;; *)
			ratio=$(echo "${ratios[$kind]}" | median)
			spread=$(echo "${ratios[$kind]}" | min_max)
			near=$(same_placement "${near_ratios[$kind]:-}")
			far=$(same_placement "${far_ratios[$kind]:-}")
			[ "$NULL" = 1 ] && of_null=$(echo "${null_ratios[$kind]}" | median)
			# memif's frames are at most 1518 bytes here (max_rx_pktlen).
			[ "$memif_rx" = 0 ] && ratio="n/a" spread="n/a" near="n/a" far="n/a" ;;
		esac
		# The per-run spread of this candidate's rate, in M pps.
		rx_spread=$(echo "${rx_all[$kind]}" | awk '{for (i = 1; i <= NF; i++) $i /= 1e6; print}' | min_max)
		awk -v s="$size" -v k="$kind" -v rx="$rx" -v tx="$tx" -v m="$memif_rx" -v r="$ratio" \
			-v f="$near" -v w="$far" -v sp="$spread" -v rs="$rx_spread" -v nl="$of_null" 'BEGIN {
			thr = (tx > 0) ? 100 * rx / tx : 0
			printf "%6d | %-10s | %12d | %12d | %15s | %10.1f | %6.1f%% | %12d | %6s | %13s | %11s | %11s | %6s\n", s, k, tx, rx, rs, rx * s * 8 / 1e6, thr, m, r, sp, f, w, nl }'
	done
	unset rx_all tx_all ratios near_ratios far_ratios null_ratios
done
echo "ratio = median of per-pair (candidate RX pps / memif RX pps); near/far pairs: the same over the pairs"
echo "whose two runs drew that placement and did not move during the run, \"median (pairs)\"; Mbit/s counts frame bytes."
if [ "$NULL" = 1 ]; then
	echo "/ null = median of per-pair (candidate RX pps / net_null txonly TX pps): the share of testpmd's own ceiling"
	echo "(net_null's row: its txonly TX pps, alone on CPU 0; it has no receiver)"
fi
