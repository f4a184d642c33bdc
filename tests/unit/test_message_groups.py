"""The message-group decider (services/router/message_groups.py) on a bare
queue: pinning, closing by sequence -1, a closed consumer's groups, waiting
for a busy group consumer without blocking the others, buckets, rebalance,
group-first-key, and which queues group at all."""

from __future__ import annotations

from meshmq.v1 import messages_pb2 as mpb
from services.router import message_groups
from services.router.message import Ref, ServerMessage
from services.router.queue import INTERNAL, Queue, QueueAttributes


class FakeConsumer:
    def __init__(self, credit: int = -1, priority: int = 0) -> None:
        self.selector = None
        self.priority = priority
        self.closed = False
        self.credit = credit
        self.got: list[str] = []
        self.first: list[str] = []

    @property
    def ready(self) -> bool:
        return not self.closed and self.credit != 0

    def deliver(self, ref: Ref) -> None:
        self.got.append(ref.msg.proto.body.decode())
        if self.credit > 0:
            self.credit -= 1

    def deliver_first(self, ref: Ref, key: str) -> None:
        self.deliver(ref)
        self.first.append(ref.msg.proto.body.decode())


def grouped_queue(**attributes) -> Queue:
    q = Queue(1, "q", "q", mpb.ANYCAST, "", None, durable=False)
    message_groups.install(q, QueueAttributes(**attributes))
    return q


def add(q: Queue, body: str, group: str = "", seq: int = 0) -> None:
    q.add(Ref(ServerMessage.of(mpb.Message(address="q", body=body.encode(), priority=4, group_id=group,
                                        group_seq=seq), 10), q))


def dispatch(q: Queue) -> None:
    q.dispatch(lambda ref: None)


def test_a_group_is_pinned_to_the_consumer_its_first_message_went_to():
    q = grouped_queue()
    a, b = FakeConsumer(), FakeConsumer()
    q.add_consumer(a)
    q.add_consumer(b)
    for i in range(3):
        for g in ("x", "y", "z"):
            add(q, f"{g}{i}", g)
    dispatch(q)
    assert a.got == ["x0", "z0", "x1", "z1", "x2", "z2"] and b.got == ["y0", "y1", "y2"]
    assert q.groups.count == 3


def test_ungrouped_messages_keep_plain_round_robin_beside_groups():
    q = grouped_queue()
    a, b = FakeConsumer(), FakeConsumer()
    q.add_consumer(a)
    q.add_consumer(b)
    for body in ("p0", "p1", "p2", "p3"):
        add(q, body)
    dispatch(q)
    assert a.got == ["p0", "p2"] and b.got == ["p1", "p3"] and q.groups.count == 0


def test_sequence_minus_one_goes_to_the_group_consumer_then_closes_the_group():
    q = grouped_queue()
    a, b = FakeConsumer(), FakeConsumer()
    q.add_consumer(a)
    q.add_consumer(b)
    add(q, "g1", "g", 1)
    add(q, "g-end", "g", -1)
    add(q, "g-new", "g", 1)
    dispatch(q)
    assert a.got == ["g1", "g-end"] and b.got == ["g-new"]


def test_a_busy_group_consumer_holds_its_group_back_but_not_the_others():
    q = grouped_queue()
    a, b = FakeConsumer(credit=1), FakeConsumer()
    q.add_consumer(a)
    q.add_consumer(b)
    add(q, "x0", "x")  # pins x to a, which then has no credit
    add(q, "x1", "x")
    add(q, "y0", "y")
    add(q, "x2", "x")
    dispatch(q)
    assert a.got == ["x0"] and b.got == ["y0"]
    assert [r.msg.proto.body for r in q.iter_waiting()] == [b"x1", b"x2"]  # waiting, in order
    a.credit = -1
    dispatch(q)
    assert a.got == ["x0", "x1", "x2"]


def test_no_consumer_with_credit_stops_the_dispatch():
    q = grouped_queue()
    a = FakeConsumer(credit=1)
    q.add_consumer(a)
    add(q, "x0", "x")
    add(q, "x1", "x")
    assert q.pick_grouped(q._buckets[4][0]) is a
    dispatch(q)
    assert q.pick_grouped(q._buckets[4][0]) is message_groups.NO_CREDIT


def test_a_closed_consumers_groups_pin_afresh_in_order():
    q = grouped_queue()
    a, b = FakeConsumer(), FakeConsumer()
    q.add_consumer(a)
    q.add_consumer(b)
    add(q, "x0", "x")
    dispatch(q)
    a.closed = True
    q.consumers.remove(a)
    add(q, "x1", "x")
    add(q, "x2", "x")
    dispatch(q)
    assert b.got == ["x1", "x2"] and q.groups.pins == {"x": b}


def test_drop_closed_forgets_only_the_closed_consumers_pins():
    q = grouped_queue()
    a, b = FakeConsumer(), FakeConsumer()
    q.add_consumer(a)
    q.add_consumer(b)
    add(q, "x0", "x")
    add(q, "y0", "y")
    dispatch(q)
    a.closed = True
    q.groups.drop_closed()
    assert q.groups.pins == {"y": b}


def test_buckets_bound_the_pins_and_groups_of_one_bucket_share_a_consumer():
    q = grouped_queue(group_buckets=1)
    a, b = FakeConsumer(), FakeConsumer()
    q.add_consumer(a)
    q.add_consumer(b)
    for g in ("x", "y", "z"):
        add(q, g, g)
    dispatch(q)
    assert a.got == ["x", "y", "z"] and not b.got and q.groups.count == 1
    assert message_groups.bucket_of("x", 8) == message_groups.bucket_of("x", 8) < 8


def test_rebalance_resets_the_pins_when_a_consumer_joins():
    q = grouped_queue(group_rebalance=True)
    a = FakeConsumer()
    q.add_consumer(a)
    add(q, "x0", "x")
    add(q, "y0", "y")
    dispatch(q)
    assert q.groups.count == 2
    b = FakeConsumer()
    q.add_consumer(b)
    assert q.groups.count == 0


def test_rebalance_with_pause_dispatch_waits_for_the_in_flight_messages():
    q = grouped_queue(group_rebalance=True, group_rebalance_pause_dispatch=True)
    a = FakeConsumer()
    q.add_consumer(a)
    add(q, "x0", "x")
    dispatch(q)
    q.delivering = 1  # x0 not yet acknowledged
    b = FakeConsumer()
    q.add_consumer(b)
    add(q, "x1", "x")
    dispatch(q)
    assert a.got == ["x0"] and not b.got  # paused
    q.delivering = 0
    dispatch(q)
    assert len(a.got + b.got) == 2


def test_group_first_key_marks_the_first_message_per_pin():
    q = grouped_queue(group_first_key="JMSXGroupFirstForConsumer")
    a, b = FakeConsumer(), FakeConsumer()
    q.add_consumer(a)
    q.add_consumer(b)
    for body, g in (("x0", "x"), ("y0", "y"), ("x1", "x"), ("y1", "y")):
        add(q, body, g)
    dispatch(q)
    assert a.first == ["x0"] and b.first == ["y0"]


def test_first_of_group_is_a_copy_with_the_key_set():
    m = mpb.Message(address="q", body=b"b", group_id="g")
    ref = Ref(ServerMessage.of(m, 10), None, 2)
    shown = message_groups.FirstOfGroup(ref, "K")
    assert shown.msg.proto.properties["K"].bool_value and "K" not in m.properties
    assert shown.delivery_count == 2


def test_which_queues_group():
    assert message_groups.groups_on(QueueAttributes())
    assert not message_groups.groups_on(QueueAttributes(group_buckets=0))
    assert not message_groups.groups_on(QueueAttributes(exclusive=True))
    assert not message_groups.groups_on(QueueAttributes(non_destructive=True))
    assert not message_groups.groups_on(INTERNAL)
    q = grouped_queue(group_buckets=0)
    assert q.groups is None and q.pick_grouped == q.pick
