#!/usr/bin/env python3
"""Prints the `ring` criterion suite's last results as a Markdown table.

Reads target/criterion/frames_<LEN>/<candidate>/<batch>/new/{estimates,benchmark}.json
(criterion's own files) and prints, per frame length, batch and candidate,
the frames/s and GB/s (10^9 bytes of frame payload per second) of the
median sample (robust against the consumer thread being descheduled).

    python3 benches/criterion-table.py [TARGET_DIR]
"""

import json
import pathlib
import sys

SIZES = [64, 256, 1514, 9000]
ORDER = ["vecring-copy", "vecring-zc", "vecring-zc-hold", "rtrb-copy", "rtrb-zc", "rtrb-bytes-copy", "rtrb-bytes-zc", "memcpy"]


def main() -> None:
    target = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target")
    root = target / "criterion"
    print("| frame B | batch | candidate | Mframes/s | GB/s |")
    print("|---|---|---|---|---|")
    for size in SIZES:
        group = root / f"frames_{size}"
        if not group.is_dir():
            continue
        rows = []
        for bench in group.glob("*/*/new/benchmark.json"):
            meta = json.loads(bench.read_text())
            est = json.loads((bench.parent / "estimates.json").read_text())
            frames = meta["throughput"]["Elements"]
            ns = est["median"]["point_estimate"]
            fps = frames / (ns * 1e-9)
            name, batch = meta["function_id"], meta["value_str"]
            rows.append((batch, ORDER.index(name) if name in ORDER else 99, name, fps))
        for batch, _, name, fps in sorted(rows):
            print(f"| {size} | {batch} | {name} | {fps / 1e6:.2f} | {fps * size / 1e9:.2f} |")


if __name__ == "__main__":
    main()
