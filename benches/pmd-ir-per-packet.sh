#!/bin/bash
# Instructions per packet of a DPDK driver's bursts, counted by valgrind's
# callgrind inside a real dpdk-testpmd: the side measured runs under
# callgrind, the other side runs natively and keeps the measured side busy
# (the ring is never empty for RX, never full for TX, so every burst moves
# 32 packets). Counted for 8 seconds of steady traffic. Like
# benches/ir-per-frame.sh this is a CPU cost, the same on every run, not a
# speed.
#
# For eth_vecring (the default) it prints the burst function's inclusive
# count, which includes DPDK's bulk mbuf allocation (RX) and bulk free
# (TX). For every driver it then prints the whole process's instructions
# per packet split by the library they ran in (benches/callgrind-objects.py:
# testpmd's own generation or reception, the driver, the mempool, libc's
# memcpy), so that drivers compare on the whole lcore's work:
#
#   bash benches/pmd-ir-per-packet.sh [rx|tx ...]     (default: rx tx)
#   DRIVER=null bash benches/pmd-ir-per-packet.sh tx rx
#   DEVARGS=,zero_copy=1 bash benches/pmd-ir-per-packet.sh rx   (more devargs for the measured side)
#
# net_null has no other side: its TX frees what it is given, its RX
# allocates empty mbufs. Not net_memif: under callgrind its bursts move
# varying numbers of packets (a third of TX's dropped at a full ring,
# RX's bursts mostly empty), so calls do not count its packets.
#
# Needs root, hugepages, valgrind and (eth_vecring only) the release
# build of the PMD.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIDES=${*:-rx tx}
DRIVER=${DRIVER:-vecring}
command -v valgrind >/dev/null || { echo "pmd-ir-per-packet: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
SO=
if [ "$DRIVER" = vecring ]; then
	# shellcheck source=benches/plugin.sh
	. "$ROOT/benches/plugin.sh"
fi
WORK=$(mktemp -d /run/vecring-pmd-ir.XXXXXX)
trap 'pkill -f "file-prefix=vrir" 2>/dev/null || true; [ "${VECRING_BENCH_KEEP:-0}" = 1 ] || rm -rf "$WORK"' EXIT

for side in $SIDES; do
	case $side in
	tx) measured=txonly other=rxonly mcpu=0 ocpu=1 ;;
	rx) measured=rxonly other=txonly mcpu=1 ocpu=0 ;;
	*) echo "pmd-ir-per-packet: rx or tx, not $side" >&2; exit 2 ;;
	esac
	rm -rf "$WORK/run" "$WORK"/cg.*
	opts="--stats-period=5 --txd=1024 --rxd=1024 --txpkts=64"
	plugin=() logs=("$WORK/measured.log" "$WORK/other.log")
	case $DRIVER in
	vecring)
		plugin=(-d "$SO")
		mvdev="eth_vecring0,domain=bench,link=ir,master=true,run_dir=$WORK/run${DEVARGS:-}"
		ovdev="eth_vecring0,domain=bench,link=ir,run_dir=$WORK/run"
		sock=$WORK/run/bench/ir.sock obj=$(basename "$SO") ;;
	null)
		mvdev=net_null0 ovdev= obj=librte_net_null logs=("$WORK/measured.log") ;;
	*) echo "pmd-ir-per-packet: DRIVER is vecring or null, not $DRIVER" >&2; exit 2 ;;
	esac
	# shellcheck disable=SC2086
	timeout 300 valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" \
		dpdk-testpmd --lcores="(0,1)@$mcpu" --file-prefix=vrirm --no-pci --log-level=lib.eal:warning "${plugin[@]}" \
		--vdev="$mvdev" -- --forward-mode=$measured $opts >"$WORK/measured.log" 2>&1 &
	# EAL start-up under valgrind takes a while; the link comes up when
	# the other side arrives.
	if [ -n "$ovdev" ]; then
		for _ in $(seq 120); do [ -S "$sock" ] && break; sleep 1; done
		# shellcheck disable=SC2086
		timeout 100 dpdk-testpmd --lcores="(0,1)@$ocpu" --file-prefix=vriro --no-pci --log-level=lib.eal:warning "${plugin[@]}" \
			--vdev="$ovdev" -- --forward-mode=$other $opts >"$WORK/other.log" 2>&1 &
	fi
	# Count from steady traffic: every side forwarding, plus a margin.
	for _ in $(seq 300); do
		[ "$(grep -l "packet forwarding - ports" "${logs[@]}" 2>/dev/null | wc -l)" = "${#logs[@]}" ] && break
		sleep 1
	done
	sleep 5
	pid=$(callgrind_control 2>/dev/null | sed -n 's/^PID \([0-9]*\):.*vrirm.*/\1/p' | head -1)
	[ -n "$pid" ] || { echo "pmd-ir-per-packet: the measured testpmd is not running:" >&2; tail -5 "$WORK/measured.log" >&2; exit 1; }
	callgrind_control -z "$pid" >/dev/null 2>&1
	sleep 8
	callgrind_control -d "$pid" >/dev/null 2>&1
	sleep 2
	pkill -f "file-prefix=vrir" || true
	wait 2>/dev/null || true
	dump=$(ls "$WORK"/cg.out.* | head -1)
	echo "$DRIVER $measured, instructions per packet by library:"
	python3 "$ROOT/benches/callgrind-objects.py" "$dump" "$obj" 32
	[ "$DRIVER" = vecring ] || continue
	# The burst function's inclusive count is the line after its caller's
	# (testpmd's forwarding loop), which carries the number of calls.
	line=$(callgrind_annotate --inclusive=yes --tree=caller "$dump" 2>/dev/null | tr -d , |
		awk -v f="datapath::${side}::${side}_burst" '!found && prev ~ /< .*dpdk-testpmd\]/ && $0 ~ "\\*  .*" f {print prev; found = 1} {prev = $0}')
	calls=$(echo "$line" | sed -n 's/.*(\([0-9]*\)x).*/\1/p')
	ir=$(echo "$line" | awk '{print $1}')
	[ -n "$calls" ] && [ "$calls" -gt 0 ] || { echo "pmd-ir-per-packet: no ${side}_burst calls counted" >&2; exit 1; }
	awk -v s="$side" -v ir="$ir" -v c="$calls" \
		'BEGIN {printf "%s_burst: %d calls, %.1f instructions per call, %.1f per packet (32 per call)\n", s, c, ir / c, ir / c / 32}'
done
