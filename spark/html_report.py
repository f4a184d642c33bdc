"""The one-file HTML report: the summary's tables and the charts, images
embedded as base64 data URIs so the file works alone (mail it, open it offline)."""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path

from spark.window import iso

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{margin-bottom:.2em}h2{margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.meta{color:#555}table{border-collapse:collapse;margin:.6em 0;font-size:.92em}
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:right}th{background:#f4f4f4}
td.l,th.l{text-align:left}img{max-width:100%;border:1px solid #eee}
.ok{color:#2a7d2a;font-weight:600}.bad{color:#b00020;font-weight:600}.note{color:#8a5a00}
"""


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def _num(value, digits: int = 1) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return escape(str(value))


def _table(headers: list[str], rows: list[list], left: int = 1) -> str:
    """`left` = how many leading columns are text (left-aligned)."""
    if not rows:
        return '<p class="meta">none</p>'
    head = "".join(f'<th class="{"l" if i < left else ""}">{escape(h)}</th>' for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f'<td class="{"l" if i < left else ""}">{_num(v)}</td>' for i, v in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def render(summary: dict, charts: dict[str, Path]) -> str:
    s = summary
    w = s["window"]
    audit = s["audit"]
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        "<title>meshmq analytics report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>meshmq analytics report</h1>",
        f'<p class="meta">Window {escape(w["since"])} → {escape(w["until"])} ({w["seconds"]:,.1f} s), '
        f"generated {escape(s['generated_at'])}, {len(s['nodes'])} node(s).</p>",
    ]
    for note in s.get("notes", []):
        parts.append(f'<p class="note">{escape(note)}</p>')

    parts.append("<h2>Nodes</h2>")
    parts.append(_table(
        ["node", "node id", "store", "events in store", "enqueued", "acknowledged", "enqueued/s", "acknowledged/s"],
        [[n["node_name"], n["node_id"], n["store"], n["events"], n.get("enqueued", 0), n.get("acknowledged", 0),
          n.get("enqueued_per_s", 0.0), n.get("acknowledged_per_s", 0.0)] for n in s["nodes"]],
        left=3,
    ))
    t = s["totals"]
    parts.append("<h2>Totals in the window</h2>")
    parts.append(_table(
        ["enqueued", "acknowledged", "redelivered", "expired", "dead-lettered", "removed"],
        [[t["enqueued"], t["acknowledged"], t["redelivered"], t["expired"], t["dead_lettered"], t["removed"]]],
        left=0,
    ))

    parts.append("<h2>Exactly-once audit</h2>")
    clean = audit["more_than_once"] == 0 and audit["never_by_fate"]["unaccounted"] == 0
    verdict = (
        '<span class="ok">no duplicate and no unaccounted message</span>' if clean
        else '<span class="bad">offenders found</span>'
    )
    nf = audit["never_by_fate"]
    parts.append(
        f"<p>{audit['produced']:,} message references produced: {audit['exactly_once']:,} acknowledged exactly once, "
        f"{audit['more_than_once']:,} more than once, {audit['never']:,} never "
        f"({nf['waiting']:,} still waiting, {nf['expired']:,} expired, {nf['dead_lettered']:,} dead-lettered, "
        f"{nf['removed']:,} removed, {nf['unaccounted']:,} unaccounted) — {verdict}.</p>"
    )
    offenders = audit["offenders"]
    if offenders:
        more = audit["offenders_total"] - len(offenders)
        parts.append(_table(
            ["node", "queue", "address", "message id", "acknowledged", "status", "fate", "enqueued at"],
            [[o["node_name"], o["queue"], o["address"], o["message_id"], o["acknowledged"], o["status"], o["fate"],
              iso(o["enqueued_ts"])] for o in offenders[:200]],
            left=3,
        ))
        if more > 0 or len(offenders) > 200:
            parts.append(f'<p class="meta">{audit["offenders_total"]:,} offenders in all; every one is in '
                         f"parquet/audit_offenders.</p>")

    parts.append("<h2>Throughput</h2>")
    parts.append(_img(charts["throughput"], "throughput over time"))
    parts.append(_table(
        ["address", "messages", "enqueued", "acknowledged", "enqueued/s", "acknowledged/s", "peak enq/s", "peak ack/s"],
        [[a["address"], a.get("messages", 0), a["enqueued"], a["acknowledged"], a["enqueued_per_s"],
          a["acknowledged_per_s"], a["peak_enqueued_per_s"], a["peak_acknowledged_per_s"]] for a in s["throughput"]["by_address"]],
    ))

    parts.append("<h2>Latency (enqueue → acknowledge)</h2>")
    parts.append(_img(charts["latency"], "latency distribution"))
    lat_rows = [[r["address"], r["count"], r["min_ms"], r["p50_ms"], r["p90_ms"], r["p99_ms"], r["max_ms"], r["mean_ms"]]
                for r in s["latency_ms"]["by_address"]]
    if s["latency_ms"]["all"]:
        a = s["latency_ms"]["all"]
        lat_rows.append(["(all)", a["count"], a["min_ms"], a["p50_ms"], a["p90_ms"], a["p99_ms"], a["max_ms"], a["mean_ms"]])
    parts.append(_table(["address", "acks", "min ms", "p50 ms", "p90 ms", "p99 ms", "max ms", "mean ms"], lat_rows))

    parts.append("<h2>Distribution over nodes</h2>")
    parts.append(_img(charts["distribution"], "per-node distribution"))
    parts.append(_table(
        ["address", "nodes", "total", "min/node", "max/node", "mean/node", "max ÷ mean", "cv", "per node"],
        [[d["address"], d["nodes"], d["total"], d["min"], d["max"], d["mean"], d["max_over_mean"], d["cv"],
          ", ".join(f"{k}: {v:,}" for k, v in d["per_node"].items())] for d in s["distribution"]],
    ))

    parts.append("<h2>Backlog (live, at report time)</h2>")
    parts.append(_table(
        ["node", "queue", "address", "messages", "bytes", "oldest waiting", "age s"],
        [[b["node_name"], b["queue"], b["address"], b["messages"], b["bytes"], iso(b["oldest_ms"]) or "–",
          b["oldest_age_s"]] for b in s["backlog"]],
        left=3,
    ))

    parts.append("<h2>Expired, dead-lettered, removed, redelivered</h2>")
    parts.append(_table(
        ["address", "queue", "expired", "dead-lettered", "removed", "redelivered"],
        [[e["address"], e["queue"], e["expired"], e["dead_lettered"], e["removed"], e["redelivered"]]
         for e in s["ends"]],
        left=2,
    ))
    parts.append(f'<p class="meta">Read with {s["partitions"]} JDBC partition(s) per store in '
                 f'{s["elapsed_s"]:.1f} s. Full tables: parquet/ beside this file; figures: summary.json.</p>')
    parts.append("</body></html>")
    return "\n".join(parts)


def write(summary: dict, charts: dict[str, Path], path: Path) -> Path:
    path.write_text(render(summary, charts), encoding="utf-8")
    return path
