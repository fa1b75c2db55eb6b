"""SVG charts of scripts/bench's results, written by hand (Python's standard library only).

    bench/render.py svg RESULTS.json OUTDIR [--stem NAME]

writes into OUTDIR, STEM being RESULTS's file name without ".json" unless --stem says otherwise:

- STEM-rss.svg: each peer's RSS through the run's phases on the largest Widget dataset, managedFields
  kept: steady after sync, the run's peak (list and burst), the peaks of the kdi peer's phases after
  the run (replay, resync, reads, decode all) and the RSS after dropping everything decoded, and the
  peak during a 410 relist. A phase a peer does not run has no bar.
- STEM-steady-ratio.svg: each kdi storage run's steady RSS over client-go's, for every dataset with
  managedFields kept and stripped.

A chart whose data the results lack is not written.
"""
from __future__ import annotations

import math
import os
import textwrap
from dataclasses import dataclass
from typing import Callable, Optional
from xml.sax.saxutils import escape

from render import KDI_STORAGE_RUNS, dataset_label, find, main_runs, order_key, peer_name

Run = dict
Reading = Callable[[Run, Optional[Run]], Optional[float]]

FONT = "font-family=\"DejaVu Sans, Verdana, sans-serif\""
# Colours by peer (kdi runs by storage), readable by the colour-blind (Okabe and Ito).
COLOURS = {"compact": "#0072B2", "objects": "#56B4E9", "client-go": "#E69F00", "kube-runtime": "#009E73"}
OTHER_COLOUR = "#999999"
# A white outline under a value's text, so that a line behind it does not cross it.
HALO = 'paint-order="stroke" stroke="white" stroke-width="3" stroke-linejoin="round"'

DECODE_ALL_AFTER = "decode all,\n10 s after"
# The phases of the RSS chart: label (lines split on "\n") and the reading from a run and its relist.
PHASES: list[tuple[str, Reading]] = [
    ("steady\nafter sync", lambda r, _: r.get("rss_steady_mb")),
    ("run peak\n(list, burst)", lambda r, _: r.get("rss_peak_mb")),
    ("replay\npeak", lambda r, _: r.get("replay_rss_peak_mb")),
    ("resync\npeak", lambda r, _: r.get("resync_rss_peak_mb")),
    ("reads\npeak", lambda r, _: r.get("reads_rss_peak_mb")),
    ("decode all\npeak", lambda r, _: r.get("decode_all_peak_mb")),
    (DECODE_ALL_AFTER, lambda r, _: r.get("decode_all_rss_after_mb")),
    ("410 relist\npeak", lambda _, rel: rel.get("relist_peak_mb") if rel else None),
]


@dataclass
class Series:
    """One peer's bars: its legend label, colour, and a value per category (None: no bar)."""

    label: str
    colour: str
    values: list[Optional[float]]


def run_label(r: Run) -> str:
    """A run's legend label: kdi runs by storage, the library's default marked."""
    if r["peer"] in KDI_STORAGE_RUNS:
        default = " (default)" if r["peer"] == "kdi" else ""
        return f"kube-dynamic-informer, {r.get('storage', 'objects')} storage{default}"
    return peer_name(r["peer"]).replace("**", "")


def run_colour(r: Run) -> str:
    """A run's colour: kdi runs by storage, the others by peer."""
    if r["peer"] in KDI_STORAGE_RUNS:
        return COLOURS.get(r.get("storage", "objects"), OTHER_COLOUR)
    return COLOURS.get(r["peer"], OTHER_COLOUR)


def nice_step(top: float, ticks: int = 5) -> float:
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) giving about `ticks` ticks up to `top`."""
    raw = max(top, 1e-9) / ticks
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


def number(v: float, digits: int = 0) -> str:
    """A value as drawn on a chart: thousands separated."""
    return f"{v:,.{digits}f}"


def text(x: float, y: float, s: str, size: int = 12, anchor: str = "start", extra: str = "") -> str:
    """An SVG text element; lines split on "\\n" go one below the other."""
    lines = s.split("\n")
    if len(lines) == 1:
        return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" {FONT} {extra}>'
                f"{escape(s)}</text>")
    spans = "".join(f'<tspan x="{x:.1f}" dy="{0 if i == 0 else size + 2}">{escape(line)}</tspan>'
                    for i, line in enumerate(lines))
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" {FONT} {extra}>{spans}</text>'


def text_width(s: str, size: int = 12) -> float:
    """A rough width of a line of text: enough to lay out a legend."""
    return len(s) * size * 0.6


def legend(series: list[Series], x: float, y: float, width: float) -> tuple[list[str], float]:
    """The legend's elements, wrapped within `width` from (x, y), and the y below it."""
    out, cx, cy = [], x, y
    for s in series:
        w = 18 + text_width(s.label) + 22
        if cx + w > x + width and cx > x:
            cx, cy = x, cy + 20
        out.append(f'<rect x="{cx:.1f}" y="{cy - 10:.1f}" width="12" height="12" fill="{s.colour}"/>')
        out.append(text(cx + 18, cy, s.label))
        cx += w
    return out, cy + 20


def svg(width: float, height: float, body: list[str]) -> str:
    """A whole SVG document on a white background."""
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}">',
        f'<rect width="{width:.0f}" height="{height:.0f}" fill="white"/>', *body, "</svg>", ""])


def run_line(results: dict) -> str:
    """The run that made the results: command, date and commit."""
    env, cfg = results.get("env", {}), results.get("config", {})
    parts = [cfg.get("command", "scripts/bench"), env.get("date"), env.get("git") and f"commit {env['git']}",
             env.get("cores") and f"{env['cores']} cores"]
    return ", ".join(p for p in parts if p)


def grouped_bars(title: str, subtitle: str, categories: list[str], series: list[Series], unit: str,
                 note: str) -> str:
    """Vertical bars, one group a category and a bar a series, each valued above it."""
    left, right = 78, 24
    width = max(left + (24 * len(series) + 28) * len(categories) + right,
                left + text_width(title, 17) * 1.05 + right, left + text_width(subtitle, 11) + right, 640)
    plot_w = width - left - right
    group = plot_w / len(categories)
    bar = min(30.0, (group - 24) / len(series))
    gap = group - bar * len(series)
    head, legend_y = [text(left, 28, title, 17, extra='font-weight="bold"'), text(left, 48, subtitle, 11)], 72
    keys, below = legend(series, left, legend_y, width - left - right)
    top, plot_h = below + 30, 360
    base = top + plot_h
    peak = max((v for s in series for v in s.values if v is not None), default=1.0)
    step = nice_step(peak * 1.08)
    y_max = step * math.ceil(peak * 1.08 / step)
    scale = plot_h / y_max
    body = [*head, *keys]
    tick = 0.0
    while tick <= y_max + step / 2:
        y = base - tick * scale
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#dddddd"/>')
        body.append(text(left - 6, y + 4, number(tick, 0 if step >= 1 else 1), 11, "end"))
        tick += step
    body.append(text(20, top + plot_h / 2, unit, 12, "middle",
                     f'transform="rotate(-90 20 {top + plot_h / 2:.1f})"'))
    for ci, category in enumerate(categories):
        gx = left + ci * group + gap / 2
        for si, s in enumerate(series):
            v = s.values[ci]
            if v is None:
                continue
            x, h = gx + si * bar, v * scale
            body.append(f'<rect x="{x + 1:.1f}" y="{base - h:.1f}" width="{bar - 2:.1f}" height="{h:.1f}" '
                        f'fill="{s.colour}"><title>{escape(s.label)}: {number(v, 1)} {escape(unit)}</title></rect>')
            vx, vy = x + bar / 2 + 4, base - h - 4
            body.append(text(vx, vy, number(v), 11, "start", f'transform="rotate(-90 {vx:.1f} {vy:.1f})" {HALO}'))
        body.append(text(gx + bar * len(series) / 2, base + 18, category, 12, "middle"))
    body.append(f'<line x1="{left}" y1="{base}" x2="{left + plot_w}" y2="{base}" stroke="#333333"/>')
    body.append(f'<line x1="{left}" y1="{top - 8}" x2="{left}" y2="{base}" stroke="#333333"/>')
    lines = textwrap.wrap(note, int(plot_w / text_width("x", 11)))
    body.append(text(left, base + 62, "\n".join(lines), 11))
    return svg(width, base + 66 + 13 * len(lines), body)


def rss_chart(results: dict) -> Optional[str]:
    """Each peer's RSS through the run's phases, on the largest Widget dataset, managedFields kept."""
    crd = [d for d in results["datasets"] if d["dataset"] == "crd"]
    if not crd:
        return None
    ds = max(crd, key=lambda d: d["n"])
    runs = sorted((r for r in main_runs(ds) if not r.get("strip")
                   and (r["peer"] in KDI_STORAGE_RUNS or r["peer"] in ("client-go", "kube-runtime"))),
                  key=order_key)
    if not runs:
        return None
    relists = {r["peer"]: r for r in ds.get("relists") or [] if not r.get("strip") and not r.get("relist_error")}
    phases = [(label, [read(r, relists.get(r["peer"])) for r in runs]) for label, read in PHASES]
    phases = [(label, values) for label, values in phases if any(v is not None for v in values)]
    series = [Series(run_label(r), run_colour(r), [values[i] for _, values in phases]) for i, r in enumerate(runs)]
    after = ("; \"decode all, 10 s after\" is the RSS 10 s after the objects decoded all at once were dropped"
             if any(label == DECODE_ALL_AFTER for label, _ in phases) else "")
    return grouped_bars(
        f"RSS through the run: {dataset_label(ds)}, managedFields kept", run_line(results),
        [label for label, _ in phases], series, "RSS (MiB)",
        "Each process reads its own RSS (/proc/self/status): the run's peak is VmHWM at its end, a phase's peak "
        f"VmHWM after a reset (clear_refs) before the phase{after}. No bar: the peer has no such phase.")


def ratio_chart(results: dict) -> Optional[str]:
    """Each kdi storage run's steady RSS over client-go's, per dataset, managedFields kept and stripped."""
    rows: list[tuple[str, list[tuple[Run, float, float]]]] = []
    for ds in results["datasets"]:
        short = f"{ds['n']:,} {'Widgets' if ds['dataset'] == 'crd' else 'ConfigMaps'}"
        for strip, what in ((False, "managedFields kept"), (True, "managedFields stripped")):
            go = find(ds, "client-go", strip)
            if not go or not go.get("rss_steady_mb"):
                continue
            bars = [(r, r["rss_steady_mb"], go["rss_steady_mb"]) for r in sorted(main_runs(ds), key=order_key)
                    if r["peer"] in KDI_STORAGE_RUNS and r.get("strip", False) == strip and r.get("rss_steady_mb")]
            if bars:
                rows.append((f"{short},\n{what}", bars))
    if not rows:
        return None
    kinds = {run_label(r): run_colour(r) for _, bars in rows for r, _, _ in bars}
    series = [Series(label, colour, []) for label, colour in kinds.items()]
    left, right, bar = 190, 200, 20
    plot_w = 420
    title = "Steady RSS over client-go's (client-go = 1)"
    width = left + plot_w + right
    head = [text(16, 28, title, 17, extra='font-weight="bold"'), text(16, 48, run_line(results), 11)]
    keys, below = legend(series, 16, 72, width - 32)
    top = below + 16
    peak = max(max(ours / theirs for _, ours, theirs in bars) for _, bars in rows)
    x_max = max(1.0, peak) * 1.05
    scale = plot_w / x_max
    body, y = [*head, *keys], top
    for category, bars in rows:
        body.append(text(left - 10, y + bar * len(bars) / 2 - 2, category, 12, "end"))
        for r, ours, theirs in bars:
            w = ours / theirs * scale
            body.append(f'<rect x="{left}" y="{y:.1f}" width="{w:.1f}" height="{bar - 3}" fill="{run_colour(r)}">'
                        f"<title>{escape(run_label(r))}</title></rect>")
            body.append(text(left + w + 6, y + bar - 7,
                             f"{ours / theirs:.2f}× ({number(ours)} vs {number(theirs)} MiB)", 11, extra=HALO))
            y += bar
        y += 18
    plot_bottom = y - 10
    step = nice_step(x_max)
    tick = 0.0
    while tick <= x_max + 1e-9:
        x = left + tick * scale
        body.insert(len(head) + len(keys), f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{plot_bottom}" '
                                           'stroke="#dddddd"/>')
        body.append(text(x, plot_bottom + 16, f"{tick:g}×", 11, "middle"))
        tick += step
    one = left + scale
    # Behind the bars and their values.
    body.insert(len(head) + len(keys), f'<line x1="{one:.1f}" y1="{top - 10}" x2="{one:.1f}" y2="{plot_bottom}" '
                                       'stroke="#E69F00" stroke-width="2" stroke-dasharray="5,3"/>')
    body.append(text(one + 4, top - 12, "client-go", 11, extra='fill="#b07800"'))
    body.append(f'<line x1="{left}" y1="{top - 6}" x2="{left}" y2="{plot_bottom}" stroke="#333333"/>')
    body.append(text(left + plot_w / 2, plot_bottom + 36, "kdi's steady RSS ÷ client-go's (RSS 3 s after sync, "
                     "MiB over MiB)", 12, "middle"))
    return svg(width, plot_bottom + 52, body)


def write_charts(results: dict, outdir: str, stem: str) -> list[str]:
    """Writes the charts the results have data for into `outdir`; returns their paths."""
    os.makedirs(outdir, exist_ok=True)
    written = []
    for suffix, chart in (("rss", rss_chart), ("steady-ratio", ratio_chart)):
        doc = chart(results)
        if doc is None:
            continue
        path = os.path.join(outdir, f"{stem}-{suffix}.svg")
        with open(path, "w") as f:
            f.write(doc)
        written.append(path)
    return written
