#!/usr/bin/env python3
"""Turns a results directory into the benchmark report's tables and plots.

    python3 benches/plot.py RESULTS_DIR [--svg-dir DIR] [--readme FILE] [--near-ns NS]

RESULTS_DIR holds what `benches/report.sh` writes:

- raw results (`ring.csv`, `link.csv`, `dpdk.csv`), one row per
  measurement in the columns of `benches/src/results.rs`
  (bench,group,candidate,frame,pair,metric,value,c2c_ns);
- or summaries (`summary.csv`: one row per comparison, columns
  SUMMARY below), e.g. figures transcribed from an earlier report;
- `bench.csv`, the output of `vecring-bench host-container --csv`;
- `meta.txt`, `key: value` lines about the run.

Raw results are reduced to summaries: for every pair (round) in which both
candidates ran, the ratio A/B; its median, minimum and maximum; and the
same median over the pairs whose core-to-core latency (every row of the
pair) was under --near-ns (default 100 ns): the near vCPU placement. The
summaries go to RESULTS_DIR/summary.csv when they were computed.

Prints the Markdown tables; writes one SVG per comparison into --svg-dir
(default docs/benchmarks); with --readme, replaces each block between
`<!-- generated:NAME -->` and `<!-- /generated:NAME -->` in that file with
the table NAME (source, ring, link, latency, dpdk, bench). Python 3
standard library only.
"""

import argparse
import csv
import math
import pathlib
import re
import statistics
import sys
from xml.sax.saxutils import escape

RAW = ["bench", "group", "candidate", "frame", "pair", "metric", "value", "c2c_ns"]
SUMMARY = [
    "bench", "a", "b", "frame", "metric", "a_median", "b_median",
    "ratio_median", "ratio_min", "ratio_max", "pairs", "near_median", "near_pairs", "source",
]
BENCH_CSV = "frame_size"

# The metric each comparison's ratios are taken on.
RATIO_METRIC = {"ring": "fps", "link": "fps", "latency": "one_way_ns", "dpdk": "rx_pps"}


def pairs_to_compare(bench, group, candidates):
    """The (A, B) ratios a group of candidates gives."""
    if ":" in group:
        a, b = group.split(":", 1)
        return [(a, b)]
    base = {"link": "vecring-link", "latency": "cache-line", "dpdk": "net_memif"}.get(bench)
    if base is None or base not in candidates:
        return []
    if bench == "link":
        return [(base, c) for c in candidates if c != base]
    return [(c, base) for c in candidates if c != base]


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def header_of(path):
    with open(path, newline="") as f:
        return f.readline().strip().split(",")


def load(directory):
    paths = sorted(directory.glob("*.csv"))
    any_raw = any(header_of(p) == RAW for p in paths)
    raw, summary, bench = [], [], []
    for path in paths:
        header = header_of(path)
        if header == RAW:
            raw += read_csv(path)
        elif header == SUMMARY:
            if not (any_raw and path.name == "summary.csv"):  # else recomputed
                summary += read_csv(path)
        elif header and header[0] == BENCH_CSV:
            bench += read_csv(path)
        else:
            print(f"plot.py: {path}: unknown columns, skipped", file=sys.stderr)
    meta = {}
    meta_path = directory / "meta.txt"
    if meta_path.exists():
        for line in meta_path.read_text().splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                meta[k.strip()] = v.strip()
    return raw, summary, bench, meta


def summarize(raw, near_ns):
    """Summary rows (dicts of SUMMARY) from raw rows, in order of appearance."""
    cells = {}  # (bench, group, frame, metric) -> pair -> candidate -> (value, c2c)
    order = []
    for r in raw:
        key = (r["bench"], r["group"], int(r["frame"]), r["metric"])
        if key not in cells:
            cells[key] = {}
            order.append(key)
        c2c = float(r["c2c_ns"]) if r["c2c_ns"] else math.inf
        cells[key].setdefault(int(r["pair"]), {})[r["candidate"]] = (float(r["value"]), c2c)
    out = []
    for key in order:
        bench, group, frame, metric = key
        if RATIO_METRIC.get(bench) != metric:
            continue
        pairs = cells[key]
        candidates = []
        for p in sorted(pairs):
            for c in pairs[p]:
                if c not in candidates:
                    candidates.append(c)
        for a, b in pairs_to_compare(bench, group, candidates):
            both = [pairs[p] for p in sorted(pairs) if a in pairs[p] and b in pairs[p]]
            ratios = [x[a][0] / x[b][0] for x in both if x[b][0] > 0]
            near = [x[a][0] / x[b][0] for x in both
                    if x[b][0] > 0 and max(x[a][1], x[b][1]) < near_ns]
            if not ratios:
                continue
            out.append({
                "bench": bench, "a": a, "b": b, "frame": str(frame), "metric": metric,
                "a_median": fmt(statistics.median(x[a][0] for x in both)),
                "b_median": fmt(statistics.median(x[b][0] for x in both)),
                "ratio_median": fmt(statistics.median(ratios)),
                "ratio_min": fmt(min(ratios)), "ratio_max": fmt(max(ratios)),
                "pairs": str(len(ratios)),
                "near_median": fmt(statistics.median(near)) if near else "",
                "near_pairs": str(len(near)),
                "source": "",
            })
    return out


def fmt(x):
    return f"{x:.6g}"


def num(s):
    return float(s) if s not in (None, "") else None


# ---------------------------------------------------------------- tables

def rate(v, metric):
    if v is None:
        return "–"
    if metric == "one_way_ns":
        return f"{v:.0f}"
    m = v / 1e6
    return f"{m:.0f}" if m >= 100 else f"{m:.1f}" if m >= 10 else f"{m:.2f}"


def ratio_text(v, like=None):
    """A ratio: three decimals when it (or `like`, the median it goes
    with) is near 1, where a few percent matter, else two."""
    ref = v if like is None else like
    return f"{v:.3f}" if 0.9 <= ref < 1.1 else f"{v:.2f}"


def ratio_cell(row):
    med = num(row["ratio_median"])
    lo, hi = num(row["ratio_min"]), num(row["ratio_max"])
    text = f"**{ratio_text(med)}**" if med is not None else "–"
    spread = (f"{ratio_text(lo, med)}..{ratio_text(hi, med)}"
              if None not in (med, lo, hi) else "–")
    return text, spread


def near_cell(row):
    med, n = num(row["near_median"]), row.get("near_pairs") or ""
    if med is None:
        return f"– ({n})" if n else "–"
    return f"{ratio_text(med)} ({n})"


UNIT = {"fps": "Mfps", "rx_pps": "M pps", "one_way_ns": "ns"}


def table(rows, bench):
    rows = [r for r in rows if r["bench"] == bench]
    if not rows:
        return "_No figures in this results directory._\n"
    metric = rows[0]["metric"]
    unit = UNIT.get(metric, metric)
    lines = []
    if bench == "latency":
        lines.append("| one way, 64 B | ns | × cache-line ping-pong: median | min..max | pairs | near pairs: median (pairs) |")
        lines.append("|---|---|---|---|---|---|")
        base = None
        for r in rows:
            med, spread = ratio_cell(r)
            lines.append(f"| {r['a']} | {rate(num(r['a_median']), metric)} | {med} | {spread} | {r['pairs']} | {near_cell(r)} |")
            base = base or num(r["b_median"])
        lines.append(f"| cache-line ping-pong (the floor) | {rate(base, metric)} | 1 | | | |")
    else:
        lines.append(f"| frame | A | B | A {unit} | B {unit} | A/B: median | min..max | pairs | near pairs: median (pairs) |")
        lines.append("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            med, spread = ratio_cell(r)
            lines.append(
                f"| {r['frame']} B | {r['a']} | {r['b']} | {rate(num(r['a_median']), metric)} | "
                f"{rate(num(r['b_median']), metric)} | {med} | {spread} | {r['pairs']} | {near_cell(r)} |")
    notes = [f"{r['a']} / {r['b']}" + (f", {r['frame']} B" if bench != "latency" else "") + f": {r['source']}"
             for r in rows if r.get("source")]
    if notes:
        lines.append("")
        lines += [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def bench_table(bench):
    if not bench:
        return "_No `vecring-bench host-container` output in this results directory._\n"
    lines = ["| frame | TX pps | RX pps | Mbit/s | throughput | 0-loss pps | 0.002 % loss pps |",
             "|---|---|---|---|---|---|---|"]

    def m(v):
        return "–" if v in (None, "") else f"{float(v) / 1e6:.1f} M"
    for r in bench:
        thr = r.get("throughput_percent")
        thr = f"{float(thr):.2f} %" if thr else "–"
        mbit = r.get("rx_mbit_s")
        mbit = f"{float(mbit):,.0f}" if mbit else "–"
        lines.append(f"| {r['frame_size']} B | {m(r.get('tx_pps'))} | {m(r.get('rx_pps'))} | {mbit} | {thr} | "
                     f"{m(r.get('zero_loss_pps'))} | {m(r.get('low_loss_pps'))} |")
    return "\n".join(lines) + "\n"


def source_text(directory, meta):
    lines = [f"Figures from `{directory}`" + (":" if meta else ".")]
    if meta:
        lines.append("")
        lines += [f"- {k}: {v}" for k, v in meta.items()]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- SVG

def ratio_chart(path, title, subtitle, rows, refs=(1.0,), dashed=()):
    """A dot-and-whisker chart of ratios on a log2 axis.

    rows: (label, median, lo, hi, near) tuples, or (heading,) for a
    heading line.
    """
    values = [v for r in rows if len(r) > 1 for v in r[1:] if v is not None]
    values += list(refs) + list(dashed)
    lo_exp = math.floor(math.log2(min(values) * 0.95))
    hi_exp = math.ceil(math.log2(max(values) * 1.05))
    if hi_exp - lo_exp < 2:
        lo_exp, hi_exp = lo_exp - 1, hi_exp + 1
    left, width, right = 330, 420, 70
    top, row_h = 58, 24
    height = top + row_h * len(rows) + 58
    total_w = left + width + right

    def x(v):
        return left + (math.log2(v) - lo_exp) / (hi_exp - lo_exp) * width

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{height}" '
           f'viewBox="0 0 {total_w} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{total_w}" height="{height}" fill="white"/>',
           f'<text x="10" y="20" font-size="15" font-weight="bold">{escape(title)}</text>',
           f'<text x="10" y="38" fill="#444">{escape(subtitle)}</text>']
    axis_y = top + row_h * len(rows) + 4
    for e in range(lo_exp, hi_exp + 1):
        v = 2.0 ** e
        out.append(f'<line x1="{x(v):.1f}" y1="{top - 8}" x2="{x(v):.1f}" y2="{axis_y}" stroke="#e4e4e4"/>')
        label = f"{v:g}" if v >= 1 else f"1/{int(round(1 / v))}"
        out.append(f'<text x="{x(v):.1f}" y="{axis_y + 16}" text-anchor="middle" fill="#444">{label}</text>')
    for v in refs:
        out.append(f'<line x1="{x(v):.1f}" y1="{top - 8}" x2="{x(v):.1f}" y2="{axis_y}" stroke="#555" stroke-width="1.5"/>')
    for v in dashed:
        out.append(f'<line x1="{x(v):.1f}" y1="{top - 8}" x2="{x(v):.1f}" y2="{axis_y}" stroke="#c44" stroke-dasharray="5,4"/>')
    for i, r in enumerate(rows):
        y = top + row_h * i + row_h / 2
        if len(r) == 1:
            out.append(f'<text x="10" y="{y + 4:.1f}" font-weight="bold">{escape(r[0])}</text>')
            continue
        label, med, lo, hi, near = r
        out.append(f'<text x="{left - 10}" y="{y + 4:.1f}" text-anchor="end">{escape(label)}</text>')
        if lo is not None and hi is not None:
            out.append(f'<line x1="{x(lo):.1f}" y1="{y:.1f}" x2="{x(hi):.1f}" y2="{y:.1f}" stroke="#1f5f9f" stroke-width="1.5"/>')
            for v in (lo, hi):
                out.append(f'<line x1="{x(v):.1f}" y1="{y - 5:.1f}" x2="{x(v):.1f}" y2="{y + 5:.1f}" stroke="#1f5f9f" stroke-width="1.5"/>')
        if near is not None:
            out.append(f'<rect x="{x(near) - 5:.1f}" y="{y - 5:.1f}" width="10" height="10" fill="none" '
                       f'stroke="#d07000" stroke-width="1.5" transform="rotate(45 {x(near):.1f} {y:.1f})"/>')
        if med is not None:
            out.append(f'<circle cx="{x(med):.1f}" cy="{y:.1f}" r="4.5" fill="#1f5f9f"/>')
            out.append(f'<text x="{left + width + 8}" y="{y + 4:.1f}">{ratio_text(med)}</text>')
    ly = axis_y + 38
    out.append(f'<circle cx="16" cy="{ly - 4}" r="4.5" fill="#1f5f9f"/>')
    out.append(f'<text x="26" y="{ly}">median of the per-pair ratios, whisker min..max</text>')
    out.append(f'<rect x="{331}" y="{ly - 9}" width="10" height="10" fill="none" stroke="#d07000" '
               f'stroke-width="1.5" transform="rotate(45 336 {ly - 4})"/>')
    out.append(f'<text x="348" y="{ly}">median over near pairs only</text>')
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n")


def chart_rows(rows, bench, label):
    out, last_frame = [], None
    for r in rows:
        if r["bench"] != bench:
            continue
        if bench != "latency" and r["frame"] != last_frame:
            out.append((f"{r['frame']}-byte frames",))
            last_frame = r["frame"]
        out.append((label(r), num(r["ratio_median"]), num(r["ratio_min"]), num(r["ratio_max"]),
                    num(r["near_median"])))
    return out


CHARTS = [
    ("ring", "ring.svg", "The ring between two pinned threads (one process)",
     "frames per second, A / B, same frames, same CPUs, alternated; right of 1: A is faster",
     lambda r: f"{r['a']} / {r['b']}", (1.0,), ()),
    ("link", "link.svg", "The link between two processes",
     "frames per second, vecring link / peer, alternated; right of 1: the link is faster",
     lambda r: f"link / {r['b']}", (1.0,), ()),
    ("latency", "latency.svg", "One-way latency, 64-byte ping-pong",
     "× the cache-line ping-pong on the same CPUs (the floor); lower is better; dashed: the 2× target",
     lambda r: r["a"], (1.0,), (2.0,)),
    ("dpdk", "dpdk.svg", "eth_vecring against DPDK's net_memif (dpdk-testpmd)",
     "receiver's packets per second, eth_vecring / net_memif, alternated; right of 1: eth_vecring is faster",
     lambda r: f"{r['a']} / {r['b']}", (1.0,), ()),
]


def replace_blocks(readme, blocks):
    text = readme.read_text()
    for name, body in blocks.items():
        pattern = re.compile(rf"(<!-- generated:{name} -->\n).*?(<!-- /generated:{name} -->)", re.S)
        if not pattern.search(text):
            print(f"plot.py: {readme}: no block {name}", file=sys.stderr)
            continue
        text = pattern.sub(lambda m: m.group(1) + body + m.group(2), text)
    readme.write_text(text)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("results", type=pathlib.Path)
    p.add_argument("--svg-dir", type=pathlib.Path, default=pathlib.Path("docs/benchmarks"))
    p.add_argument("--readme", type=pathlib.Path)
    p.add_argument("--near-ns", type=float, default=100.0)
    args = p.parse_args()

    raw, summary, bench, meta = load(args.results)
    if raw:
        computed = summarize(raw, args.near_ns)
        with open(args.results / "summary.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=SUMMARY)
            w.writeheader()
            w.writerows(computed)
        summary = computed + summary
    if not summary and not bench:
        sys.exit(f"plot.py: no results in {args.results}")

    blocks = {"source": source_text(args.results, meta)}
    for name in ("ring", "link", "latency", "dpdk"):
        blocks[name] = table(summary, name)
    blocks["bench"] = bench_table(bench)
    for name, body in blocks.items():
        print(f"## {name}\n\n{body}")

    args.svg_dir.mkdir(parents=True, exist_ok=True)
    for bench_name, file, title, subtitle, label, refs, dashed in CHARTS:
        rows = chart_rows(summary, bench_name, label)
        if any(len(r) > 1 for r in rows):
            ratio_chart(args.svg_dir / file, title, subtitle, rows, refs, dashed)
            print(f"plot.py: wrote {args.svg_dir / file}", file=sys.stderr)
    if args.readme:
        replace_blocks(args.readme, blocks)
        print(f"plot.py: updated {args.readme}", file=sys.stderr)


if __name__ == "__main__":
    main()
