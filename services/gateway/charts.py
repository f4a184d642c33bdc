"""Rate charts drawn on the server as inline SVG: no chart library, nothing
from a CDN, and the page shows them whether or not scripts run (htmx only
swaps in a fresh one every history-interval).

One chart is one subject's series (history.Series) over the samples kept:
a time axis (clock times), a msg/s axis from 0 to a round number above the
highest rate, one line per series broken where a sample is a gap, and a
legend giving each series' current rate and how many messages it counted
over the window.
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass
from html import escape

from .history import Series

WIDTH, HEIGHT = 640, 190
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 12, 44
COLOURS = {"in": "#2b7bb9", "out": "#e07b39", "acked": "#3a9d5d", "forwarded": "#8e5ea2"}
UNIT = "msg/s"


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5 or 5 times a power of ten at or above `value` (1 for 0)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value - 1e-12:
            return step * power
    return 10 * power


def number(value: float | None) -> str:
    """A rate as the legend shows it: up to two decimals, no trailing zeros; "—" for a gap."""
    if value is None:
        return "—"
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return text or "0"


@dataclass(frozen=True)
class Legend:
    name: str
    colour: str
    current: float | None
    total: int


def legend(series: Series) -> list[Legend]:
    return [Legend(name, COLOURS.get(name, "#555"), series.current(i), series.total(i))
            for i, name in enumerate(series.names)]


def _segments(xs: list[float], ys: list[float | None]) -> list[list[tuple[float, float]]]:
    """The points of a line, cut where a value is a gap."""
    runs, run = [], []
    for x, y in zip(xs, ys):
        if y is None:
            if run:
                runs.append(run)
            run = []
        else:
            run.append((x, y))
    if run:
        runs.append(run)
    return runs


def svg(series: Series, title: str) -> str:
    """The chart of `series` as an <svg> element, or a note while there are fewer than two points."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    label = escape(title)
    if len(series.times) < 2:
        return (f'<svg class="rate-chart" role="img" aria-label="{label}" viewBox="0 0 {WIDTH} 60" '
                f'width="{WIDTH}" height="60"><title>{label}</title><text x="{LEFT}" y="34" class="chart-note">'
                f'collecting samples: the chart starts after two intervals</text></svg>')
    t0, t1 = series.times[0], series.times[-1]
    rates = [series.rates(i) for i in range(len(series.names))]
    top = nice_ceiling(max((r for rs in rates for r in rs if r is not None), default=0.0))

    def x(t: float) -> float:
        return LEFT + (t - t0) / (t1 - t0) * plot_w

    def y(v: float) -> float:
        return TOP + plot_h - v / top * plot_h

    parts = [f'<svg class="rate-chart" role="img" aria-label="{label}" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'width="{WIDTH}" height="{HEIGHT}" data-max="{number(top)}"><title>{label}</title>']
    for i in range(5):  # the msg/s axis: 0, a quarter ... the top
        v = top * i / 4
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}"/>'
                     f'<text class="tick" x="{LEFT - 4}" y="{y(v) + 4:.1f}" style="text-anchor: end">'
                     f'{number(v)}</text>')
    parts.append(f'<text class="axis-label" x="12" y="{TOP + plot_h / 2:.0f}" style="text-anchor: middle" '
                 f'transform="rotate(-90 12 {TOP + plot_h / 2:.0f})">{UNIT}</text>')
    for i in range(5):  # the time axis: clock times at the ends and three between
        t = t0 + (t1 - t0) * i / 4
        clock = datetime.datetime.fromtimestamp(t).strftime("%H:%M:%S")
        anchor = "start" if i == 0 else "end" if i == 4 else "middle"
        parts.append(f'<text class="tick" x="{x(t):.1f}" y="{TOP + plot_h + 16}" style="text-anchor: {anchor}">'
                     f'{clock}</text>')
    parts.append(f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{TOP + plot_h}" y2="{TOP + plot_h}"/>'
                 f'<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{TOP + plot_h}"/>')
    xs = [x(t) for t in series.times]
    for entry, ys in zip(legend(series), rates):
        # "in" drawn first and wider: where "out" or "acked" is the same, it still shows beneath.
        width = 3 if entry.name == "in" else 1.5
        for run in _segments(xs, ys):
            if len(run) == 1:
                px, v = run[0]
                parts.append(f'<circle class="series" data-series="{entry.name}" cx="{px:.1f}" cy="{y(v):.1f}" r="2" '
                             f'fill="{entry.colour}"/>')
            else:
                points = " ".join(f"{px:.1f},{y(v):.1f}" for px, v in run)
                parts.append(f'<polyline class="series" data-series="{entry.name}" fill="none" '
                             f'stroke="{entry.colour}" stroke-width="{width}" points="{points}"/>')
    lx = LEFT
    for entry in legend(series):  # the legend, under the time axis
        text = f"{entry.name} {number(entry.current)} {UNIT}"
        parts.append(f'<rect x="{lx}" y="{HEIGHT - 14}" width="10" height="10" fill="{entry.colour}"/>'
                     f'<text class="legend" x="{lx + 14}" y="{HEIGHT - 5}" style="text-anchor: start">'
                     f'{escape(text)}</text>')
        lx += 150
    parts.append("</svg>")
    return "".join(parts)
