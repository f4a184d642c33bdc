"""The exactly-once audit on hand-made events (real Spark, no store)."""

from __future__ import annotations

import pytest

from spark import audit
from spark.metrics import ACKNOWLEDGED as ACK
from spark.metrics import DEAD_LETTERED, DELIVERED, ENQUEUED, EXPIRED, REMOVED
from tests.spark.frames import ev, events_frame

pytestmark = pytest.mark.integration

T0 = 1_800_000_000_000
WAITING_SCHEMA = "node_id STRING, message_id BIGINT, queue STRING"
SF_TO_B = "$.meshmq.sf.cc.nB"


def run(spark, events, waiting=(), since=T0, until=T0 + 10_000, report_nodes=None):
    frame = events_frame(spark, events)
    # Checkpointed: the assertions read it up to three times (rows, summary, offenders), one computation.
    audited = audit.audit(frame, since, until, spark.createDataFrame(list(waiting), WAITING_SCHEMA),
                          report_nodes=report_nodes).localCheckpoint()
    rows = {(r["root_node_id"], r["root_message_id"], r["queue"]): r.asDict() for r in audited.collect()}
    return rows, audited


def classes(rows: dict) -> dict:
    return {k[1]: (r["status"], r["anomaly"], r["fate"]) for k, r in rows.items()}


def every_kind_events() -> list[tuple]:
    """One message of every kind of anomaly and every explained state, on n1 (waiting: n1/7/a)."""
    return [
        ev(ENQUEUED, T0, mid=1), ev(ACK, T0 + 5, mid=1),                       # exactly once
        ev(ENQUEUED, T0, mid=2), ev(ACK, T0 + 5, mid=2), ev(ACK, T0 + 6, mid=2),        # acknowledged twice
        ev(ENQUEUED, T0, mid=3), ev(ENQUEUED, T0, mid=3), ev(ACK, T0 + 5, mid=3),       # enqueued twice
        ev(ACK, T0 + 5, mid=4, message_ts=T0 + 1),                                      # ack, no enqueue
        ev(DELIVERED, T0 + 5, mid=5, message_ts=T0 + 1),                       # delivered, no enqueue
        ev(ENQUEUED, T0, mid=6),                                                        # never, not waiting
        ev(ENQUEUED, T0, mid=7),                                                        # waiting
        ev(ENQUEUED, T0, mid=8), ev(EXPIRED, T0 + 9, mid=8),
        ev(ENQUEUED, T0, mid=9), ev(DEAD_LETTERED, T0 + 9, mid=9),
        ev(ENQUEUED, T0, mid=10), ev(REMOVED, T0 + 9, mid=10),                          # purged by an operator
        ev(ENQUEUED, T0, mid=11), ev(DELIVERED, T0 + 3, mid=11), ev(ACK, T0 + 4, mid=11),
        # an ack of a message accepted before the window: its ENQUEUED was not read, no anomaly
        ev(ACK, T0 + 5, mid=12, message_ts=T0 - 1000),
    ]


def test_every_kind_of_anomaly_and_every_explained_state(spark_session):
    events = every_kind_events()
    rows, audited = run(spark_session, events, waiting=[("n1", 7, "a")])
    assert classes(rows) == {
        1: ("EXACTLY_ONCE", None, "ACKNOWLEDGED"),
        2: ("ANOMALY", "ACKNOWLEDGED_MORE_THAN_ONCE", "ACKNOWLEDGED"),
        3: ("ANOMALY", "ENQUEUED_MORE_THAN_ONCE", "ACKNOWLEDGED"),
        4: ("ANOMALY", "ACKNOWLEDGED_WITHOUT_ENQUEUE", "ACKNOWLEDGED"),
        5: ("ANOMALY", "DELIVERED_WITHOUT_ENQUEUE", "UNACCOUNTED"),
        6: ("ANOMALY", "NEVER_ACKNOWLEDGED", "UNACCOUNTED"),
        7: ("EXPLAINED", None, "WAITING"),
        8: ("EXPLAINED", None, "EXPIRED"),
        9: ("EXPLAINED", None, "DEAD_LETTERED"),
        10: ("EXPLAINED", None, "REMOVED"),
        11: ("EXACTLY_ONCE", None, "ACKNOWLEDGED"),
    }
    assert rows["n1", 11, "a"]["redelivered"] == 1
    s = audit.summarize(audited)
    assert s == {
        "produced": 9, "exactly_once": 2, "explained": 4, "anomalous": 5, "crossed_nodes": 0, "moves": 0,
        "explained_by_fate": {"waiting": 1, "expired": 1, "dead_lettered": 1, "removed": 1, "forwarded": 0},
        "anomalies": {"acknowledged_without_enqueue": 1, "delivered_without_enqueue": 1,
                      "acknowledged_more_than_once": 1, "enqueued_more_than_once": 1, "never_acknowledged": 1},
        "copies": {"dead_lettered": 0, "expired": 0, "exactly_once": 0, "explained": 0, "anomalous": 0,
                   "explained_by_fate": {"waiting": 0, "expired": 0, "dead_lettered": 0, "removed": 0,
                                         "forwarded": 0}},
        "verdict": "red",
    }
    # offenders are the anomalies only, the worst first
    assert [r["message_id"] for r in audit.offenders(audited).collect()] == [4, 5, 2, 3, 6]


def test_explained_states_alone_leave_the_verdict_green(spark_session):
    events = [ev(ENQUEUED, T0, mid=1), ev(ACK, T0 + 1, mid=1), ev(ENQUEUED, T0, mid=2), ev(EXPIRED, T0 + 2, mid=2),
              ev(ENQUEUED, T0, mid=3)]
    _, audited = run(spark_session, events, waiting=[("n1", 3, "a")])
    s = audit.summarize(audited)
    assert (s["verdict"], s["anomalous"], s["explained"], s["exactly_once"]) == ("green", 0, 2, 1)


def test_the_key_is_the_message_and_its_queue(spark_session):
    events = [
        # one multicast message on two queues: each delivery needs its own ack
        ev(ENQUEUED, T0, mid=1, queue="s1"), ev(ENQUEUED, T0, mid=1, queue="s2"), ev(ACK, T0 + 1, mid=1, queue="s1"),
        # the same message id on another node is another message
        ev(ENQUEUED, T0, node="n2", mid=1, queue="s1"), ev(ACK, T0 + 1, node="n2", mid=1, queue="s1"),
        ev(ACK, T0 + 2, node="n2", mid=1, queue="s1"),
    ]
    rows, _ = run(spark_session, events)
    assert {k: (r["status"], r["anomaly"], r["fate"]) for k, r in rows.items()} == {
        ("n1", 1, "s1"): ("EXACTLY_ONCE", None, "ACKNOWLEDGED"),
        ("n1", 1, "s2"): ("ANOMALY", "NEVER_ACKNOWLEDGED", "UNACCOUNTED"),
        ("n2", 1, "s1"): ("ANOMALY", "ACKNOWLEDGED_MORE_THAN_ONCE", "ACKNOWLEDGED"),
    }


def test_acks_after_the_window_count_and_messages_enqueued_outside_it_are_not_audited(spark_session):
    until = T0 + 1000
    events = [
        ev(ENQUEUED, T0 + 999, mid=1), ev(ACK, T0 + 5000, mid=1),   # acked after --until: still exactly once
        ev(ENQUEUED, T0 - 1, mid=2), ev(ACK, T0 + 10, mid=2),        # produced before --since: not audited
    ]
    rows, _ = run(spark_session, events, until=until)
    assert list(rows) == [("n1", 1, "a")]
    assert rows["n1", 1, "a"]["status"] == "EXACTLY_ONCE"
    assert rows["n1", 1, "a"]["last_ack_ts"] == T0 + 5000


def forwarded(mid_a: int, mid_b: int, *, acks: int = 1, queue: str = "orders") -> list[tuple]:
    """Produced on nA, stored for nB, confirmed by nB, stored there with its origin, acknowledged."""
    return [
        ev(ENQUEUED, T0, node="nA", mid=mid_a, address="orders", queue=SF_TO_B),
        ev(ACK, T0 + 2, node="nA", mid=mid_a, address="orders", queue=SF_TO_B),
        ev(ENQUEUED, T0 + 1, node="nB", mid=mid_b, address="orders", queue=queue, came_from=("nA", mid_a)),
        *[ev(ACK, T0 + 3 + i, node="nB", mid=mid_b, address="orders", queue=queue) for i in range(acks)],
    ]


def test_a_forwarded_message_is_one_delivery_acknowledged_once(spark_session):
    rows, audited = run(spark_session, forwarded(1, 501) + forwarded(2, 502), report_nodes=["nA", "nB"])
    assert {k: (r["status"], r["node_id"], r["message_id"], r["crossed"]) for k, r in rows.items()} == {
        ("nA", 1, "orders"): ("EXACTLY_ONCE", "nB", 501, True),
        ("nA", 2, "orders"): ("EXACTLY_ONCE", "nB", 502, True),
    }
    s = audit.summarize(audited)
    assert (s["produced"], s["exactly_once"], s["crossed_nodes"], s["verdict"]) == (2, 2, 2, "green")


def test_a_message_forwarded_twice_and_delivered_twice_is_flagged(spark_session):
    twice = forwarded(1, 501) + [
        ev(ENQUEUED, T0 + 5, node="nB", mid=777, address="orders", queue="orders", came_from=("nA", 1)),
        ev(ACK, T0 + 6, node="nB", mid=777, address="orders", queue="orders"),
    ]
    rows, _ = run(spark_session, twice, report_nodes=["nA", "nB"])
    row = rows["nA", 1, "orders"]
    assert (row["status"], row["anomalies"], row["enqueued_events"], row["acknowledged"]) == (
        "ANOMALY", ["ACKNOWLEDGED_MORE_THAN_ONCE", "ENQUEUED_MORE_THAN_ONCE"], 2, 2)
    # both copies named, oldest first; the store-and-forward reference (transport) is not one
    assert [(c["node_id"], c["message_id"], c["acknowledged"], c["fate"]) for c in row["copies"]] == [
        ("nB", 501, 1, "ACKNOWLEDGED"), ("nB", 777, 1, "ACKNOWLEDGED")]


def dead_letter_events() -> list[tuple]:
    """Dead-letter and expiry copies on nA, one of a message also forwarded to nB (waiting: nA/50 and nA/52 on DLQ)."""
    return [
        # dead-lettered; its copy waits on DLQ
        ev(ENQUEUED, T0, node="nA", mid=1, address="orders"), ev(DEAD_LETTERED, T0 + 5, node="nA", mid=1, address="orders"),
        ev(ENQUEUED, T0 + 5, node="nA", mid=50, address="DLQ", came_from=("nA", 1)),
        # expired; its copy on the expiry queue was consumed
        ev(ENQUEUED, T0, node="nA", mid=2, address="orders"), ev(EXPIRED, T0 + 6, node="nA", mid=2, address="orders"),
        ev(ENQUEUED, T0 + 6, node="nA", mid=51, address="Expiry", came_from=("nA", 2)),
        ev(ACK, T0 + 9, node="nA", mid=51, address="Expiry"),
        # a multicast message stored here and forwarded (its store-and-forward copy names it: not a dead-letter
        # copy), then dead-lettered here
        ev(ENQUEUED, T0, node="nA", mid=3, address="news"),
        ev(ENQUEUED, T0, node="nA", mid=60, address="news", queue=SF_TO_B, came_from=("nA", 3)),
        ev(ACK, T0 + 2, node="nA", mid=60, address="news", queue=SF_TO_B),
        ev(ENQUEUED, T0 + 1, node="nB", mid=501, address="news", queue="news.b", came_from=("nA", 60)),
        ev(ACK, T0 + 3, node="nB", mid=501, address="news", queue="news.b"),
        ev(DEAD_LETTERED, T0 + 7, node="nA", mid=3, address="news"),
        ev(ENQUEUED, T0 + 7, node="nA", mid=52, address="DLQ", came_from=("nA", 3)),
    ]


def test_dead_letter_and_expiry_copies_are_linked_to_their_originals_and_counted_apart(spark_session):
    events = dead_letter_events()
    rows, audited = run(spark_session, events, waiting=[("nA", 50, "DLQ"), ("nA", 52, "DLQ")],
                        report_nodes=["nA", "nB"])
    assert {k: (r["status"], r["fate"], r["copy_of"], r["message_id"]) for k, r in rows.items()} == {
        ("nA", 1, "orders"): ("EXPLAINED", "DEAD_LETTERED", None, 1),
        ("nA", 1, "DLQ"): ("EXPLAINED", "WAITING", "DEAD_LETTERED", 50),
        ("nA", 2, "orders"): ("EXPLAINED", "EXPIRED", None, 2),
        ("nA", 2, "Expiry"): ("EXACTLY_ONCE", "ACKNOWLEDGED", "EXPIRED", 51),
        ("nA", 3, "news"): ("EXPLAINED", "DEAD_LETTERED", None, 3),
        ("nA", 3, "news.b"): ("EXACTLY_ONCE", "ACKNOWLEDGED", None, 501),
        ("nA", 3, "DLQ"): ("EXPLAINED", "WAITING", "DEAD_LETTERED", 52),
    }
    s = audit.summarize(audited)
    assert (s["produced"], s["exactly_once"], s["explained"], s["anomalous"], s["verdict"]) == (4, 1, 3, 0, "green")
    c = s["copies"]
    assert (c["dead_lettered"], c["expired"], c["exactly_once"], c["explained"], c["anomalous"]) == (2, 1, 1, 2, 0)
    assert c["explained_by_fate"]["waiting"] == 2


def never_arrived_events() -> list[tuple]:
    """Forwards from nA: confirmed by nB and not there, confirmed by nC (not in the report), waiting (nA/3)."""
    return [
        # confirmed by nB, whose store is in the report, and not there: lost
        ev(ENQUEUED, T0, node="nA", mid=1, queue=SF_TO_B), ev(ACK, T0 + 1, node="nA", mid=1, queue=SF_TO_B),
        # confirmed by nC, whose store is not in the report: it left the report
        ev(ENQUEUED, T0, node="nA", mid=2, queue="$.meshmq.sf.cc.nC"),
        ev(ACK, T0 + 1, node="nA", mid=2, queue="$.meshmq.sf.cc.nC"),
        # still waiting to be forwarded
        ev(ENQUEUED, T0, node="nA", mid=3, queue=SF_TO_B),
    ]


def test_forwards_that_never_arrived(spark_session):
    events = never_arrived_events()
    rows, _ = run(spark_session, events, waiting=[("nA", 3, SF_TO_B)], report_nodes=["nA", "nB"])
    assert classes(rows) == {
        1: ("ANOMALY", "NEVER_ACKNOWLEDGED", "UNACCOUNTED"),
        2: ("EXPLAINED", None, "FORWARDED"),
        3: ("EXPLAINED", None, "WAITING"),
    }


def scaled_down_events() -> list[tuple]:
    """Two messages scaled down from nA, one of them on to nC."""
    sd = "$.meshmq.sf.scale-down.nB"
    return [
        ev(ENQUEUED, T0, node="nA", mid=1, queue="jobs"),
        ev(REMOVED, T0 + 10, node="nA", mid=1, queue="jobs"), ev(ENQUEUED, T0 + 10, node="nA", mid=1, queue=sd),
        ev(ACK, T0 + 12, node="nA", mid=1, queue=sd),
        ev(ENQUEUED, T0 + 11, node="nB", mid=900, queue="jobs", came_from=("nA", 1)),
        ev(ACK, T0 + 20, node="nB", mid=900, queue="jobs"),
        # and a chain: nA -> nB -> nC, acknowledged on nC
        ev(ENQUEUED, T0, node="nA", mid=2, queue="jobs"),
        ev(REMOVED, T0 + 10, node="nA", mid=2, queue="jobs"), ev(ENQUEUED, T0 + 10, node="nA", mid=2, queue=sd),
        ev(ACK, T0 + 12, node="nA", mid=2, queue=sd),
        ev(ENQUEUED, T0 + 11, node="nB", mid=901, queue="jobs", came_from=("nA", 2)),
        ev(REMOVED, T0 + 30, node="nB", mid=901, queue="jobs"),
        ev(ENQUEUED, T0 + 30, node="nB", mid=901, queue="$.meshmq.sf.scale-down.nC"),
        ev(ACK, T0 + 31, node="nB", mid=901, queue="$.meshmq.sf.scale-down.nC"),
        ev(ENQUEUED, T0 + 31, node="nC", mid=5, queue="jobs", came_from=("nB", 901)),
        ev(ACK, T0 + 40, node="nC", mid=5, queue="jobs"),
    ]


def test_a_scaled_down_message_is_followed_to_its_new_node(spark_session):
    events = scaled_down_events()
    rows, audited = run(spark_session, events, report_nodes=["nA", "nB", "nC"])
    assert {k: (r["status"], r["node_id"], r["moves"], r["enqueued_events"]) for k, r in rows.items()} == {
        ("nA", 1, "jobs"): ("EXACTLY_ONCE", "nB", 1, 1),
        ("nA", 2, "jobs"): ("EXACTLY_ONCE", "nC", 2, 1),
    }
    assert audit.summarize(audited)["moves"] == 3


def test_bridge_traffic_per_link(spark_session):
    events = forwarded(1, 501) + forwarded(2, 502) + [ev(ENQUEUED, T0, node="nA", mid=3, queue=SF_TO_B)]
    refs = audit.references(events_frame(spark_session, events), T0, spark_session.createDataFrame([], WAITING_SCHEMA))
    rows = [r.asDict() for r in audit.bridge_traffic(refs, T0, T0 + 10_000).collect()]
    assert rows == [{"node_id": "nA", "cluster_connection": "cc", "target_node_id": "nB", "queued": 3,
                     "forwarded": 2, "arrived": 2, "waiting": 0}]


def test_bridge_confirm_latency_per_link(spark_session):
    events = [ev(ENQUEUED, T0 + 10, node="nA", mid=1, queue=SF_TO_B, message_ts=T0),
              ev(ACK, T0 + 14, node="nA", mid=1, queue=SF_TO_B, message_ts=T0),
              ev(ENQUEUED, T0 + 20, node="nA", mid=2, queue=SF_TO_B), ev(ACK, T0 + 30, node="nA", mid=2, queue=SF_TO_B),
              ev(ENQUEUED, T0, node="nA", mid=3, queue=SF_TO_B),  # not confirmed yet
              ev(ENQUEUED, T0, node="nA", mid=4, queue="orders"), ev(ACK, T0 + 99, node="nA", mid=4, queue="orders")]
    refs = audit.references(events_frame(spark_session, events), T0, spark_session.createDataFrame([], WAITING_SCHEMA))
    [row] = [r.asDict() for r in audit.bridge_latency(refs, T0, T0 + 10_000).collect()]
    # from the store-and-forward ENQUEUED (not the message's acceptance) to the confirmation
    assert (row["node_id"], row["cluster_connection"], row["target_node_id"]) == ("nA", "cc", "nB")
    assert (row["count"], row["min_ms"], row["p50_ms"], row["max_ms"], row["mean_ms"]) == (2, 4, 7.0, 10, 7.0)


def renamed(events: list[tuple], prefix: str) -> list[tuple]:
    """`events` with every node id prefixed (also where a store-and-forward queue's name ends with its
    target): event sets that share node ids and message ids, side by side."""
    def queue(q: str) -> str:
        if not q.startswith(audit.SF_PREFIX):
            return q
        head, _, target = q.rpartition(".")
        return f"{head}.{prefix}{target}"
    return [(e[0], prefix + e[1], *e[2:5], queue(e[5]), *e[6:8], None if e[8] is None else prefix + e[8], e[9])
            for e in events]


def test_a_delivery_of_one_reference_has_the_figures_the_grouping_gives(spark_session):
    # Every shape at once: a lone reference of every state and anomaly, forwards (one delivered twice),
    # dead-letter and expiry copies, moves down a chain. The audit groups only the references that can
    # share a delivery and computes the others row by row; the plain plan groups them all.
    events = (renamed(every_kind_events(), "k-") + renamed(forwarded(1, 501) + forwarded(2, 502), "f-")
              + renamed(dead_letter_events(), "d-") + renamed(scaled_down_events(), "s-")
              + renamed(never_arrived_events(), "n-")
              # moved from nA's orders2 to nB, where the message's reference on orders2 has only its
              # acknowledgement (no origin of its own): it still belongs to nA's delivery
              + renamed([ev(ENQUEUED, T0, node="nA", mid=1, queue="orders2"),
                         ev(REMOVED, T0 + 10, node="nA", mid=1, queue="orders2"),
                         ev(ENQUEUED, T0 + 11, node="nB", mid=501, queue="orders", came_from=("nA", 1)),
                         ev(ACK, T0 + 12, node="nB", mid=501, queue="orders2")], "e-")
              + renamed(forwarded(1, 501) + [
                  ev(ENQUEUED, T0 + 5, node="nB", mid=777, address="orders", queue="orders", came_from=("nA", 1)),
                  ev(ACK, T0 + 6, node="nB", mid=777, address="orders", queue="orders")], "t-"))
    waiting = [("k-n1", 7, "a"), ("d-nA", 50, "DLQ"), ("d-nA", 52, "DLQ"), ("n-nA", 3, "$.meshmq.sf.cc.n-nB")]
    nodes = [p + n for p in ("k-", "f-", "d-", "s-", "t-", "n-", "e-") for n in ("n1", "nA", "nB", "nC")]
    nodes.remove("n-nC")  # its forward left the report
    frame = events_frame(spark_session, events)
    keys = spark_session.createDataFrame(waiting, WAITING_SCHEMA)

    def rows(group_every_reference: bool) -> dict:
        audited = audit.audit(frame, T0, T0 + 10_000, keys, report_nodes=nodes,
                              group_every_reference=group_every_reference)
        collected = audited.collect()
        by_key = {(r["root_node_id"], r["root_message_id"], r["queue"]): r.asDict(recursive=True) for r in collected}
        assert len(by_key) == len(collected)  # one row per delivery
        return by_key

    fast, plain = rows(False), rows(True)
    assert fast == plain
    # 11 lone messages (the 12th was accepted before the window), 2 + 1 forwarded, 7 deliveries of the
    # copies' set, 2 scaled down, 3 forwards that never arrived, 2 of the moved message (orders2, orders)
    assert len(fast) == 28
    assert [(c["node_id"], c["message_id"]) for c in fast["e-nA", 1, "orders2"]["copies"]] == [
        ("e-nA", 1), ("e-nB", 501)]
    assert {r["status"] for r in fast.values()} == {"EXACTLY_ONCE", "EXPLAINED", "ANOMALY"}
    assert fast["n-nA", 2, "$.meshmq.sf.cc.n-nC"]["fate"] == "FORWARDED"
    assert [(c["node_id"], c["message_id"]) for c in fast["t-nA", 1, "orders"]["copies"]] == [
        ("t-nB", 501), ("t-nB", 777)]
