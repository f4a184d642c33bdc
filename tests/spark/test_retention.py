"""A report on a store whose oldest events event retention deleted: the window
starts where the store still has every event, so an acknowledgement whose
ENQUEUED was pruned is not called an anomaly, and the report says so."""

from __future__ import annotations

import pytest

from meshmq.v1 import journal_pb2 as jpb
from services.journal.store import JournalStore
from spark.report import run_report
from spark.window import Window
from tests.spark.workload import sqlite_url

pytestmark = pytest.mark.integration

T0 = 1_800_000_000_000
ENQUEUED, ACKNOWLEDGED = 1, 3


def pruned_store(url: str) -> None:
    """20 messages enqueued 100 ms apart from T0, all acknowledged from T0 + 5 s;
    then retention deletes everything before T0 + 1 s: the first ten ENQUEUED."""
    store = JournalStore(url)
    epoch = store.activate(store.open("pruned").epoch + 1)
    req = jpb.AppendRequest(request_id=1, epoch=epoch)
    for mid in range(20):
        sent = T0 + mid * 100
        req.events.add(kind=ENQUEUED, timestamp=sent, address="orders", queue="orders", message_id=mid + 1,
                       size=10, message_timestamp=sent)
        req.events.add(kind=ACKNOWLEDGED, timestamp=T0 + 5000 + mid * 10, address="orders", queue="orders",
                       message_id=mid + 1, size=10, delivery_count=1, message_timestamp=sent)
    prune = jpb.AppendRequest(request_id=2, epoch=epoch)
    prune.prune_events.before_ts, prune.prune_events.max_rows = T0 + 1000, 1000
    first, second = store.apply([req, prune])
    assert first.ok and second.pruned_events == 10
    store.close()


def test_a_window_reaching_before_the_retention_starts_at_it(spark_session, tmp_path):
    url = sqlite_url(tmp_path / "journal.db")
    pruned_store(url)
    s = run_report(spark_session, [url], tmp_path / "r", window=Window(T0, T0 + 10_000))
    a = s["audit"]
    # Messages 11..20 are whole; 1..10 have lost their ENQUEUED to retention and are outside the window.
    assert (a["produced"], a["exactly_once"], a["anomalous"], a["verdict"]) == (10, 10, 0, "green")
    # Throughput counts what happened in the window: 10 ENQUEUED, and all 20 acknowledgements.
    assert s["totals"]["enqueued"] == 10 and s["totals"]["acknowledged"] == 20
    assert any(n.startswith("the window starts at ") and "event retention deleted the events before it on pruned"
               in n for n in s["notes"]), s["notes"]
