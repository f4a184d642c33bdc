"""Queue dispatch (services/router/queue.py): a backlog no consumer selects
is not rescanned on every dispatch, parking keeps every message's place, and
consumer priority prefers the highest consumers with credit."""

from __future__ import annotations

from meshmq.selector import compile_selector
from meshmq.v1 import messages_pb2 as mpb
from services.router.message import Ref, ServerMessage
from services.router.queue import Queue


class CountingSelector:
    def __init__(self, text: str) -> None:
        self._selector = compile_selector(text)
        self.evaluations = 0

    def matches(self, lookup) -> bool:
        self.evaluations += 1
        return self._selector.matches(lookup)


class FakeConsumer:
    """What a queue reads of a consumer: readiness, filter, and where deliveries go."""

    def __init__(self, selector=None, priority: int = 0, credit: int = -1) -> None:
        self.selector = selector
        self.priority = priority
        self.closed = False
        self.credit = credit  # messages it may still take (-1: unlimited)
        self.got: list[bytes] = []

    @property
    def ready(self) -> bool:
        return self.credit != 0

    @ready.setter
    def ready(self, ready: bool) -> None:
        self.credit = -1 if ready else 0

    def deliver(self, ref: Ref) -> None:
        self.got.append(ref.msg.proto.body)
        if self.credit > 0:
            self.credit -= 1


def add(q: Queue, body: str, color: str, priority: int = 4) -> None:
    m = mpb.Message(address="q", body=body.encode(), priority=priority)
    m.properties["color"].string_value = color
    q.add(Ref(ServerMessage.of(m, 100), q))


def no_expiry(ref):  # pragma: no cover - nothing here expires
    raise AssertionError("nothing should expire")


def test_a_backlog_nobody_selects_is_examined_once_not_on_every_dispatch():
    q = Queue(1, "q", "q", mpb.ANYCAST, "", None, durable=False)
    for i in range(10_000):
        add(q, f"b{i}", "blue")
    red = FakeConsumer(CountingSelector("color = 'red'"))
    q.add_consumer(red)
    q.dispatch(no_expiry)
    first = red.selector.evaluations
    assert first == 10_000  # each message examined once, then parked
    for i in range(100):  # a steady trickle of sends, each followed by a dispatch
        add(q, f"x{i}", "blue")
        q.dispatch(no_expiry)
    assert red.selector.evaluations - first == 100  # only the new messages, not the backlog again
    add(q, "r", "red")
    q.dispatch(no_expiry)
    assert red.got == [b"r"]
    assert q.waiting == 10_100


def test_parked_messages_keep_their_place_when_a_consumer_that_takes_them_attaches():
    q = Queue(1, "q", "q", mpb.ANYCAST, "", None, durable=False)
    for i in range(5):
        add(q, f"m{i}", "blue" if i % 2 else "green")
    green_only = FakeConsumer(CountingSelector("color = 'green'"))
    q.add_consumer(green_only)
    q.dispatch(no_expiry)
    assert green_only.got == [b"m0", b"m2", b"m4"]  # the blue ones were parked, in order
    add(q, "m5", "blue")
    everyone = FakeConsumer()
    q.add_consumer(everyone)  # the parked ones return to their places, before m5
    green_only.closed = True
    q.consumers.remove(green_only)
    q.dispatch(no_expiry)
    assert everyone.got == [b"m1", b"m3", b"m5"]
    assert q.waiting == 0


def test_a_message_a_consumer_without_credit_would_take_is_not_parked():
    q = Queue(1, "q", "q", mpb.ANYCAST, "", None, durable=False)
    add(q, "m0", "red")
    red = FakeConsumer(CountingSelector("color = 'red'"))
    blue = FakeConsumer(CountingSelector("color = 'blue'"))
    red.ready = False
    q.add_consumer(red)
    q.add_consumer(blue)
    q.dispatch(no_expiry)  # blue has credit but does not want it; red wants it but has no credit
    assert blue.got == [] and red.got == []
    red.ready = True
    q.dispatch(no_expiry)  # no new consumer attached: it must still be found
    assert red.got == [b"m0"]


def test_purge_and_expiry_reach_parked_messages():
    q = Queue(1, "q", "q", mpb.ANYCAST, "", None, durable=False)
    for i in range(3):
        add(q, f"m{i}", "blue")
    q.add_consumer(FakeConsumer(CountingSelector("color = 'red'")))
    q.dispatch(no_expiry)
    assert [r.msg.proto.body for r in q.iter_waiting()] == [b"m0", b"m1", b"m2"]
    assert [r.msg.proto.body for r in q.take_all()] == [b"m0", b"m1", b"m2"]
    assert q.waiting == 0


def test_take_waiting_takes_in_delivery_order_across_parked_messages_and_leaves_the_rest_in_place():
    """An operator's move (message_moves.py) takes matching messages batch by
    batch; parked and unparked ones interleave by arrival, priority first."""
    q = Queue(1, "q", "q", mpb.ANYCAST, "", None, durable=False)
    for i in range(6):
        add(q, f"m{i}", "red" if i % 2 == 0 else "blue")
    add(q, "urgent", "red", priority=9)
    q.add_consumer(FakeConsumer(compile_selector("color = 'green'")))
    q.consumers[0].ready = True
    q.dispatch(no_expiry)  # parks everything: nobody takes them
    add(q, "m6", "red")  # waiting in the bucket, after the parked ones
    red = lambda ref: ref.msg.lookup("color") == "red"  # noqa: E731
    assert [r.msg.proto.body for r in q.take_waiting(red, 3)] == [b"urgent", b"m0", b"m2"]
    assert [r.msg.proto.body for r in q.take_waiting(red, 10)] == [b"m4", b"m6"]
    assert q.take_waiting(red, 10) == []
    assert q.waiting == 3
    assert [r.msg.proto.body for r in q.iter_waiting()] == [b"m1", b"m3", b"m5"]


def test_expired_messages_come_out_in_delivery_order_across_parked_messages_and_priorities():
    """The expiry reaper moves what remove_expired returns to the expiry
    address in that order: it must be the order the queue would deliver them."""
    q = Queue(1, "q", "q", mpb.ANYCAST, "", None, durable=False)
    for i in range(3):
        add(q, f"m{i}", "blue")
    add(q, "urgent", "blue", priority=9)
    q.add_consumer(FakeConsumer(compile_selector("color = 'green'")))
    q.dispatch(no_expiry)  # parks everything: nobody takes them
    add(q, "m3", "blue")  # waiting in the bucket, after the parked ones
    add(q, "keep", "blue")
    for ref in q.iter_waiting():
        ref.msg.expiration = 0 if ref.msg.proto.body == b"keep" else 1
    assert [r.msg.proto.body for r in q.remove_expired(now=2)] == [b"urgent", b"m0", b"m1", b"m2", b"m3"]
    assert q.waiting == 1 and [r.msg.proto.body for r in q.iter_waiting()] == [b"keep"]


def test_dispatch_says_when_it_parked_and_the_parked_ones_are_listed_in_order():
    """Redistribution moves what no local consumer takes: the parked messages
    (cluster/redistribution.py), learning of them from dispatch."""
    q = Queue(1, "q", "q", mpb.ANYCAST, "", None, durable=False)
    red = FakeConsumer(compile_selector("color = 'red'"))
    q.add_consumer(red)
    add(q, "r0", "red")
    assert q.dispatch(no_expiry) is None
    assert not q.has_parked
    for i in range(4):
        add(q, f"m{i}", "red" if i % 2 == 0 else "blue")
    add(q, "urgent", "blue", priority=9)
    assert [r.msg.proto.body for r in q.dispatch(no_expiry)] == [b"urgent", b"m1", b"m3"]
    assert red.got == [b"r0", b"m0", b"m2"]
    assert q.has_parked
    assert [r.msg.proto.body for r in q.iter_parked()] == [b"urgent", b"m1", b"m3"]
    q.remove_waiting({id(r) for r in q.iter_parked()})
    assert (q.has_parked, q.waiting) == (False, 0)
    assert q.dispatch(no_expiry) is None


def test_a_queue_with_no_consumer_parks_what_redistribution_left_and_each_keeps_its_place():
    q = Queue(1, "q", "q", mpb.ANYCAST, "", None, durable=False)
    for i in range(3):
        add(q, f"m{i}", "blue")
    q.park_all()
    assert (list(q.iter_unparked()), q.waiting) == ([], 3)
    add(q, "m3", "blue")
    assert [r.msg.proto.body for r in q.iter_unparked()] == [b"m3"]
    q.park_all()
    q.add_back(q.take_waiting(lambda r: r.msg.proto.body == b"m1", 1)[0])  # a delivery given back
    q.park_all()
    assert [r.msg.proto.body for r in q.iter_parked()] == [b"m0", b"m1", b"m2", b"m3"]
    q.add_consumer(FakeConsumer())
    q.dispatch(no_expiry)
    assert q.consumers[0].got == [b"m0", b"m1", b"m2", b"m3"]


def test_the_highest_priority_consumer_takes_everything_while_it_has_credit_then_the_next():
    # A local consumer (0) before network subscriptions (-5 one hop away, -6 two hops away).
    q = Queue(1, "q", "q", mpb.ANYCAST, "", None, durable=False)
    far, near, local = FakeConsumer(priority=-6), FakeConsumer(priority=-5, credit=3), FakeConsumer(credit=4)
    for c in (far, near, local):  # joined lowest first: the order they joined does not matter
        q.add_consumer(c)
    for i in range(10):
        add(q, f"m{i}", "blue")
    q.dispatch(no_expiry)
    assert local.got == [b"m0", b"m1", b"m2", b"m3"]
    assert near.got == [b"m4", b"m5", b"m6"]
    assert far.got == [b"m7", b"m8", b"m9"]


def test_consumers_of_one_priority_take_turns_and_a_higher_one_that_refuses_a_message_lets_it_down():
    q = Queue(1, "q", "q", mpb.ANYCAST, "", None, durable=False)
    red = FakeConsumer(compile_selector("color = 'red'"), priority=5)
    a, b = FakeConsumer(), FakeConsumer()
    for c in (a, red, b):
        q.add_consumer(c)
    for i, color in enumerate(["red", "blue", "blue", "red", "blue", "blue"]):
        add(q, f"m{i}", color)
    q.dispatch(no_expiry)
    assert red.got == [b"m0", b"m3"]
    assert a.got == [b"m1", b"m4"] and b.got == [b"m2", b"m5"]
