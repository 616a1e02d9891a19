#!/usr/bin/env python3
"""Render `sluice bench` results as SVG images, with the standard library only.

  scripts/plot-bench.py sweep.json --out docs/img/sweep.svg
      The throughput curve of `sluice bench --sweep ... --json sweep.json`:
      elements/s per fixed parallelism, AUTOTUNE as a dashed line and marked.
  scripts/plot-bench.py report.json --out stages.svg
      Per-stage busy and wait seconds of one `sluice bench --json` report.
  scripts/plot-bench.py --trace trace.json --out timeline.svg
      The per-stage timeline of `sluice bench --trace`: busy threads of each
      stage over time (one lane per stage), with the autotuner's decisions.
  scripts/plot-bench.py --peers results.jsonl --out docs/img/peers.svg
      scripts/bench-peers.sh's results (WORK/results.jsonl): per case, each
      system's median items/s as a bar, sluice's first, with its ratio over
      each peer (the image cases 1, 2, 6, 7 and 8; others are left out).

Both a JSON file and --trace may be given; each image then goes to OUT with
"-trace" before the extension for the timeline.
"""
import argparse
import json
import os
import sys
from xml.sax.saxutils import escape

COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
          "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"]
FONT = 'font-family="sans-serif"'


def nice_ticks(vmax, count=5):
    if vmax <= 0:
        return [0, 1]
    raw = vmax / count
    mag = 10 ** int(f"{raw:e}".split("e")[1])
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    ticks, v = [], 0.0
    while v < vmax + step * 0.5:
        ticks.append(v)
        v += step
    return ticks


def fmt(v):
    if v >= 1e6:
        return f"{v / 1e6:.1f}M"
    if v >= 1e3:
        return f"{v / 1e3:.1f}k"
    return f"{v:g}"


class Svg:
    def __init__(self, width, height):
        self.w, self.h = width, height
        self.parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
                      f'height="{height}" viewBox="0 0 {width} {height}">',
                      f'<rect width="{width}" height="{height}" fill="white"/>']

    def add(self, s):
        self.parts.append(s)

    def text(self, x, y, s, anchor="start", extra="", size=12):
        self.add(f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {FONT} '
                 f'font-size="{size}" {extra}>'
                 f'{escape(str(s))}</text>')

    def save(self, path):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            f.write("\n".join(self.parts + ["</svg>\n"]))
        print(f"wrote {path}")


def axes(svg, x0, y0, x1, y1, ymax, ylabel, title):
    svg.text((x0 + x1) / 2, 20, title, "middle", 'font-weight="bold"')
    for t in nice_ticks(ymax):
        y = y1 - (y1 - y0) * t / max(nice_ticks(ymax)[-1], 1e-9)
        svg.add(f'<line x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}" stroke="#ddd"/>')
        svg.text(x0 - 6, y + 4, fmt(t), "end")
    svg.add(f'<line x1="{x0}" y1="{y1}" x2="{x1}" y2="{y1}" stroke="black"/>')
    svg.add(f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="black"/>')
    svg.text(16, (y0 + y1) / 2, ylabel, "middle",
             f'transform="rotate(-90 16 {(y0 + y1) / 2:.1f})"')


def plot_sweep(data, out):
    fixed = [p for p in data["points"] if not p.get("autotune")]
    auto = [p for p in data["points"] if p.get("autotune")]
    xs = [p["parallelism"] for p in fixed]
    ys = [p["report"]["elements_per_s"] for p in fixed]
    auto_y = auto[0]["report"]["elements_per_s"] if auto else None
    ymax = max(ys + ([auto_y] if auto_y else []) + [1]) * 1.1
    svg = Svg(640, 400)
    x0, y0, x1, y1 = 70, 40, 610, 340
    top = nice_ticks(ymax)[-1]
    axes(svg, x0, y0, x1, y1, ymax, "elements/s", "sluice bench: throughput vs parallelism")

    def px(x):
        return x0 + (x1 - x0) * (x - min(xs) + 0.5) / (max(xs) - min(xs) + 1)

    def py(y):
        return y1 - (y1 - y0) * y / top

    for x in xs:
        svg.text(px(x), y1 + 18, x, "middle")
    svg.text((x0 + x1) / 2, y1 + 40, "parallelism (fixed)", "middle")
    pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys))
    svg.add(f'<polyline points="{pts}" fill="none" stroke="{COLORS[0]}" stroke-width="2"/>')
    for x, y in zip(xs, ys):
        r = 6 if x == data.get("closest_fixed") else 4
        svg.add(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="{r}" fill="{COLORS[0]}"/>')
    if auto_y is not None:
        y = py(auto_y)
        svg.add(f'<line x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}" stroke="{COLORS[1]}" '
                f'stroke-width="2" stroke-dasharray="6,4"/>')
        chose = data.get("autotune_chose") or "?"
        svg.text(x1 - 4, y - 6, f"AUTOTUNE {fmt(auto_y)}/s (chose {chose})", "end",
                 f'fill="{COLORS[1]}"')
        if isinstance(chose, int) and chose in xs:
            svg.add(f'<line x1="{px(chose):.1f}" y1="{y0}" x2="{px(chose):.1f}" y2="{y1}" '
                    f'stroke="{COLORS[1]}" stroke-dasharray="2,3"/>')
    svg.save(out)


def plot_stages(report, out):
    stages = report["stats"]["stages"]
    secs = max(report.get("seconds", 0), 1e-9)
    vmax = max([s["busy_ns"] / 1e9 for s in stages] + [s["wait_ns"] / 1e9 for s in stages]
               + [1e-6]) * 1.1
    height = 80 + 28 * len(stages)
    svg = Svg(720, height)
    x0, x1 = 200, 620
    svg.text(360, 20, f"per-stage time over {secs:.2f} s "
             f"({fmt(report['elements_per_s'])} elements/s)", "middle", 'font-weight="bold"')
    top = nice_ticks(vmax)[-1]
    for t in nice_ticks(vmax):
        x = x0 + (x1 - x0) * t / top
        svg.add(f'<line x1="{x:.1f}" y1="34" x2="{x:.1f}" y2="{height - 30}" stroke="#ddd"/>')
        svg.text(x, height - 14, f"{t:g} s", "middle")
    for i, s in enumerate(stages):
        y = 40 + 28 * i
        svg.text(x0 - 8, y + 15, f"{s['name']} (x{s['parallelism']})", "end")
        busy = (x1 - x0) * s["busy_ns"] / 1e9 / top
        wait = (x1 - x0) * s["wait_ns"] / 1e9 / top
        svg.add(f'<rect x="{x0}" y="{y}" width="{busy:.1f}" height="10" fill="{COLORS[0]}"/>')
        svg.add(f'<rect x="{x0}" y="{y + 11}" width="{wait:.1f}" height="10" '
                f'fill="{COLORS[1]}"/>')
    svg.text(x1 + 10, 50, "busy", extra=f'fill="{COLORS[0]}"')
    svg.text(x1 + 10, 66, "waited on", extra=f'fill="{COLORS[1]}"')
    svg.save(out)


def plot_trace(trace, out):
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    series = {}
    for e in events:
        if e.get("ph") == "C" and "busy_threads" in e.get("args", {}):
            series.setdefault(e["tid"], []).append((e["ts"] / 1e6, e["args"]["busy_threads"],
                                                    e["args"].get("parallelism", 1)))
    marks = [(e["ts"] / 1e6, e["name"]) for e in events if e.get("ph") == "i"]
    if not series:
        sys.exit("plot-bench: the trace has no stage counters (was the run long enough?)")
    tids = sorted(series)
    tmax = max(t for s in series.values() for t, _, _ in s) or 1
    lane = 50
    height = 60 + lane * len(tids) + 30
    svg = Svg(860, height)
    x0, x1 = 170, 840
    svg.text(430, 20, "per-stage timeline: busy threads (line) and parallelism (shaded)",
             "middle", 'font-weight="bold"')
    for i, tid in enumerate(tids):
        ytop = 40 + lane * i
        ybot = ytop + lane - 8
        pts = series[tid]
        ymax = max([max(b, p) for _, b, p in pts] + [1])
        svg.add(f'<line x1="{x0}" y1="{ybot}" x2="{x1}" y2="{ybot}" stroke="#999"/>')
        svg.text(x0 - 8, ybot - 12, names.get(tid, f"stage {tid}"), "end")
        svg.text(x0 - 8, ybot, f"max {ymax:g}", "end", 'fill="#888"', size=10)

        def xy(t, v):
            return f"{x0 + (x1 - x0) * t / tmax:.1f},{ybot - (ybot - ytop) * v / ymax:.1f}"

        shade = " ".join(xy(t, p) for t, _, p in pts)
        svg.add(f'<polyline points="{xy(pts[0][0], 0)} {shade} {xy(pts[-1][0], 0)}" '
                f'fill="{COLORS[i % len(COLORS)]}" fill-opacity="0.15" stroke="none"/>')
        line = " ".join(xy(t, b) for t, b, _ in pts)
        svg.add(f'<polyline points="{line}" fill="none" stroke="{COLORS[i % len(COLORS)]}" '
                f'stroke-width="1.5"/>')
    for t, name in marks:
        x = x0 + (x1 - x0) * t / tmax
        svg.add(f'<line x1="{x:.1f}" y1="34" x2="{x:.1f}" y2="{height - 30}" stroke="#e15759" '
                f'stroke-opacity="0.4" stroke-dasharray="2,3"><title>{escape(name)}</title></line>')
    for t in nice_ticks(tmax):
        if t <= tmax:
            svg.text(x0 + (x1 - x0) * t / tmax, height - 12, f"{t:g} s", "middle")
    svg.save(out)


PEER_LABELS = {"sluice": "sluice", "sluice-python": "sluice (Python)", "tf.data": "tf.data",
               "dali": "DALI (CPU)", "spdl": "SPDL", "grain": "Grain", "torch": "torch ImageFolder",
               "webdataset": "webdataset", "bare": "bare decode", "loop": "sluice map, plain loop"}
PEER_CASES = {1: "1: TFRecords, full decode", 2: "2: TFRecords, crop-window decode",
              6: "6: restart-marked shards", 7: "7: image folder", 8: "8: WebDataset tars"}


def plot_peers(path, out):
    runs = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("case_no") in PEER_CASES:
                runs.setdefault((r["case_no"], r["system"]), []).append(r["items_per_s"])
    if not runs:
        raise ValueError(f"{path}: no results of cases {sorted(PEER_CASES)}")
    med = {k: sorted(v)[len(v) // 2] for k, v in runs.items()}
    order = list(PEER_LABELS)
    groups = []
    for no in PEER_CASES:
        bars = sorted(((s, v) for (c, s), v in med.items() if c == no),
                      key=lambda sv: order.index(sv[0]) if sv[0] in order else len(order))
        if bars:
            groups.append((no, bars))
    rows = sum(len(b) + 1 for _, b in groups)
    height = 70 + 18 * rows
    svg = Svg(760, height)
    x0, x1 = 190, 640
    vmax = max(med.values()) * 1.05
    top = nice_ticks(vmax)[-1]
    svg.text(380, 20, "images/s per system (medians), higher is better", "middle",
             'font-weight="bold"')
    for t in nice_ticks(vmax):
        x = x0 + (x1 - x0) * t / top
        svg.add(f'<line x1="{x:.1f}" y1="34" x2="{x:.1f}" y2="{height - 30}" stroke="#ddd"/>')
        svg.text(x, height - 14, fmt(t), "middle")
    y = 38
    for no, bars in groups:
        svg.text(8, y + 12, PEER_CASES[no], extra='font-weight="bold"')
        y += 18
        ours = dict(bars).get("sluice")
        for system, v in bars:
            color = COLORS[0] if system.startswith("sluice") else (
                "#bab0ac" if system in ("bare", "loop") else COLORS[1])
            svg.text(x0 - 8, y + 11, PEER_LABELS.get(system, system), "end", size=11)
            w = (x1 - x0) * v / top
            svg.add(f'<rect x="{x0}" y="{y + 2}" width="{w:.1f}" height="12" fill="{color}"/>')
            label = fmt(v) if v >= 1e3 else f"{v:.0f}"
            if ours and not system.startswith("sluice") and system not in ("bare", "loop"):
                label += f"  (sluice {ours / v:.2f}x)"
            svg.text(x0 + w + 4, y + 12, label, size=11)
            y += 18
    svg.save(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="?", help="a `sluice bench --json` file (sweep or report)")
    ap.add_argument("--trace", help="a `sluice bench --trace` file")
    ap.add_argument("--peers", help="scripts/bench-peers.sh's results.jsonl")
    ap.add_argument("--out", required=True, help="output .svg")
    a = ap.parse_args()
    if a.peers:
        try:
            plot_peers(a.peers, a.out)
        except (OSError, ValueError, KeyError) as e:
            sys.exit(f"plot-bench: {e}")
        return
    if not a.json and not a.trace:
        ap.error("give a --json result file, --trace, --peers, or both of the first two")
    try:
        if a.json:
            with open(a.json) as f:
                data = json.load(f)
            if "points" in data:
                plot_sweep(data, a.out)
            elif "stats" in data:
                plot_stages(data, a.out)
            else:
                sys.exit(f"plot-bench: {a.json}: not a `sluice bench --json` file")
        if a.trace:
            with open(a.trace) as f:
                trace = json.load(f)
            out = a.out
            if a.json:
                root, ext = os.path.splitext(a.out)
                out = f"{root}-trace{ext or '.svg'}"
            plot_trace(trace, out)
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"plot-bench: {e}")


if __name__ == "__main__":
    main()
