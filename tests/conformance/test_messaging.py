"""Conformance: the everyday behaviour every SDK must show, on the worker's
shared router (each scenario on queues of its own): order, property types,
selectors, transactions, duplicate ids, a large message, and flow control
under a slow consumer. The driver (runner.py) is the SDK; the test process
checks the router's side with the Python SDK's management calls."""

from __future__ import annotations

import hashlib

import pytest

from meshmq.client.blocking import connect as blocking_connect
from tests.fixtures.nodes import wait_for

from .conftest import b64, body, unique
from .runner import DriverError

pytestmark = pytest.mark.integration

NOTHING_MORE_MS = 300  # a receive that must come back empty: the queue is known to be empty


@pytest.fixture(scope="module")
def admin(shared_router):
    """Management calls to the router, from the test process (not through the SDK under test)."""
    conn = blocking_connect(shared_router.url)
    yield conn.admin
    conn.close()


@pytest.fixture(scope="module")
def session(driver, shared_router):
    """One connection and session of the SDK under test, for the scenarios that need no other."""
    conn = driver.request("connect", uri=shared_router.url)["connection"]
    yield driver.request("session", connection=conn)["session"]
    driver.request("close", handle=conn)


def make_queue(driver, session, prefix: str) -> str:
    name = unique(prefix)
    driver.request("create_queue", session=session, address=name, queue=name)
    return name


def drain(driver, consumer: str, *, ack: bool = True, timeout_ms: int = 5000) -> list[dict]:
    """Every message the consumer gets until it comes back empty."""
    got = []
    while (m := driver.request("receive", consumer=consumer, timeout_ms=timeout_ms)["message"]) is not None:
        got.append(m)
        if ack:
            driver.request("ack", message=m["handle"])
        timeout_ms = NOTHING_MORE_MS  # everything was sent before the first one arrived
    return got


def count(admin, queue: str) -> int:
    return admin.queue(queue).message_count


def test_messages_arrive_in_the_order_they_were_sent(driver, session, admin):
    q = make_queue(driver, session, "conf.order")
    producer = driver.request("producer", session=session, address=q)["producer"]
    driver.request("send_many", producer=producer, count=200)
    consumer = driver.request("consumer", session=session, queue=q)["consumer"]
    got = drain(driver, consumer)
    assert [body(m) for m in got] == [str(i).encode() for i in range(200)]
    assert all(m["delivery_count"] == 1 and m["durable"] for m in got)
    wait_for(lambda: count(admin, q) == 0, 10, "the acks to remove every message")


def test_a_receive_waiting_for_a_message_does_not_hold_up_other_requests(driver, session):
    q = make_queue(driver, session, "conf.waiting")
    consumer = driver.request("consumer", session=session, queue=q)["consumer"]
    waiting = driver.submit("receive", consumer=consumer, timeout_ms=20000)
    producer = driver.request("producer", session=session, address=q)["producer"]
    driver.request("send", producer=producer, body=b64("wake up"))  # answered while the receive waits
    m = driver.wait(waiting)["message"]
    assert body(m) == b"wake up"
    driver.request("ack", message=m["handle"])


def test_properties_priority_and_durability_arrive_as_sent(driver, session):
    q = make_queue(driver, session, "conf.props")
    producer = driver.request("producer", session=session, address=q)["producer"]
    props = {"text": "héllo", "int": -(2**40), "float": 2.5, "flag": True, "off": False}
    driver.request("send", producer=producer, body=b64(b"\x00\xffbin"), properties=props, priority=7, durable=False)
    consumer = driver.request("consumer", session=session, queue=q)["consumer"]
    m = driver.request("receive", consumer=consumer, timeout_ms=5000)["message"]
    assert body(m) == b"\x00\xffbin" and m["size"] == 5
    assert m["sha256"] == hashlib.sha256(b"\x00\xffbin").hexdigest()
    assert m["properties"] == props
    # JSON keeps the kinds apart: an integer stays an integer, a boolean a boolean.
    assert [type(m["properties"][k]) for k in props] == [str, int, float, bool, bool]
    assert (m["priority"], m["durable"]) == (7, False)
    driver.request("ack", message=m["handle"])


def test_a_selector_delivers_only_the_messages_it_matches_and_leaves_the_rest(driver, session):
    q = make_queue(driver, session, "conf.selector")
    producer = driver.request("producer", session=session, address=q)["producer"]
    for i in range(12):
        driver.request("send", producer=producer, body=b64(str(i)),
                       properties={"n": i, "color": "red" if i % 3 == 0 else "blue"})
    picky = driver.request("consumer", session=session, queue=q, selector="color = 'red' AND n > 2")["consumer"]
    assert [body(m) for m in drain(driver, picky)] == [b"3", b"6", b"9"]
    driver.request("close", handle=picky)
    rest = driver.request("consumer", session=session, queue=q)["consumer"]
    assert [body(m) for m in drain(driver, rest)] == [str(i).encode() for i in range(12) if i not in (3, 6, 9)]


def test_a_multicast_address_gives_every_queue_on_it_its_own_copy(driver, session):
    address = unique("conf.topic")
    for sub in ("a", "b"):
        driver.request("create_queue", session=session, address=address, queue=f"{address}.{sub}", routing="multicast")
    producer = driver.request("producer", session=session, address=address)["producer"]
    driver.request("send_many", producer=producer, count=3)
    for sub in ("a", "b"):
        consumer = driver.request("consumer", session=session, queue=f"{address}.{sub}")["consumer"]
        assert [body(m) for m in drain(driver, consumer)] == [b"0", b"1", b"2"]


def test_transacted_sends_are_visible_only_at_commit_and_dropped_by_rollback(driver, shared_router, admin):
    conn = driver.request("connect", uri=shared_router.url)["connection"]
    try:
        tx = driver.request("session", connection=conn, transacted=True)["session"]
        q = make_queue(driver, tx, "conf.txsend")
        producer = driver.request("producer", session=tx, address=q)["producer"]
        for i in range(3):
            driver.request("send", producer=producer, body=b64(f"rolled-{i}"))
        assert count(admin, q) == 0  # confirmed into the transaction, not routed
        driver.request("rollback", session=tx)
        for i in range(3):
            driver.request("send", producer=producer, body=b64(f"kept-{i}"))
        assert count(admin, q) == 0
        driver.request("commit", session=tx)
        assert count(admin, q) == 3  # visible once the commit answered
        plain = driver.request("session", connection=conn)["session"]
        consumer = driver.request("consumer", session=plain, queue=q)["consumer"]
        assert [body(m) for m in drain(driver, consumer)] == [b"kept-0", b"kept-1", b"kept-2"]
    finally:
        driver.request("close", handle=conn)


def test_transacted_acks_take_effect_at_commit_and_a_rollback_redelivers(driver, shared_router, admin):
    conn = driver.request("connect", uri=shared_router.url)["connection"]
    try:
        plain = driver.request("session", connection=conn)["session"]
        q = make_queue(driver, plain, "conf.txack")
        producer = driver.request("producer", session=plain, address=q)["producer"]
        driver.request("send_many", producer=producer, count=3)
        tx = driver.request("session", connection=conn, transacted=True)["session"]
        consumer = driver.request("consumer", session=tx, queue=q)["consumer"]
        first = drain(driver, consumer)  # acked inside the transaction
        assert [body(m) for m in first] == [b"0", b"1", b"2"]
        assert count(admin, q) == 3
        driver.request("rollback", session=tx)
        again = drain(driver, consumer)
        assert [body(m) for m in again] == [b"0", b"1", b"2"]
        assert [m["delivery_count"] for m in again] == [2, 2, 2]  # JMSRedelivered
        assert count(admin, q) == 3  # the acks before the rollback removed nothing
        driver.request("commit", session=tx)
        assert count(admin, q) == 0  # the commit answered once the acks were stored
    finally:
        driver.request("close", handle=conn)


def test_only_a_message_the_application_was_handed_counts_as_a_delivery_attempt_when_it_goes_back(
    driver, shared_router
):
    """Given back by a rollback or by closing the consumer, the message the
    application received comes again with delivery_count 2; those the SDK had
    only buffered come with 1 (docs/protocol.md 6.5 and 8: last_handed_delivery_id)."""
    conn = driver.request("connect", uri=shared_router.url)["connection"]
    try:
        plain = driver.request("session", connection=conn)["session"]
        tx = driver.request("session", connection=conn, transacted=True)["session"]
        for way in ("rollback", "close"):
            q = make_queue(driver, plain, f"conf.handed-{way}")
            producer = driver.request("producer", session=plain, address=q)["producer"]
            driver.request("send_many", producer=producer, count=3)
            session = tx if way == "rollback" else plain
            consumer = driver.request("consumer", session=session, queue=q)["consumer"]
            first = driver.request("receive", consumer=consumer, timeout_ms=5000)["message"]
            assert (body(first), first["delivery_count"]) == (b"0", 1)
            if way == "rollback":
                driver.request("rollback", session=tx)
            else:
                driver.request("close", handle=consumer)
                consumer = driver.request("consumer", session=plain, queue=q)["consumer"]
            again = drain(driver, consumer)
            if way == "rollback":
                driver.request("commit", session=tx)
            assert [(body(m), m["delivery_count"]) for m in again] == [(b"0", 2), (b"1", 1), (b"2", 1)], way
    finally:
        driver.request("close", handle=conn)


def test_a_resend_with_the_same_duplicate_id_is_dropped_and_the_consumer_sees_one(driver, session, admin):
    q = make_queue(driver, session, "conf.dups")
    producer = driver.request("producer", session=session, address=q)["producer"]
    dup = unique("order")
    driver.request("send", producer=producer, body=b64("first"), duplicate_id=dup)
    refused = driver.error("send", producer=producer, body=b64("again"), duplicate_id=dup)
    assert refused.reason == "DUPLICATE_ID", refused
    driver.request("send", producer=producer, body=b64("other"), duplicate_id=dup + "-2")
    assert count(admin, q) == 2
    consumer = driver.request("consumer", session=session, queue=q)["consumer"]
    assert [body(m) for m in drain(driver, consumer)] == [b"first", b"other"]


def test_a_duplicate_id_is_refused_inside_a_transaction_and_released_by_its_rollback(driver, shared_router, admin):
    conn = driver.request("connect", uri=shared_router.url)["connection"]
    try:
        tx = driver.request("session", connection=conn, transacted=True)["session"]
        q = make_queue(driver, tx, "conf.txdups")
        producer = driver.request("producer", session=tx, address=q)["producer"]
        driver.request("send", producer=producer, body=b64("rolled back"), duplicate_id="tx-dup")
        # Claimed at once, though not stored before the commit: a second one is refused now.
        refused = driver.error("send", producer=producer, body=b64("twice"), duplicate_id="tx-dup")
        assert refused.reason == "DUPLICATE_ID", refused
        driver.request("rollback", session=tx)
        driver.request("send", producer=producer, body=b64("committed"), duplicate_id="tx-dup")  # released
        driver.request("commit", session=tx)
        assert count(admin, q) == 1
        plain = driver.request("session", connection=conn)["session"]
        consumer = driver.request("consumer", session=plain, queue=q)["consumer"]
        assert [body(m) for m in drain(driver, consumer)] == [b"committed"]
    finally:
        driver.request("close", handle=conn)


def test_a_large_message_arrives_whole(driver, session):
    size, seed = 3 * 1024 * 1024 + 17, 7
    q = make_queue(driver, session, "conf.large")
    producer = driver.request("producer", session=session, address=q)["producer"]
    driver.request("send_large", producer=producer, size=size, seed=seed, timeout=60)
    consumer = driver.request("consumer", session=session, queue=q)["consumer"]
    m = driver.request("receive", consumer=consumer, timeout_ms=20000, timeout=60)["message"]
    cycle = bytes((seed + i) % 251 for i in range(251))
    expected = (cycle * (size // 251 + 1))[:size]
    assert m["size"] == size and m["sha256"] == hashlib.sha256(expected).hexdigest()
    assert "body" not in m  # over 64 KiB: size and digest only
    driver.request("ack", message=m["handle"])
    assert driver.request("receive", consumer=consumer, timeout_ms=NOTHING_MORE_MS)["message"] is None


def test_a_slow_consumer_with_credit_1_holds_one_message_and_the_rest_stays_in_the_queue(driver, session, admin):
    q = make_queue(driver, session, "conf.slow")
    producer = driver.request("producer", session=session, address=q)["producer"]
    driver.request("send_many", producer=producer, count=10)
    consumer = driver.request("consumer", session=session, queue=q, credit=1)["consumer"]
    for i in range(4):
        m = driver.request("receive", consumer=consumer, timeout_ms=5000)["message"]
        assert body(m) == str(i).encode()
        info = admin.queue(q)
        # It holds the one it is working on; the router keeps the others for whoever asks.
        assert (info.message_count, info.delivering_count) == (10 - i, 1), info
        driver.request("ack", message=m["handle"])
        wait_for(lambda: count(admin, q) == 9 - i, 10, f"the ack of message {i}")
    info = admin.queue(q)
    assert (info.message_count, info.delivering_count, info.consumer_count) == (6, 0, 1), info
    driver.request("close", handle=consumer)
    # What it never asked for went to nobody: a new consumer gets it all, in order.
    other = driver.request("consumer", session=session, queue=q)["consumer"]
    assert [body(m) for m in drain(driver, other)] == [str(i).encode() for i in range(4, 10)]


def test_a_temporary_queue_lives_with_its_connection_and_only_its_connection_consumes_it(driver, shared_router, admin):
    """JMS createTemporaryQueue (docs/protocol.md 6.7): it outlives the session that made it,
    another session of the connection consumes what was sent to it, another connection is
    refused, delete() is refused while consumed, and it goes when the connection closes."""
    conn = driver.request("connect", uri=shared_router.url)["connection"]
    other = driver.request("connect", uri=shared_router.url)["connection"]
    try:
        first = driver.request("session", connection=conn)["session"]
        made = driver.request("create_temporary_queue", session=first)
        tq = made["queue"]
        info = admin.queue(tq)
        assert info is not None and info.temporary and not info.durable and info.address == tq, info
        sender = driver.request("session", connection=other)["session"]
        producer = driver.request("producer", session=sender, address=tq)["producer"]  # anyone may send to it
        driver.request("send_many", producer=producer, count=3, durable=False)
        driver.request("close", handle=first)  # the session that made it ends: the queue stays, with what it holds
        assert count(admin, tq) == 3
        second = driver.request("session", connection=conn)["session"]
        consumer = driver.request("consumer", session=second, queue=tq)["consumer"]
        assert [body(m) for m in drain(driver, consumer)] == [b"0", b"1", b"2"]
        assert driver.error("consumer", session=sender, queue=tq).reason == "PERMISSION_DENIED"
        # delete() is refused while one of the connection's consumers is on it
        assert driver.error("delete_temporary_queue", temporary_queue=made["temporary_queue"]).reason == "QUEUE_IN_USE"
        assert admin.queue(tq) is not None
        driver.request("close", handle=consumer)
        assert admin.queue(tq) is not None  # its last consumer left: still there
        driver.request("delete_temporary_queue", temporary_queue=made["temporary_queue"])
        assert admin.queue(tq) is None
        driver.request("delete_temporary_queue", temporary_queue=made["temporary_queue"])  # twice: nothing
        # one more, made through the connection; it goes with the connection
        kept = driver.request("create_temporary_queue", connection=conn)["queue"]
        assert admin.queue(kept).temporary
        driver.request("close", handle=conn)
        wait_for(lambda: admin.queue(kept) is None, 10, "the temporary queue to go with its connection")
    finally:
        for c in (conn, other):
            try:
                driver.request("close", handle=c)
            except DriverError:  # closed already (the Python driver forgets a closed handle)
                pass
