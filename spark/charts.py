"""PNG charts of a report, from the small tables the report collected.

matplotlib's object API (Figure, no pyplot state), Agg canvas: no display needed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from matplotlib import dates as mdates
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

SIZE = (10, 4.2)
DPI = 100
MAX_ADDRESSES = 12


def _figure(height: float = SIZE[1]) -> Figure:
    fig = Figure(figsize=(SIZE[0], height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#666")
    ax.set_xticks([])
    ax.set_yticks([])


@dataclass
class Chart:
    """A drawn chart: its file and every line drawn, label -> colour (hex)."""

    path: Path
    series: dict[str, str] = field(default_factory=dict)


#: The cluster totals' colours; nodes take theirs from NODE_COLOURS, never these.
TOTAL_COLOURS = {"enqueued": "#1f77b4", "acknowledged": "#2ca02c", "p50": "#2ca02c", "p99": "#000000"}
#: The activity chart's all-node lines: none of them a node's colour either.
ACTIVITY_COLOURS = {"backlog": "#1f77b4", "redelivered": "#2ca02c", "dead_lettered": "#000000", "expired": "#1f77b4"}
NODE_COLOURS = ("#d62728", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f",
                "#393b79", "#637939", "#8c6d31", "#843c39")


def node_colours(names) -> dict[str, str]:
    """One colour per node, in name order, none of them a totals colour."""
    return {name: NODE_COLOURS[i % len(NODE_COLOURS)] for i, name in enumerate(sorted(names))}


def _time_axis(ax, ts: dict) -> None:
    """The window's time axis, the same on every chart: from its first bucket's
    start to its last bucket's end, whatever the lines drawn cover (a latency
    line has gaps where nothing was acknowledged)."""
    bucket_s, t = ts["bucket_s"], ts["t"]
    ax.set_xlim(datetime.fromtimestamp(t[0], tz=timezone.utc), datetime.fromtimestamp(t[-1] + bucket_s, tz=timezone.utc))
    locator = mdates.AutoDateLocator(maxticks=8)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=timezone.utc))
    ax.set_xlabel(f"time (UTC), {bucket_s} s buckets")
    ax.grid(alpha=0.3)


def _steps(ts: dict, values: list) -> tuple[list, list]:
    """Step-plot coordinates: each bucket's value holds over its own bucket only."""
    t, b = ts["t"], ts["bucket_s"]
    x = [datetime.fromtimestamp(v, tz=timezone.utc) for v in [*t, t[-1] + b]]
    return x, [*values, values[-1]]


def _line(ax, ts: dict, values: list, chart: Chart, label: str, color: str, **kw) -> None:
    x, y = _steps(ts, values)
    ax.step(x, [float("nan") if v is None else v for v in y], where="post", label=label, color=color, **kw)
    chart.series[label] = color


def throughput_chart(ts: dict, path: Path) -> Chart:
    """Enqueued and acknowledged per second over time, idle buckets at 0:
    the cluster totals on top; below, each node's enqueued (solid) and
    acknowledged (dashed) in the node's own colour."""
    chart = Chart(path)
    fig = _figure(height=8.8)
    top, log, bottom = fig.subplots(3, 1, sharex=True)
    if not ts["t"] or not any(ts["total"]["enqueued_per_s"]) and not any(ts["total"]["acknowledged_per_s"]):
        _empty(top, "no messages enqueued or acknowledged in the window")
        _empty(log, "")
        _empty(bottom, "")
        _save(fig, path)
        return chart
    # The same totals on a log scale: a burst no longer flattens the rest of the window.
    for name in ("enqueued", "acknowledged"):
        x, y = _steps(ts, ts["total"][f"{name}_per_s"])
        log.step(x, y, where="post", color=TOTAL_COLOURS[name], linewidth=1.2)
    log.set_yscale("symlog", linthresh=1)
    peak = max(max(ts["total"]["enqueued_per_s"]), max(ts["total"]["acknowledged_per_s"]), 1)
    log.set_ylim(0, peak * 2)  # headroom: the busiest line is not drawn on the frame
    log.set_title("All nodes, log scale (0 to 1 msg/s linear)")
    log.set_ylabel("messages per second")
    log.grid(alpha=0.3)
    for name in ("enqueued", "acknowledged"):
        _line(top, ts, ts["total"][f"{name}_per_s"], chart, f"{name}/s (all nodes)", TOTAL_COLOURS[name],
              linewidth=1.6)
    top.set_title(f"Throughput over time ({ts['bucket_s']} s buckets; idle time is 0)")
    top.set_ylabel("messages per second")
    top.set_ylim(bottom=0)
    top.grid(alpha=0.3)
    top.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    colours = node_colours(ts["nodes"])
    for node, series in ts["nodes"].items():
        _line(bottom, ts, series["enqueued_per_s"], chart, f"{node} enqueued/s", colours[node], linewidth=1.2)
        _line(bottom, ts, series["acknowledged_per_s"], chart, f"{node} acknowledged/s", colours[node],
              linewidth=1.2, linestyle="--")
    bottom.set_title("Per node (solid: enqueued, dashed: acknowledged)")
    bottom.set_ylabel("messages per second")
    bottom.set_ylim(bottom=0)
    _time_axis(bottom, ts)
    bottom.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    _save(fig, path)
    return chart


def latency_over_time_chart(ts: dict, path: Path) -> Chart:
    """p50 and p99 enqueue -> acknowledge latency per bucket, all nodes; below, each node's p50 and p99."""
    chart = Chart(path)
    fig = _figure(height=6.4)
    top, bottom = fig.subplots(2, 1, sharex=True)
    if not ts["t"] or all(v is None for v in ts["total"]["p50_ms"]):
        _empty(top, "no acknowledgements in the window")
        _empty(bottom, "")
        _save(fig, path)
        return chart
    _line(top, ts, ts["total"]["p50_ms"], chart, "p50 (all nodes)", TOTAL_COLOURS["p50"], linewidth=1.6)
    _line(top, ts, ts["total"]["p99_ms"], chart, "p99 (all nodes)", TOTAL_COLOURS["p99"], linewidth=1.6)
    top.set_title("Latency over time, enqueue → acknowledge (gaps: no acknowledgement in the bucket)")
    colours = node_colours(ts["nodes"])
    for node, series in ts["nodes"].items():
        _line(bottom, ts, series["p50_ms"], chart, f"{node} p50", colours[node], linewidth=1.2)
        _line(bottom, ts, series["p99_ms"], chart, f"{node} p99", colours[node], linewidth=1.0, linestyle=":")
    bottom.set_title("Per node (solid: p50, dotted: p99)")
    for ax in (top, bottom):
        ax.set_ylabel("ms")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    _time_axis(bottom, ts)
    _save(fig, path)
    return chart


def activity_chart(ts: dict, path: Path) -> Chart:
    """Backlog (references stored) over time, all nodes and each node's
    (dashed, in the node's colour); below, redeliveries, dead-letters and
    expiries per second for all nodes, then each node's dead letters (solid)
    and expiries (dashed) in the node's colour."""
    chart = Chart(path)
    fig = _figure(height=8.8)
    top, middle, bottom = fig.subplots(3, 1, sharex=True)
    if not ts["t"]:
        _empty(top, "no events in the window")
        _empty(middle, "")
        _empty(bottom, "")
        _save(fig, path)
        return chart
    _line(top, ts, ts["total"]["backlog"], chart, "backlog (messages stored)", ACTIVITY_COLOURS["backlog"],
          linewidth=1.6)
    colours = node_colours(ts["nodes"])
    for node, series in ts["nodes"].items():
        if "backlog" in series:
            _line(top, ts, series["backlog"], chart, f"{node} backlog", colours[node], linewidth=1.1, linestyle="--")
    top.set_title("Backlog at the end of each bucket (all durable queues; dashed: each node's)")
    top.set_ylabel("messages")
    for name in ("redelivered", "dead_lettered", "expired"):
        _line(middle, ts, ts["total"][f"{name}_per_s"], chart, f"{name.replace('_', '-')}/s (all nodes)",
              ACTIVITY_COLOURS[name], linewidth=1.3)
    middle.set_title("Redeliveries, dead letters and expiries, all nodes")
    middle.set_ylabel("per second")
    for node, series in ts["nodes"].items():
        _line(bottom, ts, series["dead_lettered_per_s"], chart, f"{node} dead-lettered/s", colours[node], linewidth=1.2)
        _line(bottom, ts, series["expired_per_s"], chart, f"{node} expired/s", colours[node], linewidth=1.2,
              linestyle="--")
    bottom.set_title("Per node (solid: dead letters, dashed: expiries)")
    bottom.set_ylabel("per second")
    for ax in (top, middle, bottom):
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    _time_axis(bottom, ts)
    _save(fig, path)
    return chart


def _ms_label(value: float, _pos=None) -> str:
    if value >= 1000:
        return f"{value / 1000:g} s"
    return f"{value:g} ms"


def _log_ms_axis(axis) -> None:
    """Labels on the decades only (1 ms, 10 ms, 100 ms, 1 s…): minor ticks unlabelled, so none overlap."""
    axis.set_major_locator(LogLocator(base=10, numticks=12))
    axis.set_major_formatter(FuncFormatter(_ms_label))
    axis.set_minor_formatter(NullFormatter())


def latency_chart(histogram: list[dict], overall: dict | None, by_node: list[dict], path: Path) -> Chart:
    """Left: the distribution of enqueue->acknowledge latency (log bins) with
    p50/p90/p99 marked. Right: p50/p90/p99/max per node, so a slow node shows.

    histogram: dicts with lower_ms (None for <= 0), upper_ms, count (all nodes);
    overall/by_node: latency stats rows (p50_ms, p90_ms, p99_ms, max_ms, count, node_name).
    """
    chart = Chart(path)
    fig = _figure()
    left, right = fig.subplots(1, 2, width_ratios=[3, 2])
    if not histogram or not overall or not overall.get("count"):
        _empty(left, "no acknowledgements in the window")
        _empty(right, "")
        _save(fig, path)
        return chart
    bins = sorted(histogram, key=lambda b: b["upper_ms"])
    for b in bins:
        lo = b["lower_ms"] if b["lower_ms"] is not None else 0.5  # the "<= 0 ms" bin, drawn left of 1 ms
        hi = b["upper_ms"] if b["lower_ms"] is not None else 1.0
        left.bar(lo, b["count"], width=hi - lo, align="edge", color="#1f77b4", edgecolor="white", linewidth=0.4)
    left.set_xscale("log")
    _log_ms_axis(left.xaxis)
    for name, color in (("p50_ms", "#2ca02c"), ("p90_ms", "#ff7f0e"), ("p99_ms", "#d62728")):
        value = overall.get(name)
        if value is not None and value > 0:
            label = f"{name[:-3]} = {value:,.0f} ms"
            left.axvline(value, color=color, linestyle="--", linewidth=1.2, label=label)
            chart.series[label] = color
    left.set_title(f"Latency, enqueue → acknowledge ({overall['count']:,} acks)")
    left.set_xlabel("latency (log scale)")
    left.set_ylabel("acknowledgements")
    left.grid(alpha=0.3)
    left.legend(fontsize="small")

    rows = sorted(by_node, key=lambda r: r["node_name"] or "")[::-1][:MAX_ADDRESSES]
    y = range(len(rows))
    for offset, (name, color) in enumerate(
        (("p50_ms", "#2ca02c"), ("p90_ms", "#ff7f0e"), ("p99_ms", "#d62728"), ("max_ms", "#7f7f7f"))
    ):
        right.barh([i + (offset - 1.5) * 0.2 for i in y], [max(r[name] or 0, 0.5) for r in rows], height=0.2,
                   color=color, label=name[:-3])
    right.set_yticks(list(y), [r["node_name"] for r in rows], fontsize="small")
    values = [r[k] for r in rows for k in ("p50_ms", "max_ms") if r[k] and r[k] > 0]
    if values and max(values) / min(values) > 20:  # log only where the spread needs it
        right.set_xscale("log")
        _log_ms_axis(right.xaxis)
        right.set_xlabel("latency (log scale)")
    else:
        right.set_xlabel("ms")
    right.set_title("Per node")
    right.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    right.grid(alpha=0.3, axis="x")
    _save(fig, path)
    return chart


def distribution_chart(per_node: list[dict], path: Path) -> Chart:
    """Messages enqueued per node for each address (the busiest addresses):
    grouped bars, so an uneven spread shows at a glance.

    per_node: dicts with address, node_name, messages.
    """
    chart = Chart(path)
    fig = _figure()
    ax = fig.add_subplot()
    if not per_node:
        _empty(ax, "no messages enqueued in the window")
        _save(fig, path)
        return chart
    totals: dict[str, int] = {}
    for r in per_node:
        totals[r["address"]] = totals.get(r["address"], 0) + r["messages"]
    addresses = sorted(totals, key=lambda a: (-totals[a], a))[:MAX_ADDRESSES]
    nodes = sorted({r["node_name"] for r in per_node})
    colours = node_colours(nodes)
    counts = {(r["address"], r["node_name"]): r["messages"] for r in per_node}
    width = 0.8 / max(1, len(nodes))
    for i, node in enumerate(nodes):
        ax.bar([a + (i - (len(nodes) - 1) / 2) * width for a in range(len(addresses))],
               [counts.get((addr, node), 0) for addr in addresses], width=width, label=node, color=colours[node])
        chart.series[node] = colours[node]
    ax.set_xticks(list(range(len(addresses))), addresses, rotation=20, ha="right", fontsize="small")
    ax.set_ylabel("messages")
    ax.set_title("Per-node distribution of each address's messages")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(title="node", fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _save(fig, path)
    return chart
