#!/usr/bin/env python3
"""Instructions per packet of a testpmd lcore, split by the library they
ran in, from one callgrind dump (benches/pmd-ir-per-packet.sh).

Works on stripped binaries (Debian's testpmd and its drivers): it needs no
function names, only the objects. Packets are the calls from testpmd into
the driver's object (one burst a call: testpmd's rte_eth_tx_burst or
rte_eth_rx_burst is inline, so every call from testpmd into the driver is
a burst) times the packets a burst moves.

    callgrind-objects.py DUMP DRIVER_OBJECT_SUBSTRING PACKETS_PER_BURST

Prints the driver's bursts, the instructions per packet of each object
(self cost), the driver's burst inclusive, and the total.
"""
import re
import sys
from collections import defaultdict


def main():
    dump, driver, per_burst = sys.argv[1], sys.argv[2], int(sys.argv[3])
    names = {}  # compressed id -> object name

    def obj(value):
        m = re.match(r"\((\d+)\)(?:\s+(.*))?$", value)
        if not m:
            return value
        if m.group(2):
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), "?")

    self_cost = defaultdict(int)
    bursts, burst_incl = 0, 0
    ob, cob, in_call = "?", None, None
    with open(dump) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            if line.startswith("ob="):
                ob = obj(line[3:])
            elif line.startswith("cob="):
                cob = obj(line[4:])
            elif line.startswith("calls="):
                in_call = int(line[6:].split()[0])
            elif line[0] in "0123456789+-*":
                parts = line.split()
                cost = int(parts[1]) if len(parts) > 1 else 0
                if in_call is not None:
                    callee = cob if cob is not None else ob
                    if "dpdk-testpmd" in ob and driver in callee:
                        bursts += in_call
                        burst_incl += cost
                    in_call, cob = None, None
                else:
                    self_cost[ob] += cost
    if bursts == 0:
        sys.exit(f"no call from testpmd into an object matching {driver!r}")
    packets = bursts * per_burst
    total = sum(self_cost.values())
    print(f"bursts {bursts}, packets {packets} ({per_burst} a burst)")
    for name, cost in sorted(self_cost.items(), key=lambda kv: -kv[1]):
        if cost / packets >= 0.05:
            short = name.rsplit("/", 1)[-1]
            print(f"  {cost / packets:7.1f}  {short}")
    print(f"  {burst_incl / packets:7.1f}  the driver's burst, inclusive")
    print(f"  {total / packets:7.1f}  all, per packet")


main()
