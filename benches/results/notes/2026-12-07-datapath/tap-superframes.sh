#!/usr/bin/env bash
# One `vecring tap --offload` pair between two namespaces, iperf3 TCP with
# one stream for 5 s; prints the super-frames the client's interface sent
# (count, mean size) and the ACK frames it got, from `ip -s link`.
# TOOL= another build, EXTRA= more tap options (e.g. "--mtu 9192").
set -e
TOOL=${TOOL:-$(cd "$(dirname "$0")/../../../.." && pwd)/target/release/vecring}
RUN=$(mktemp -d /run/tapone.XXXX)
for n in ta tb; do ip netns del $n 2>/dev/null || true; ip netns add $n; ip -n $n link set lo up; done
ip netns exec ta $TOOL -q tap --role master --domain d1 --link l1 --run-dir $RUN --ifname eth0 --offload --poll-us 0 $EXTRA 2>/tmp/tapone-a.log & A=$!
ip netns exec tb $TOOL -q tap --role slave --domain d1 --link l1 --run-dir $RUN --ifname eth0 --offload --poll-us 0 $EXTRA 2>/tmp/tapone-b.log & B=$!
sleep 2
ip -n ta addr add 10.98.0.1/24 dev eth0; ip -n tb addr add 10.98.0.2/24 dev eth0
ip -n ta link set eth0 up; ip -n tb link set eth0 up
sleep 1
ip netns exec tb iperf3 -s -1 -D; sleep 0.5
s0=$(ip -n ta -s -j link show eth0 | python3 -c 'import json,sys; d=json.load(sys.stdin)[0]["stats64"]; print(d["tx"]["packets"], d["tx"]["bytes"], d["rx"]["packets"])')
ip netns exec ta iperf3 -c 10.98.0.2 -t 5 -f g | grep receiver
s1=$(ip -n ta -s -j link show eth0 | python3 -c 'import json,sys; d=json.load(sys.stdin)[0]["stats64"]; print(d["tx"]["packets"], d["tx"]["bytes"], d["rx"]["packets"])')
python3 -c "
a=list(map(int,'$s0'.split())); b=list(map(int,'$s1'.split()))
p=b[0]-a[0]; by=b[1]-a[1]; print('data super-frames', p, 'avg bytes', by//max(p,1), 'acks', b[2]-a[2])"
kill $A $B; wait $A $B 2>/dev/null || true
for n in ta tb; do ip netns del $n; done; rm -rf $RUN
