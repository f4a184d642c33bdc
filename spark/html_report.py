"""The one-file HTML report: the summary's tables and the charts, images
embedded as base64 data URIs so the file works alone (mail it, open it offline)."""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path

from meshmq.routing_names import INTERNAL_PREFIX
from spark.window import iso

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{margin-bottom:.2em}h2{margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.meta{color:#555}table{border-collapse:collapse;margin:.6em 0;font-size:.92em}
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:right}th{background:#f4f4f4}
td.l,th.l{text-align:left}img{max-width:100%;border:1px solid #eee}
.ok{color:#2a7d2a;font-weight:600}.bad{color:#b00020;font-weight:600}.note{color:#8a5a00}
.verdict{font-size:1.3em;padding:.6em 1em;border-radius:6px;margin:.8em 0}
.verdict.red{background:#fde7ea;color:#8b0016;border:2px solid #b00020}
.verdict.green{background:#e6f4e6;color:#1d5e1d;border:2px solid #2a7d2a}
.figs{display:flex;flex-wrap:wrap;gap:.8em;margin:.8em 0}
.fig{border:1px solid #ddd;border-radius:6px;padding:.5em .8em;min-width:150px;flex:1}
.fig .label{color:#555;font-size:.85em}.fig .value{font-size:1.5em;font-weight:600}.fig .detail{color:#666;font-size:.8em}
tr.anomaly td{background:#fde7ea;color:#8b0016}
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


_ANOMALY_TEXT = {
    "ACKNOWLEDGED_WITHOUT_ENQUEUE": "acknowledged without enqueue",
    "DELIVERED_WITHOUT_ENQUEUE": "delivered without enqueue",
    "ACKNOWLEDGED_MORE_THAN_ONCE": "acknowledged more than once",
    "ENQUEUED_MORE_THAN_ONCE": "enqueued more than once",
    "NEVER_ACKNOWLEDGED": "never acknowledged and not waiting",
}
SHOWN_OFFENDERS = 200


_COPY_TEXT = {"DEAD_LETTERED": "dead-letter copy", "EXPIRED": "expiry copy"}


def _copy_text(c: dict) -> str:
    """One stored reference of a delivery: the node's name, the message id there, what became of it."""
    fate = (c.get("fate") or "unaccounted").lower().replace("_", " ")
    return f"{c.get('node_name') or c['node_id']} #{c['message_id']}: {fate}"


def _figure(label: str, value: str, detail: str = "") -> str:
    more = f'<div class="detail">{escape(detail)}</div>' if detail else ""
    return f'<div class="fig"><div class="label">{escape(label)}</div><div class="value">{value}</div>{more}</div>'


def render(summary: dict, charts: dict[str, Path]) -> str:
    """Verdict and key figures first, then the anomalies (if any), then the charts, then the tables."""
    s = summary
    w = s["window"]
    audit = s["audit"]
    t = s["totals"]
    rates = s["rates"]
    red = audit["verdict"] == "red"
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        "<title>meshmq analytics report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>meshmq analytics report</h1>",
        f'<p class="meta">Window {escape(w["since"])} → {escape(w["until"])} ({w["seconds"]:,.1f} s), '
        f"generated {escape(s['generated_at'])}, {len(s['nodes'])} node(s).</p>",
    ]
    anomaly_counts = [f"{n:,} {_ANOMALY_TEXT[k.upper()]}" for k, n in audit["anomalies"].items() if n]
    ex = audit["explained_by_fate"]
    if red:
        verdict = f"{audit['offenders_total']:,} message(s) not delivered exactly once: " + "; ".join(anomaly_counts)
    else:
        verdict = "every message delivered exactly once or accounted for"
    parts.append(f'<div id="verdict" class="verdict {"red" if red else "green"}">'
                 f'<strong>{"RED" if red else "GREEN"}</strong> — {escape(verdict)}</div>')
    for note in s.get("notes", []):
        parts.append(f'<p class="note">{escape(note)}</p>')
    lat = s["latency_ms"]["all"] or {}
    cp = audit["copies"]
    copies = (f"; {cp['dead_lettered']:,} dead-letter and {cp['expired']:,} expiry copies apart"
              if cp["dead_lettered"] or cp["expired"] else "")
    backlog = sum(b["messages"] for b in s["backlog"])
    parts.append('<div id="key-figures" class="figs">' + "".join([
        _figure("messages produced", _num(audit["produced"]),
                f"{audit['exactly_once']:,} acknowledged exactly once{copies}"),
        _figure("explained, not acknowledged", _num(audit["explained"]),
                f"{ex['waiting']:,} waiting, {ex['expired']:,} expired, {ex['dead_lettered']:,} dead-lettered, "
                f"{ex['removed']:,} removed, {ex['forwarded']:,} forwarded out of the report"),
        _figure("enqueued / acknowledged", f"{t['enqueued']:,} / {t['acknowledged']:,}",
                f"{t['redelivered']:,} redelivered"),
        _figure("mean enqueued/s", f"{rates['enqueued_per_active_s']:,.1f}",
                f"per active second ({rates['active_seconds']:,} s with traffic); "
                f"{rates['enqueued_per_window_s']:,.1f} over the whole window ({rates['window_seconds']:,.1f} s)"),
        _figure("latency p50 / p99", f"{_num(lat.get('p50_ms'), 0)} / {_num(lat.get('p99_ms'), 0)} ms",
                f"max {_num(lat.get('max_ms'), 0)} ms"),
        _figure("backlog now", _num(backlog), f"{audit['crossed_nodes']:,} message(s) crossed nodes, "
                                              f"{audit['moves']:,} moved"),
    ]) + "</div>")

    offenders = audit["offenders"]
    if offenders:
        parts.append('<h2 id="anomalies">Anomalies</h2>')
        rows = []
        for o in offenders[:SHOWN_OFFENDERS]:
            copy_of = f" ({_COPY_TEXT[o['copy_of']]})" if o.get("copy_of") else ""
            cells = [o.get("node_name") or o["node_id"], o["queue"], o["address"],
                     f"{o.get('root_node_name') or o['root_node_id']}/{o['root_message_id']}{copy_of}",
                     "; ".join(_copy_text(c) for c in o.get("copies") or []), ", ".join(
                         _ANOMALY_TEXT[a] for a in o["anomalies"]), o["enqueued_events"], o["acknowledged"],
                     o["redelivered"], o["fate"], iso(o["enqueued_ts"]) or "–"]
            rows.append('<tr class="anomaly">' + "".join(
                f'<td class="{"l" if i < 6 else ""}">{_num(v)}</td>' for i, v in enumerate(cells)) + "</tr>")
        head = ["node", "queue", "address", "produced as", "copies (node #message id)", "anomaly", "enqueued",
                "acknowledged", "redelivered", "fate", "enqueued at"]
        parts.append("<table><tr>" + "".join(f'<th class="{"l" if i < 6 else ""}">{escape(h)}</th>'
                                             for i, h in enumerate(head)) + "</tr>" + "".join(rows) + "</table>")
        parts.append(f'<p class="meta">{audit["offenders_total"]:,} anomalies in all; every one is in '
                     f"parquet/audit_offenders, every delivery (explained ones too) in parquet/audit.</p>")

    parts.append('<h2 id="charts">Charts</h2>')
    for key, alt in (("throughput", "throughput over time, all nodes and per node"),
                     ("latency_over_time", "latency p50/p99 over time, all nodes and per node"),
                     ("activity", "backlog, redeliveries, dead letters and expiries over time"),
                     ("latency", "latency distribution and per node"),
                     ("distribution", "per-node distribution of each address")):
        parts.append(_img(charts[key], alt))

    parts.append('<h2 id="tables">Nodes</h2>')
    parts.append(_table(
        ["node", "node id", "store", "events in store", "backlog now", "enqueued", "acknowledged", "active s",
         "enq/s (active)", "enq/s (window)", "ack/s (active)", "ack/s (window)"],
        [[n["node_name"], n["node_id"], n["store"], n["events"], n.get("backlog", 0), n.get("enqueued", 0),
          n.get("acknowledged", 0), n.get("active_seconds", 0), n.get("enqueued_per_active_s", 0.0),
          n.get("enqueued_per_window_s", 0.0), n.get("acknowledged_per_active_s", 0.0), n.get("acknowledged_per_window_s", 0.0)] for n in s["nodes"]],
        left=3,
    ))
    parts.append("<h2>Exactly-once audit</h2>")
    parts.append(_table(
        ["", "produced", "exactly once", "anomalous", "waiting", "expired", "dead-lettered", "removed",
         "forwarded out", "crossed nodes", "moves"],
        [["sent by producers", audit["produced"], audit["exactly_once"], audit["anomalous"], ex["waiting"],
          ex["expired"], ex["dead_lettered"], ex["removed"], ex["forwarded"], audit["crossed_nodes"], audit["moves"]],
         [f"dead-letter ({cp['dead_lettered']:,}) and expiry ({cp['expired']:,}) copies",
          cp["dead_lettered"] + cp["expired"], cp["exactly_once"], cp["anomalous"],
          *(cp["explained_by_fate"][k] for k in ("waiting", "expired", "dead_lettered", "removed", "forwarded")),
          "–", "–"]], left=1))
    parts.append(_table(["anomaly", "deliveries"],
                        [[_ANOMALY_TEXT[k.upper()], n] for k, n in audit["anomalies"].items()]))
    parts.append("<h2>Bridges (forwarded per link)</h2>")
    parts.append(_table(
        ["from node", "cluster connection", "to node", "queued", "forwarded (confirmed)", "arrived", "waiting",
         "confirm p50 ms", "confirm p99 ms", "confirm max ms"],
        [[b["node_name"], b["cluster_connection"], b["target_node_name"] or b["target_node_id"], b["queued"],
          b["forwarded"], b["arrived"] if b["target_node_name"] else "store not in report", b["waiting"],
          *((b["confirm_latency_ms"] or {}).get(k) for k in ("p50_ms", "p99_ms", "max_ms"))]
         for b in s["bridges"]], left=3))
    parts.append('<p class="meta">Confirm latency: from a message\'s store-and-forward ENQUEUED to the target\'s '
                 "confirmation (the bridge's acknowledgement), never counted in the consumers' latency or "
                 f"throughput ({s['transport']['enqueued']:,} stored for forwarding, "
                 f"{s['transport']['acknowledged']:,} confirmed in the window).</p>")
    parts.append("<h2>Where messages ended up</h2>")
    parts.append(_table(["produced on", "ended on", "fate", "deliveries"],
                        [[r["produced_on_name"], r["ended_on_name"], r["fate"], r["count"]]
                         for r in s["message_ends"]], left=3))
    parts.append("<h2>Totals in the window</h2>")
    parts.append(_table(
        ["enqueued", "acknowledged", "redelivered", "expired", "dead-lettered", "removed"],
        [[t["enqueued"], t["acknowledged"], t["redelivered"], t["expired"], t["dead_lettered"], t["removed"]]],
        left=0,
    ))
    parts.append("<h2>Throughput per address</h2>")
    parts.append(_table(
        ["address", "messages", "enqueued", "acknowledged", "active s", "enq/s (active)", "enq/s (window)",
         "peak enq/s", "peak ack/s"],
        [[a["address"], a.get("messages", 0), a["enqueued"], a["acknowledged"], a["active_seconds"],
          a["enqueued_per_active_s"], a["enqueued_per_window_s"], a["peak_enqueued_per_s"],
          a["peak_acknowledged_per_s"]] for a in s["throughput"]["by_address"]],
    ))
    parts.append("<h2>Latency (enqueue → a consumer's acknowledge)</h2>")
    head = ["acks", "min ms", "p50 ms", "p90 ms", "p99 ms", "max ms", "mean ms"]

    def stats(r: dict) -> list:
        return [r["count"], r["min_ms"], r["p50_ms"], r["p90_ms"], r["p99_ms"], r["max_ms"], r["mean_ms"]]

    lat_rows = [[r["address"], *stats(r)] for r in s["latency_ms"]["by_address"]]
    if s["latency_ms"]["all"]:
        lat_rows.append(["(all)", *stats(s["latency_ms"]["all"])])
    parts.append(_table(["address", *head], lat_rows))
    parts.append(_table(["node", *head], [[r["node_name"], *stats(r)] for r in s["latency_ms"]["by_node"]]))
    parts.append("<h2>Distribution over nodes</h2>")
    parts.append(_table(
        ["address", "nodes", "total", "min/node", "max/node", "mean/node", "max ÷ mean", "cv", "per node"],
        [[d["address"], d["nodes"], d["total"], d["min"], d["max"], d["mean"], d["max_over_mean"], d["cv"],
          ", ".join(f"{k}: {v:,}" for k, v in d["per_node"].items())] for d in s["distribution"]],
    ))
    parts.append("<h2>Backlog (live, at report time)</h2>")
    # The routers' own store-and-forward queues are listed when they hold something (messages on
    # their way to another node); empty, they are noise: counted, in summary.json.
    shown = [b for b in s["backlog"] if b["messages"] or not b["queue"].startswith(INTERNAL_PREFIX)]
    parts.append(_table(
        ["node", "queue", "address", "messages", "bytes", "oldest waiting", "age s"],
        [[b["node_name"], b["queue"], b["address"], b["messages"], b["bytes"], iso(b["oldest_ms"]) or "–",
          b["oldest_age_s"]] for b in shown],
        left=3,
    ))
    if len(shown) < len(s["backlog"]):
        parts.append(f'<p class="meta" id="hidden-internal">{len(s["backlog"]) - len(shown)} empty store-and-forward '
                     f'queue(s) ({INTERNAL_PREFIX}*) not shown; summary.json lists every queue.</p>')
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
