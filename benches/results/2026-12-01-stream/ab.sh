#!/bin/bash
# ad-hoc A/B of PMD builds: testpmd txonly CPU0 -> rxonly CPU1, alternating
# usage: ab.sh PAIRS SIZE name=/path/so name=/path/so ...
set -u
ROOT=/work/main
PAIRS=$1; SIZE=$2; shift 2
VARIANTS=("$@")
. $ROOT/benches/periods.sh
run() { # so devargs_extra
  local SO=$1 W P
  W=$(mktemp -d /run/vr-ab.XXXX); P=vab$$x$RANDOM
  local COMMON="--no-pci --log-level=lib.eal:warning -d $SO"
  local opts="--stats-period=1 --txd=1024 --rxd=1024"
  dpdk-testpmd --lcores='(0,1)@1' --file-prefix=${P}rx $COMMON --vdev="eth_vecring0,domain=b,link=l,master=true,run_dir=$W/run${DEVARGS:-}" -- --forward-mode=rxonly $opts > $W/rx.log 2>&1 &
  local rx=$!
  sleep 1
  dpdk-testpmd --lcores='(0,1)@0' --file-prefix=${P}tx $COMMON --vdev="eth_vecring0,domain=b,link=l,run_dir=$W/run" -- --forward-mode=txonly $opts --txpkts=$SIZE > $W/tx.log 2>&1 &
  local tx=$!
  sleep ${SECS:-9}
  kill -TERM $tx $rx; wait $tx $rx 2>/dev/null
  local r t
  r=$(median_periods Rx-pps $W/rx.log); t=$(median_periods Tx-pps $W/tx.log)
  local per=$(grep -o "Rx-pps: *[0-9]*" $W/rx.log | awk '{printf "%.1f ", $2/1e6}')
  echo "rx=$r tx=$t periods=[$per]"
  rm -rf $W; rm -f /dev/hugepages/${P}*
}
for ((i=0;i<PAIRS;i++)); do
  order=("${VARIANTS[@]}")
  if ((i%2)); then order=(); for ((j=${#VARIANTS[@]}-1;j>=0;j--)); do order+=("${VARIANTS[j]}"); done; fi
  for v in "${order[@]}"; do
    name=${v%%=*}; so=${v#*=}
    c1=$($ROOT/target/release/core-latency)
    out=$(run $so)
    c2=$($ROOT/target/release/core-latency)
    echo "pair=$i $name c2c=$c1/$c2 $out"
  done
done
