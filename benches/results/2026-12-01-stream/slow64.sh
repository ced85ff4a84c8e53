#!/bin/bash
# ad-hoc: one vecring testpmd pair at 64 B; perf stat on each side for 4 s mid-run
set -u
ROOT=/work/main
SO=${SO:-/usr/local/lib/vecring-ab/librte_net_vecring.so}
W=$(mktemp -d /run/vr-slow.XXXX)
P=vrs$$
COMMON="--no-pci --log-level=lib.eal:warning -d $SO"
opts="--stats-period=1 --txd=1024 --rxd=1024"
dpdk-testpmd --lcores='(0,1)@1' --file-prefix=${P}rx $COMMON --vdev="eth_vecring0,domain=b,link=l,master=true,run_dir=$W/run${DEVARGS:-}" -- --forward-mode=rxonly $opts > $W/rx.log 2>&1 &
rx=$!
sleep 1
dpdk-testpmd --lcores='(0,1)@0' --file-prefix=${P}tx $COMMON --vdev="eth_vecring0,domain=b,link=l,run_dir=$W/run" -- --forward-mode=txonly $opts --txpkts=64 > $W/tx.log 2>&1 &
tx=$!
while ! grep -q "packet forwarding - ports" $W/tx.log 2>/dev/null; do sleep 0.1; done
sleep 3
perf record -e cpu-clock -F 2000 -o $W/tx.data -p $tx -- sleep 4 2>/dev/null &
perf record -e cpu-clock -F 2000 -o $W/rx.data -p $rx -- sleep 4 2>/dev/null
wait %3 2>/dev/null
sleep 1
kill -TERM $tx $rx; wait $tx $rx 2>/dev/null
rxpps=$(grep -o "Rx-pps: *[0-9]*" $W/rx.log | awk '{print $2}' | sed '1d;$d' | sort -n | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}')
txpps=$(grep -o "Tx-pps: *[0-9]*" $W/tx.log | awk '{print $2}' | sed '1d;$d' | sort -n | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}')
echo "rx_pps=$rxpps tx_pps=$txpps c2c=$($ROOT/target/release/core-latency)"

grep -A3 "Forward statistics for port 0" $W/tx.log | grep TX-packets | head -1
for side in tx rx; do echo "  $side:"; perf report -i $W/$side.data --no-children --sort sym --stdio 2>/dev/null | grep -v "^#" | grep -v "^$" | head -6; done
rm -rf $W; rm -f /dev/hugepages/${P}*
