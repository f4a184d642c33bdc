"""PNG charts of a report, from the small tables the report collected.

matplotlib's object API (Figure, no pyplot state), Agg canvas: no display needed.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from matplotlib import dates as mdates
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

SIZE = (10, 4.2)
DPI = 100
MAX_ADDRESSES = 12


def _figure() -> Figure:
    fig = Figure(figsize=SIZE, dpi=DPI, layout="constrained")
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


def throughput_chart(points: list[dict], bucket_s: int, path: Path) -> Path:
    """Enqueued and acknowledged per second over time: cluster totals, and one
    thin line per node when there are several nodes.

    points: dicts with second (epoch s), node_name, enqueued_per_s, acknowledged_per_s.
    """
    fig = _figure()
    ax = fig.add_subplot()
    if not points:
        _empty(ax, "no messages enqueued or acknowledged in the window")
        return _save(fig, path)
    seconds = sorted({p["second"] for p in points})
    enq = {s: 0.0 for s in seconds}
    ack = {s: 0.0 for s in seconds}
    nodes: dict[str, dict[int, float]] = {}
    for p in points:
        enq[p["second"]] += p["enqueued_per_s"]
        ack[p["second"]] += p["acknowledged_per_s"]
        nodes.setdefault(p["node_name"], {})[p["second"]] = p["enqueued_per_s"]
    # Steps: each value is the mean rate over its bucket, so it holds until the next bucket starts.
    edges = [*seconds, seconds[-1] + bucket_s]
    x = [datetime.fromtimestamp(s, tz=timezone.utc) for s in edges]

    def steps(series: dict[int, float]) -> list[float]:
        values = [series.get(s, 0.0) for s in seconds]
        return [*values, values[-1]]

    ax.step(x, steps(enq), where="post", label="enqueued/s (all nodes)", color="#1f77b4", linewidth=1.8)
    ax.step(x, steps(ack), where="post", label="acknowledged/s (all nodes)", color="#2ca02c", linewidth=1.8)
    if len(nodes) > 1:
        for name, series in sorted(nodes.items()):
            ax.step(x, steps(series), where="post", label=f"enqueued/s on {name}", linewidth=0.9, linestyle="--")
    locator = mdates.AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=timezone.utc))
    ax.set_title(f"Throughput over time (UTC, {bucket_s} s buckets)")
    ax.set_ylabel("messages per second")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize="small")
    return _save(fig, path)


def latency_chart(histogram: list[dict], overall: dict | None, by_address: list[dict], path: Path) -> Path:
    """Left: the distribution of enqueue->acknowledge latency (log bins) with
    p50/p90/p99 marked. Right: p50/p90/p99/max per address (busiest first).

    histogram: dicts with lower_ms (None for <= 0), upper_ms, count (all addresses);
    overall/by_address: latency stats rows (p50_ms, p90_ms, p99_ms, max_ms, count, address).
    """
    fig = _figure()
    left, right = fig.subplots(1, 2, width_ratios=[3, 2])
    if not histogram or not overall or not overall.get("count"):
        _empty(left, "no acknowledgements in the window")
        _empty(right, "")
        return _save(fig, path)
    bins = sorted(histogram, key=lambda b: b["upper_ms"])
    for b in bins:
        lo = b["lower_ms"] if b["lower_ms"] is not None else 0.5  # the "<= 0 ms" bin, drawn left of 1 ms
        hi = b["upper_ms"] if b["lower_ms"] is not None else 1.0
        left.bar(lo, b["count"], width=hi - lo, align="edge", color="#1f77b4", edgecolor="white", linewidth=0.4)
    left.set_xscale("log")
    for name, color in (("p50_ms", "#2ca02c"), ("p90_ms", "#ff7f0e"), ("p99_ms", "#d62728")):
        value = overall.get(name)
        if value is not None and value > 0:
            left.axvline(value, color=color, linestyle="--", linewidth=1.2, label=f"{name[:-3]} = {value:,.0f} ms")
    left.set_title(f"Latency, enqueue → acknowledge ({overall['count']:,} acks)")
    left.set_xlabel("ms (log scale)")
    left.set_ylabel("acknowledgements")
    left.grid(alpha=0.3)
    left.legend(fontsize="small")

    top = sorted(by_address, key=lambda r: -r["count"])[:MAX_ADDRESSES]
    names = [r["address"] for r in top][::-1]
    rows = top[::-1]
    y = range(len(rows))
    for offset, (name, color) in enumerate(
        (("p50_ms", "#2ca02c"), ("p90_ms", "#ff7f0e"), ("p99_ms", "#d62728"), ("max_ms", "#7f7f7f"))
    ):
        right.barh([i + (offset - 1.5) * 0.2 for i in y], [max(r[name] or 0, 0.5) for r in rows], height=0.2,
                   color=color, label=name[:-3])
    right.set_yticks(list(y), names, fontsize="small")
    values = [r[k] for r in rows for k in ("p50_ms", "max_ms") if r[k] and r[k] > 0]
    if values and max(values) / min(values) > 20:  # log only where the spread needs it
        right.set_xscale("log")
        right.xaxis.set_minor_formatter(NullFormatter())
        right.set_xlabel("ms (log scale)")
    else:
        right.set_xlabel("ms")
    right.set_title("Per address")
    right.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    right.grid(alpha=0.3, axis="x")
    return _save(fig, path)


def distribution_chart(per_node: list[dict], path: Path) -> Path:
    """Messages enqueued per node for each address (the busiest addresses):
    grouped bars, so an uneven spread shows at a glance.

    per_node: dicts with address, node_name, enqueued.
    """
    fig = _figure()
    ax = fig.add_subplot()
    if not per_node:
        _empty(ax, "no messages enqueued in the window")
        return _save(fig, path)
    totals: dict[str, int] = {}
    for r in per_node:
        totals[r["address"]] = totals.get(r["address"], 0) + r["enqueued"]
    addresses = sorted(totals, key=lambda a: (-totals[a], a))[:MAX_ADDRESSES]
    nodes = sorted({r["node_name"] for r in per_node})
    counts = {(r["address"], r["node_name"]): r["enqueued"] for r in per_node}
    width = 0.8 / max(1, len(nodes))
    for i, node in enumerate(nodes):
        ax.bar([a + (i - (len(nodes) - 1) / 2) * width for a in range(len(addresses))],
               [counts.get((addr, node), 0) for addr in addresses], width=width, label=node)
    ax.set_xticks(list(range(len(addresses))), addresses, rotation=20, ha="right", fontsize="small")
    ax.set_ylabel("messages enqueued")
    ax.set_title("Per-node distribution of each address's messages")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(title="node", fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _save(fig, path)
