"""Stores with known anomalies of each kind, on SQLite and PostgreSQL, made
by the journal's own code and filled with events as a broker would write them
(plus the corruptions): the audit must classify each exactly, the charts'
series must be zero over an idle gap, and the page must show the verdict and
the anomalies before the charts (rendered in headless chromium)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from spark.report import run_report
from tests.fixtures.browser import CHROMIUM, browser_session
from tests.spark.workload import sqlite_url

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "analytics"

T0 = 1_800_000_000_000  # a whole second
IDLE = range(3, 9)  # seconds 3..8 of the window: no event at all

#: message id -> the anomaly the audit must name
ANOMALIES = {
    31: "ENQUEUED_MORE_THAN_ONCE",
    32: "ACKNOWLEDGED_MORE_THAN_ONCE",
    33: "ACKNOWLEDGED_WITHOUT_ENQUEUE",
    34: "DELIVERED_WITHOUT_ENQUEUE",
    35: "NEVER_ACKNOWLEDGED",
}
#: message id -> its explained fate
EXPLAINED = {36: "WAITING", 37: "EXPIRED", 38: "DEAD_LETTERED", 39: "REMOVED"}


def events() -> list[tuple]:
    """(kind, ts, queue, message_id, delivery_count, message_ts): a busy
    first 3 s, 6 idle seconds, a busy last 2 s."""
    out = []

    def ev(kind, ts, mid, count=0, msg_ts=None, queue="orders"):
        out.append((kind, ts, queue, mid, count, ts if msg_ts is None else msg_ts))

    for mid in range(1, 31):  # seconds 0..2, each acknowledged 10 ms later
        ts = T0 + (mid - 1) * 100
        ev("ENQUEUED", ts, mid)
        ev("ACKNOWLEDGED", ts + 10, mid, 1, ts)
    ev("ENQUEUED", T0 + 50, 31), ev("ENQUEUED", T0 + 50, 31), ev("ACKNOWLEDGED", T0 + 60, 31, 1, T0 + 50)
    ev("ENQUEUED", T0 + 70, 32), ev("ACKNOWLEDGED", T0 + 80, 32, 1, T0 + 70), ev("ACKNOWLEDGED", T0 + 90, 32, 1,
                                                                                 T0 + 70)
    ev("ACKNOWLEDGED", T0 + 120, 33, 1, T0 + 100)
    ev("DELIVERED", T0 + 130, 34, 2, T0 + 100)
    ev("ENQUEUED", T0 + 140, 35)
    ev("ENQUEUED", T0 + 150, 36)
    ev("ENQUEUED", T0 + 160, 37, queue="short"), ev("EXPIRED", T0 + 400, 37, 0, T0 + 160, queue="short")
    ev("ENQUEUED", T0 + 170, 38), ev("DELIVERED", T0 + 300, 38, 2, T0 + 170)
    ev("DEAD_LETTERED", T0 + 310, 38, 2, T0 + 170)
    ev("ENQUEUED", T0 + 180, 39), ev("REMOVED", T0 + 500, 39, 0, T0 + 180)
    for mid in range(40, 60):  # seconds 9..10
        ts = T0 + 9_000 + (mid - 40) * 100
        ev("ENQUEUED", ts, mid)
        ev("ACKNOWLEDGED", ts + 20, mid, 1, ts)
    return sorted(out, key=lambda e: e[1])


def build_store(url: str) -> str:
    """The schema through the journal's own code, then the rows; returns the node id."""
    from sqlalchemy import text

    from services.journal.store import JournalStore

    store = JournalStore(url)
    node_id = store.open("anomalies").node_id
    rows = [{"node_id": node_id, "kind": k, "ts": ts, "queue": q, "message_id": mid, "count": c, "msg_ts": mts}
            for k, ts, q, mid, c, mts in events()]
    with store.engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO events (node_id, kind, ts, address, queue, message_id, size, delivery_count, message_ts) "
            "VALUES (:node_id, :kind, :ts, :queue, :queue, :message_id, 100, :count, :msg_ts)"), rows)
        conn.execute(text("INSERT INTO queues (queue_id, name, address, routing_type, filter, auto_created) "
                          "VALUES (1, 'orders', 'orders', 1, '', false), (2, 'short', 'short', 1, '', false)"))
        conn.execute(text(
            "INSERT INTO messages (message_id, address, size, timestamp, large, queue_id, delivery_count, data) "
            "VALUES (36, 'orders', 100, :ts, false, 1, 0, :data)"), {"ts": T0 + 150, "data": b""})
    store.close()
    return node_id


def assert_classified(s: dict, node_id: str) -> None:
    a = s["audit"]
    assert {o["message_id"]: o["anomaly"] for o in a["offenders"]} == ANOMALIES
    assert all(o["node_id"] == node_id and o["queue"] == "orders" for o in a["offenders"])
    assert [o["anomaly"] for o in a["offenders"]] == [  # the worst first
        "ACKNOWLEDGED_WITHOUT_ENQUEUE", "DELIVERED_WITHOUT_ENQUEUE", "ACKNOWLEDGED_MORE_THAN_ONCE",
        "ENQUEUED_MORE_THAN_ONCE", "NEVER_ACKNOWLEDGED"]
    assert a["anomalies"] == {k.lower(): 1 for k in ANOMALIES.values()}
    assert a["explained_by_fate"] == {"waiting": 1, "expired": 1, "dead_lettered": 1, "removed": 1, "forwarded": 0}
    assert (a["produced"], a["exactly_once"], a["explained"], a["anomalous"], a["verdict"]) == (57, 50, 4, 5, "red")


@pytest.fixture(scope="module")
def sqlite_report(spark_session, tmp_path_factory):
    root = tmp_path_factory.mktemp("anomalies")
    node_id = build_store(sqlite_url(root / "journal.db"))
    out = root / "report"
    return node_id, run_report(spark_session, [sqlite_url(root / "journal.db")], out, partitions=2), out


def test_the_audit_classifies_each_anomaly_on_sqlite(sqlite_report):
    node_id, s, out = sqlite_report
    assert_classified(s, node_id)


def test_the_audit_classifies_each_anomaly_on_postgresql(spark_session, pg_url, tmp_path):
    node_id = build_store(pg_url)
    assert_classified(run_report(spark_session, [pg_url], tmp_path / "r", partitions=2), node_id)


def test_the_series_are_zero_over_an_idle_gap_and_rates_say_what_they_divide_by(sqlite_report):
    _, s, _ = sqlite_report
    ts = s["timeseries"]
    assert ts["bucket_s"] == 1 and ts["t"][0] == T0 // 1000 and len(ts["t"]) == 11
    total = ts["total"]
    assert total["enqueued_per_s"] == [18, 10, 10, 0, 0, 0, 0, 0, 0, 10, 10]  # not the last value held
    for series in ("enqueued_per_s", "acknowledged_per_s", "redelivered_per_s", "expired_per_s",
                   "dead_lettered_per_s"):
        assert [total[series][i] for i in IDLE] == [0.0] * 6, series
    assert [total["p50_ms"][i] for i in IDLE] == [None] * 6  # no acknowledgement: no latency, not 0 ms
    assert total["p50_ms"][9] == pytest.approx(20) and total["p50_ms"][0] == pytest.approx(10)
    assert sum(total["enqueued_per_s"]) == 58  # 57 ENQUEUED + the doubled one
    assert total["dead_lettered_per_s"][0] == 1 and total["expired_per_s"][0] == 1
    # backlog at the end of each second: 36 waits from second 0 on, 35 enqueued twice counts too
    assert total["backlog"][-1] == 1 and all(b == total["backlog"][3] for b in (total["backlog"][i] for i in IDLE))
    assert list(ts["nodes"]) == ["anomalies"]
    assert ts["nodes"]["anomalies"]["enqueued_per_s"] == total["enqueued_per_s"]

    r = s["rates"]
    assert r["active_seconds"] == 5 and r["window_seconds"] == pytest.approx(s["window"]["seconds"])
    assert r["enqueued_per_active_s"] == pytest.approx(58 / 5)
    assert r["enqueued_per_window_s"] == pytest.approx(58 / s["window"]["seconds"])


def test_the_page_shows_the_verdict_and_anomalies_before_the_charts_in_chromium(sqlite_report):
    _, s, out = sqlite_report
    assert Path(CHROMIUM).exists(), "Debian's chromium is needed"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def steps(page) -> None:
        page.screenshot(path=str(ARTIFACTS / "report-anomalies.png"), full_page=True)
        verdict = page.locator("#verdict")
        assert "RED" in verdict.inner_text() and "5 message(s) not delivered exactly once" in verdict.inner_text()
        tops = {name: page.locator(sel).first.bounding_box()["y"] for name, sel in (
            ("verdict", "#verdict"), ("figures", "#key-figures"), ("anomalies", "#anomalies"),
            ("charts", "#charts"), ("first chart", "img"), ("tables", "#tables"))}
        assert list(tops) == sorted(tops, key=tops.get), tops
        assert tops["verdict"] < 200, tops  # at the top of the page, seen without scrolling
        rows = page.locator("tr.anomaly")
        assert rows.count() == 5
        assert rows.first.locator("td").first.evaluate("e => getComputedStyle(e).backgroundColor") == \
            "rgb(253, 231, 234)"
        # every chart decoded (a broken image has no natural width)
        widths = page.locator("img").evaluate_all("imgs => imgs.map(i => i.naturalWidth)")
        assert len(widths) == 5 and all(w > 0 for w in widths)

    browser_session((out / "report.html").as_uri(), steps)
    assert (ARTIFACTS / "report-anomalies.png").stat().st_size > 10_000
