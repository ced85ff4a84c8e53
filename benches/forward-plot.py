#!/usr/bin/env python3
"""Plots the forwarding benchmark: rate and latency by frame size, per port.

    python3 benches/forward-plot.py CSV... [--out-dir DIR] [--title-suffix TEXT]
                                    [--placement all|near|far]

Input: CSV files written by `vecring-bench host-container --forward --csv`, columns HEADER
below, a row per port (link, eth_vecring, net_memif), direction (both,
to-ctr, from-ctr), frame size and round. An empty cell means "not
measured". c2c_ns is the one-way core-to-core latency of the row's vCPU
placement: under NEAR_NS near, else far; --placement near or far keeps only
those rows (default all: every row). The rows of one port, direction and
size (its rounds, from one file or several) become a median, shown as the
point, and a min..max whisker.

Output, for each direction present, in --out-dir (default docs/benchmarks):

- forward-rate-DIRECTION.svg: frames/s on a log axis by frame size, a
  colour per port; solid line and dots: the zero-loss rate
  (zero_loss_pps); dashed line and hollow dots: the unthrottled delivered
  rate (delivered_pps).
- forward-latency-DIRECTION.svg: latency at the zero-loss rate (lat100_*),
  per size a bar per port from p50 to p99.9 with marks at p50, p99 and
  p99.9 (medians over rounds), ticks at the lowest min and highest max, and
  beside the bar a whisker of p99's min..max over rounds. Skipped, with a
  note on stderr, when no row of the direction has latency.

On stdout, a Markdown table: per direction, frame and port, the zero-loss
rate (median, min..max), the delivered rate and p99 at the zero-loss rate
(medians), and for the other ports the ratios of their medians to
net_memif's. Bad input (a missing file, another header, no rows) exits with
status 1 and a message. --title-suffix is appended to every title after a
space. Python 3 standard library only.
"""

import argparse
import csv
import math
import os
import pathlib
import statistics
import sys
from xml.sax.saxutils import escape

PROG = "forward-plot.py"
LEVEL_FIELDS = ["rate_pps", "min_ns", "p50_ns", "p99_ns", "p999_ns", "max_ns"]
HEADER = ("port,direction,frame_size,round,c2c_ns,gen_tx_pps,delivered_pps,container_rx_pps,"
          "container_tx_pps,throughput_percent,lost,reordered,duplicated,bad,zero_loss_pps,"
          "low_loss_pps").split(",") + [f"lat{lv}_{f}" for lv in (50, 90, 100) for f in LEVEL_FIELDS]
TEXT_COLUMNS = ("port", "direction")  # the first columns; the others are numbers
NEAR_NS = 100  # as NEAR_NS in benches/src/bin/vecring-bench/host_container/forward/table.rs
BASE = "net_memif"  # the port the others are compared with
PORTS = ["link", "eth_vecring", "net_memif"]  # order in plots and tables
COLOURS = {"link": "#1f5f9f", "eth_vecring": "#d07000", "net_memif": "#3a8a3a"}
# direction -> (what runs, what its latency is)
DIRECTIONS = {"both": ("both ways, container forwards", "round-trip"),
              "to-ctr": ("host to container", "one-way"),
              "from-ctr": ("container to host", "one-way")}


def fail(message):
    print(f"{PROG}: {message}", file=sys.stderr)
    sys.exit(1)


def load(path):
    """The rows of one CSV file: dicts of HEADER, numbers as floats, empty cells None."""
    rows = []
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f)
            header = [c.strip() for c in next(reader, [])]
            if header != HEADER:
                missing = [c for c in HEADER if c not in header]
                unknown = [c for c in header if c not in HEADER]
                why = ("empty file" if not header else
                       "; ".join(f"{what} {', '.join(cols[:3])}{' ...' if len(cols) > 3 else ''}"
                                 for what, cols in (("missing", missing), ("unknown", unknown)) if cols)
                       or "columns in another order")
                fail(f"{path}: not `vecring-bench host-container --forward --csv` output: {why}")
            for cells in reader:
                where, cells = f"{path}:{reader.line_num}", [c.strip() for c in cells]
                if not any(cells):
                    continue
                if len(cells) != len(HEADER):
                    fail(f"{where}: {len(cells)} cells, expected {len(HEADER)}")
                row = dict(zip(HEADER, cells))
                for name in HEADER[len(TEXT_COLUMNS):]:
                    row[name] = number(row[name], where, name)
                for name in ("port", "direction", "frame_size", "round"):
                    if row[name] in (None, ""):
                        fail(f"{where}: {name} is empty")
                rows.append(row)
    except OSError as e:
        fail(f"{path}: {e.strerror or e}")
    except (UnicodeDecodeError, csv.Error) as e:
        fail(f"{path}: not a CSV text file ({e})")
    return rows


def number(cell, where, name):
    try:
        v = float(cell) if cell else None
    except ValueError:
        v = math.nan
    if v is not None and not math.isfinite(v):
        fail(f"{where}: {name} is {cell!r}, not a number")
    return v


def spread(rows, column):
    """(median, min, max, n) of a column over rows, None if no row has it."""
    vals = [r[column] for r in rows if r[column] is not None]
    return (statistics.median(vals), min(vals), max(vals), len(vals)) if vals else None


def ordered(seen, known):
    seen = list(dict.fromkeys(seen))
    return [v for v in known if v in seen] + [v for v in seen if v not in known]


# ---------------------------------------------------------------- SVG

def unit_label(v, units):
    div, unit = next((d, u) for d, u in units if v >= d * 0.999 or d == 1)
    return f"{round(v / div, 3):g}{unit}"


RATE_UNITS = ((1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""))
NS_UNITS = ((1e9, " s"), (1e6, " ms"), (1e3, " µs"), (1, " ns"))


def nice(v, up):
    """The 1-2-5 step next to v, above it if up, else below."""
    e = 10.0 ** math.floor(math.log10(v))
    steps = [m * e for m in (1, 2, 5, 10)]
    return min(s for s in steps if s >= v * 0.9999) if up else max(s for s in steps if s <= v * 1.0001)


class LogAxis:
    """A vertical log10 axis over the values, its ends on 1-2-5 steps (decades when it spans more than 3)."""

    def __init__(self, values, top, height):
        vals = [v for v in values if v is not None and v > 0] or [1.0, 10.0]
        self.lo, self.hi = nice(min(vals) * 0.9, False), nice(max(vals) * 1.1, True)
        self.decades = math.log10(self.hi / self.lo) > 3
        if self.decades:
            self.lo, self.hi = (10.0 ** f(math.log10(v)) for f, v in ((math.floor, self.lo), (math.ceil, self.hi)))
        self.hi = max(self.hi, self.lo * 10)
        self.top, self.height = top, height

    def y(self, v):
        v = min(max(v, self.lo), self.hi)
        return self.top + self.height * (1 - math.log10(v / self.lo) / math.log10(self.hi / self.lo))

    def grid(self, x0, x1, units):
        out = []
        for e in range(round(math.log10(self.lo)) - 1, round(math.log10(self.hi)) + 1):
            for m in (1,) if self.decades else (1, 2, 5):
                v = m * 10.0 ** e
                if not self.lo * 0.999 <= v <= self.hi * 1.001:
                    continue
                y = self.y(v)
                line, text = ("#e4e4e4", 'fill="#444"') if m == 1 else ("#f0f0f0", 'fill="#888" font-size="10"')
                out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x1:.1f}" y2="{y:.1f}" stroke="{line}"/>')
                out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end" {text}>'
                           f'{escape(unit_label(v, units))}</text>')
        return out


def whisker(x, y0, y1, c, cap=3, width=1.2):
    return (f'<line x1="{x:.1f}" y1="{y0:.1f}" x2="{x:.1f}" y2="{y1:.1f}" stroke="{c}" stroke-width="{width}"/>'
            + "".join(f'<line x1="{x - cap:.1f}" y1="{v:.1f}" x2="{x + cap:.1f}" y2="{v:.1f}" stroke="{c}" '
                      f'stroke-width="{width}"/>' for v in (y0, y1)))


def dot(x, y, c, hollow):
    fill = "white" if hollow else c
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{fill}" stroke="{c}" stroke-width="1.5"/>'


def hline(x0, x1, y, c, width=1.0, extra=""):
    return f'<line x1="{x0:.1f}" y1="{y:.1f}" x2="{x1:.1f}" y2="{y:.1f}" stroke="{c}" stroke-width="{width}"{extra}/>'


class Chart:
    """Title, subtitle, a log y axis, frame sizes as categories along x, and a legend of the ports
    under it; the caller draws the data, then end() adds a row of keys (draw(x, y), label)."""
    LEFT, RIGHT, TOP, PLOT_H = 84, 30, 62, 330

    def __init__(self, title, subtitle, sizes, ports, values, units, y_title, min_band, keys):
        n = len(sizes)
        need = max(8.8 * len(title), 6.6 * len(subtitle), 20 + sum(54 + 6.6 * len(k[1]) for k in keys))
        self.band = max(min_band, 600 / n, (need - self.LEFT - self.RIGHT) / n)
        right = self.LEFT + self.band * n
        self.width, self.height = round(right + self.RIGHT), self.TOP + self.PLOT_H + 100
        self.axis = LogAxis(values, self.TOP, self.PLOT_H)
        self.base_y = base = self.TOP + self.PLOT_H
        self.out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
                    f'viewBox="0 0 {self.width} {self.height}" font-family="sans-serif" font-size="12">',
                    f'<rect width="{self.width}" height="{self.height}" fill="white"/>',
                    f'<text x="10" y="20" font-size="15" font-weight="bold">{escape(title)}</text>',
                    f'<text x="10" y="38" fill="#444">{escape(subtitle)}</text>']
        self.out += self.axis.grid(self.LEFT, right, units)
        for i, size in enumerate(sizes):
            self.out.append(f'<text x="{self.x(i):.1f}" y="{base + 18}" text-anchor="middle" fill="#444">{size} B</text>')
        self.out.append(f'<text x="{(self.LEFT + right) / 2:.1f}" y="{base + 36}" text-anchor="middle" '
                        f'fill="#444">frame size</text>')
        ty = self.TOP + self.PLOT_H / 2
        self.out.append(f'<text x="16" y="{ty:.1f}" text-anchor="middle" fill="#444" '
                        f'transform="rotate(-90 16 {ty:.1f})">{escape(y_title)}</text>')
        self.legend(base + 62, [((lambda c: lambda x, y: hline(x, x + 24, y, c, 6))(COLOURS.get(p, "#777")), p)
                                for p in ports])
        self.keys = keys

    def x(self, i, j=0.0):
        return self.LEFT + self.band * (i + 0.5) + j

    def legend(self, y, items):
        x = 20
        for draw, label in items:
            self.out.append(draw(x, y))
            self.out.append(f'<text x="{x + 30}" y="{y + 4}">{escape(label)}</text>')
            x += 54 + 6.6 * len(label)

    def end(self):
        self.legend(self.base_y + 84, self.keys)
        return "\n".join(self.out + ["</svg>"]) + "\n"


def rate_chart(title, subtitle, sizes, ports, cells):
    """cells: (size, port) -> rows. Per port, the zero-loss rate (solid) and the delivered one (dashed)."""
    series = [("zero_loss_pps", False), ("delivered_pps", True)]
    spreads = {(s, p, col): spread(cells.get((s, p), []), col) for s in sizes for p in ports for col, _ in series}
    g, dash = "#555", ' stroke-dasharray="6,4"'
    keys = [(lambda x, y: hline(x, x + 24, y, g, 1.8) + dot(x + 12, y, g, False), "zero-loss rate"),
            (lambda x, y: hline(x, x + 24, y, g, 1.8, dash) + dot(x + 12, y, g, True), "delivered, unthrottled"),
            (lambda x, y: whisker(x + 12, y - 7, y + 7, g), "min..max over rounds")]
    ch = Chart(title, subtitle, sizes, ports, [v for sp in spreads.values() if sp for v in sp[:3]],
               RATE_UNITS, "frames per second", 96, keys)
    gap = min(12, ch.band / (len(ports) + 3))
    for j, port in enumerate(ports):
        c = COLOURS.get(port, "#777")
        for col, hollow in series:
            dx = (j - (len(ports) - 1) / 2) * gap + (2.5 if hollow else -2.5)
            pts = [(i, spreads[(s, port, col)]) for i, s in enumerate(sizes) if spreads[(s, port, col)]]
            for (i0, a), (i1, b) in zip(pts, pts[1:]):
                if i1 == i0 + 1:
                    ch.out.append(f'<line x1="{ch.x(i0, dx):.1f}" y1="{ch.axis.y(a[0]):.1f}" x2="{ch.x(i1, dx):.1f}" '
                                  f'y2="{ch.axis.y(b[0]):.1f}" stroke="{c}" stroke-width="1.8"{dash if hollow else ""}/>')
            for i, (med, lo, hi, n) in pts:
                if n > 1:
                    ch.out.append(whisker(ch.x(i, dx), ch.axis.y(lo), ch.axis.y(hi), c))
                ch.out.append(dot(ch.x(i, dx), ch.axis.y(med), c, hollow))
    return ch.end()


LAT = {f: f"lat100_{f}_ns" for f in ("min", "p50", "p99", "p999", "max")}


def latency_chart(title, subtitle, sizes, ports, cells):
    """Percentile bars per size and port; cells as for rate_chart."""
    stats = {k: {f: spread(rows, col) for f, col in LAT.items()} for k, rows in cells.items()}
    g, slot = "#555", 34

    def key(x, y):
        return (f'<line x1="{x + 8}" y1="{y - 10}" x2="{x + 8}" y2="{y + 10}" stroke="{g}" stroke-dasharray="2,2"/>'
                f'<rect x="{x + 3}" y="{y - 6}" width="10" height="10" fill="{g}" fill-opacity="0.3" stroke="{g}"/>'
                + hline(x + 5, x + 11, y - 10, g) + hline(x + 5, x + 11, y + 10, g)
                + hline(x + 1, x + 15, y + 4, g, 3) + hline(x + 1, x + 15, y - 3, g, 1.8))
    keys = [(key, "bar from p50 (thick) to p99.9, mark at p99; dotted to min and max"),
            (lambda x, y: whisker(x + 12, y - 6, y + 6, g, cap=2, width=1), "p99 min..max over rounds")]
    ch = Chart(title, subtitle, sizes, ports, [v for st in stats.values() for sp in st.values() if sp for v in sp[:3]],
               NS_UNITS, "latency at the zero-loss rate", slot * len(ports) + 30, keys)
    ax = ch.axis
    for i, size in enumerate(sizes):
        for j, port in enumerate(ports):
            st, cx, c = stats.get((size, port)), ch.x(i, (j - (len(ports) - 1) / 2) * slot), COLOURS.get(port, "#777")
            if st is None:
                continue
            med = {f: sp[0] for f, sp in st.items() if sp}
            if not med:
                ch.out.append(f'<text x="{cx:.1f}" y="{ch.base_y - 6}" text-anchor="middle" font-size="10" '
                              f'fill="{c}">n/a</text>')
                continue
            bar = [ax.y(med[f]) for f in ("p50", "p99", "p999") if f in med]
            for f, pick, end in (("min", 1, max), ("max", 2, min)):
                if st[f]:
                    y = ax.y(st[f][pick])
                    ch.out.append(hline(cx - 4, cx + 4, y, c))
                    ch.out.append(f'<line x1="{cx:.1f}" y1="{y:.1f}" x2="{cx:.1f}" y2="{end(bar or [y]):.1f}" '
                                  f'stroke="{c}" stroke-dasharray="2,2"/>')
            if bar:
                ch.out.append(f'<rect x="{cx - 7:.1f}" y="{min(bar):.1f}" width="14" '
                              f'height="{max(max(bar) - min(bar), 1):.1f}" fill="{c}" fill-opacity="0.3" stroke="{c}"/>')
            for f, w in (("p50", 3), ("p99", 1.8), ("p999", 1)):
                if f in med:
                    ch.out.append(hline(cx - 9, cx + 9, ax.y(med[f]), c, w))
            if st["p99"] and st["p99"][3] > 1:
                ch.out.append(whisker(cx + 13, ax.y(st["p99"][1]), ax.y(st["p99"][2]), c, cap=2, width=1))
    return ch.end()


# ---------------------------------------------------------------- table

def mpps(v):
    return "–" if v is None else f"{v / 1e6:.{0 if v >= 1e8 else 1 if v >= 1e7 else 2}f} M"


def ratio_text(v):
    return f"{v:.3f}" if 0.9 <= v < 1.1 else f"{v:.2f}"


def table(cells, directions, sizes_of, ports, note):
    med = lambda rows, col: (spread(rows, col) or (None,))[0]  # noqa: E731
    lines = [f"_{note}_", "",
             "| direction | frame | port | zero-loss pps: median (min..max) | delivered pps | "
             f"p99 at zero-loss (ns) | zero-loss / {BASE} | p99 / {BASE} |",
             "|---|---|---|---|---|---|---|---|"]
    for d in directions:
        for size in sizes_of[d]:
            base = cells.get((d, size, BASE))
            base_z = med(base, "zero_loss_pps") if base else None
            base_p = med(base, LAT["p99"]) if base else None
            for port in ports:
                rows = cells.get((d, size, port))
                if not rows:
                    continue
                z, dl, p99 = spread(rows, "zero_loss_pps"), med(rows, "delivered_pps"), med(rows, LAT["p99"])
                zero = "–" if not z else mpps(z[0]) if z[3] == 1 else f"{mpps(z[0])} ({mpps(z[1])[:-2]}..{mpps(z[2])})"
                ratios = ["", ""] if port == BASE else [
                    ratio_text(a / b) if a is not None and b else "–"
                    for a, b in ((z and z[0], base_z), (p99, base_p))]
                lines.append(f"| {d} | {size} B | {port} | {zero} | {mpps(dl)} | "
                             f"{'–' if p99 is None else f'{p99:.0f}'} | {ratios[0]} | {ratios[1]} |")
    return "\n".join(lines) + "\n"


def rounds(counts):
    """'3 rounds', '2–3 rounds': the rows behind each point."""
    counts = sorted(set(counts)) or [0]
    n = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    return n + (" round" if counts == [1] else " rounds")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("csv", nargs="+", type=pathlib.Path, help="`vecring-bench host-container --forward --csv` output")
    p.add_argument("--out-dir", type=pathlib.Path, default=pathlib.Path("docs/benchmarks"))
    p.add_argument("--title-suffix", default="")
    p.add_argument("--placement", choices=["all", "near", "far"], default="all")
    args = p.parse_args()

    rows = [r for path in args.csv for r in load(path)]
    if not rows:
        fail(f"no rows in {', '.join(map(str, args.csv))}")
    near = sum(r["c2c_ns"] is not None and r["c2c_ns"] < NEAR_NS for r in rows)
    far = sum(r["c2c_ns"] is not None and r["c2c_ns"] >= NEAR_NS for r in rows)
    if args.placement == "all":
        placement = f"all placements ({near} near, {far} far rows)"
    else:
        want_near = args.placement == "near"
        rows = [r for r in rows if r["c2c_ns"] is not None and (r["c2c_ns"] < NEAR_NS) == want_near]
        placement = (f"near placements only (c2c < {NEAR_NS} ns)" if want_near
                     else f"far placements only (c2c ≥ {NEAR_NS} ns)")
        if not rows:
            fail(f"no rows with a {args.placement} placement ({near} near, {far} far rows in all)")

    cells = {}  # (direction, size, port) -> rows
    for r in rows:
        cells.setdefault((r["direction"], int(r["frame_size"]), r["port"]), []).append(r)
    directions = ordered((k[0] for k in cells), list(DIRECTIONS))
    ports = ordered((k[2] for k in cells), PORTS)
    sizes_of = {d: sorted({k[1] for k in cells if k[0] == d}) for d in directions}
    suffix = f" {args.title_suffix}" if args.title_suffix else ""
    try:
        args.out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        fail(f"{args.out_dir}: {e.strerror or e}")

    for d in directions:
        what, kind = DIRECTIONS.get(d, (d, ""))
        sizes = sizes_of[d]
        dports = [p for p in ports if any((d, s, p) in cells for s in sizes)]
        sub = {(s, p): cells[(d, s, p)] for s in sizes for p in dports if (d, s, p) in cells}
        charts = [(f"forward-rate-{d}.svg", rate_chart(
            f"Forwarding rate by frame size ({what}){suffix}",
            f"medians over {rounds(len(v) for v in sub.values())}, whiskers min..max; {placement}", sizes, dports, sub))]
        lat_sizes = [s for s in sizes if any(r[LAT["p50"]] is not None or r[LAT["p99"]] is not None
                                             for p in dports for r in sub.get((s, p), []))]
        lat_rounds = rounds(n for n in (sum(r[LAT["p99"]] is not None for r in v) for v in sub.values()) if n)
        if lat_sizes:
            charts.append((f"forward-latency-{d}.svg", latency_chart(
                f"{kind.capitalize() + ' l' if kind else 'L'}atency at the zero-loss rate ({what}){suffix}",
                f"percentiles: medians over {lat_rounds}; {placement}",
                lat_sizes, dports, {k: v for k, v in sub.items() if k[0] in lat_sizes})))
        else:
            stale = args.out_dir / f"forward-latency-{d}.svg"
            print(f"{PROG}: {d}: no row has latency at the zero-loss rate, {stale.name} not written"
                  + ("; the one there is from other input" if stale.exists() else ""), file=sys.stderr)
        for name, svg in charts:
            try:
                (args.out_dir / name).write_text(svg, encoding="utf-8")
            except OSError as e:
                fail(f"{args.out_dir / name}: {e.strerror or e}")
            print(f"{PROG}: wrote {args.out_dir / name}", file=sys.stderr)
    print(table(cells, directions, sizes_of, ports,
                f"Forwarding: medians over {rounds(len(v) for v in cells.values())}; {placement}; "
                f"ratios are of medians, port / {BASE} (zero-loss: higher is better, p99: lower)."))


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:  # stdout closed early, as by `| head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
