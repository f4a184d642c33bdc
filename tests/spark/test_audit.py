"""The exactly-once audit on hand-made events (real Spark, no store)."""

from __future__ import annotations

import pytest

from spark import audit
from spark.metrics import ACKNOWLEDGED as ACK
from spark.metrics import DEAD_LETTERED, ENQUEUED, EXPIRED, REMOVED
from tests.spark.frames import ev, events_frame

pytestmark = pytest.mark.integration

T0 = 1_800_000_000_000
WAITING_SCHEMA = "node_id STRING, message_id BIGINT, queue STRING"


def run(spark, events, waiting=(), since=T0, until=T0 + 10_000):
    frame = events_frame(spark, events)
    audited = audit.audit(frame, since, until, spark.createDataFrame(list(waiting), WAITING_SCHEMA))
    return {(r["node_id"], r["message_id"], r["queue"]): r.asDict() for r in audited.collect()}, audited


def test_each_produced_reference_gets_a_status_and_a_fate(spark_session):
    events = [
        ev(ENQUEUED, T0, mid=1), ev(ACK, T0 + 5, mid=1),                                  # exactly once
        ev(ENQUEUED, T0, mid=2), ev(ACK, T0 + 5, mid=2), ev(ACK, T0 + 6, mid=2),          # twice
        ev(ENQUEUED, T0, mid=3),                                                          # waiting
        ev(ENQUEUED, T0, mid=4), ev(EXPIRED, T0 + 9, mid=4),                              # expired
        ev(ENQUEUED, T0, mid=5), ev(DEAD_LETTERED, T0 + 9, mid=5),                        # dead-lettered
        ev(ENQUEUED, T0, mid=6), ev(REMOVED, T0 + 9, mid=6),                              # removed
        ev(ENQUEUED, T0, mid=7),                                                          # unaccounted
    ]
    got, audited = run(spark_session, events, waiting=[("n1", 3, "a")])
    assert {k[1]: (r["acknowledged"], r["status"], r["fate"]) for k, r in got.items()} == {
        1: (1, "EXACTLY_ONCE", "ACKNOWLEDGED"),
        2: (2, "MORE_THAN_ONCE", "ACKNOWLEDGED"),
        3: (0, "NEVER", "WAITING"),
        4: (0, "NEVER", "EXPIRED"),
        5: (0, "NEVER", "DEAD_LETTERED"),
        6: (0, "NEVER", "REMOVED"),
        7: (0, "NEVER", "UNACCOUNTED"),
    }
    assert audit.summarize(audited) == {
        "produced": 7, "exactly_once": 1, "never": 5, "more_than_once": 1,
        "never_by_fate": {"expired": 1, "dead_lettered": 1, "removed": 1, "waiting": 1, "unaccounted": 1},
    }
    worst_first = [(r["message_id"], r["status"], r["fate"]) for r in audit.offenders(audited).collect()]
    assert worst_first[:2] == [(2, "MORE_THAN_ONCE", "ACKNOWLEDGED"), (7, "NEVER", "UNACCOUNTED")]
    assert sorted(m for m, _, _ in worst_first[2:]) == [3, 4, 5, 6]


def test_the_key_is_node_message_and_queue(spark_session):
    events = [
        # one multicast message on two queues: each reference needs its own ack
        ev(ENQUEUED, T0, mid=1, queue="s1"), ev(ENQUEUED, T0, mid=1, queue="s2"), ev(ACK, T0 + 1, mid=1, queue="s1"),
        # the same message id on another node is another message
        ev(ENQUEUED, T0, node="n2", mid=1, queue="s1"), ev(ACK, T0 + 1, node="n2", mid=1, queue="s1"),
        ev(ACK, T0 + 2, node="n2", mid=1, queue="s1"),
    ]
    got, _ = run(spark_session, events)
    assert {k: r["status"] for k, r in got.items()} == {
        ("n1", 1, "s1"): "EXACTLY_ONCE",
        ("n1", 1, "s2"): "NEVER",
        ("n2", 1, "s1"): "MORE_THAN_ONCE",
    }


def test_acks_after_the_window_count_and_messages_enqueued_outside_it_are_not_audited(spark_session):
    until = T0 + 1000
    events = [
        ev(ENQUEUED, T0 + 999, mid=1), ev(ACK, T0 + 5000, mid=1),   # acked after --until: still exactly once
        ev(ENQUEUED, T0 - 1, mid=2), ev(ACK, T0 + 10, mid=2),        # produced before --since: not audited
    ]
    got, _ = run(spark_session, events, until=until)
    assert list(got) == [("n1", 1, "a")]
    assert got["n1", 1, "a"]["status"] == "EXACTLY_ONCE"
    assert got["n1", 1, "a"]["last_ack_ts"] == T0 + 5000
