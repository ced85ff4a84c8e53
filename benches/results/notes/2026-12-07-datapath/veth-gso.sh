#!/usr/bin/env bash
# iperf3 TCP, one stream, 5 s, through a veth pair between two namespaces
# with gso_max_size 65536 and 9000 alternately: what super-frames of a
# jumbo frame's size cost the kernel.
set -e
ip netns del vga 2>/dev/null || true; ip netns del vgb 2>/dev/null || true
ip netns add vga; ip netns add vgb
ip link add va type veth peer name vb
ip link set va netns vga; ip link set vb netns vgb
ip -n vga addr add 10.97.0.1/24 dev va; ip -n vgb addr add 10.97.0.2/24 dev vb
ip -n vga link set va up; ip -n vgb link set vb up; ip -n vga link set lo up; ip -n vgb link set lo up
ip netns exec vgb iperf3 -s -D -1 >/dev/null
sleep 0.5
for g in 65536 9000 65536 9000; do
  ip -n vga link set va gso_max_size $g; ip -n vgb link set vb gso_max_size $g
  ip netns exec vgb iperf3 -s -D -1 >/dev/null 2>&1 || true; sleep 0.3
  r=$(ip netns exec vga iperf3 -c 10.97.0.2 -t 5 -J | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9,2))')
  echo "gso_max_size $g: $r Gbit/s"
done
ip netns del vga; ip netns del vgb
