"""Named subscriptions on a real router, as JMS 2.0 and Artemis have them
(services/router/subscriptions.py): durable ones qualified by the client id
(`clientID.subscriptionName`), shared durable and shared non-durable ones,
and unsubscribe."""

from __future__ import annotations

import pytest

from meshmq.client import connect
from meshmq.errors import MeshMQError, Reason
from tests.fixtures.nodes import eventually
from tests.integration.shared import receive_all, uniq

pytestmark = pytest.mark.integration


@pytest.fixture
async def client(shared_router):
    """connect(client_id): a connection with that client id, closed at the end."""
    opened = []

    async def open_(client_id: str = ""):
        c = await connect(shared_router.url + (f"?clientID={client_id}" if client_id else ""))
        opened.append(c)
        return c

    yield open_
    for c in opened:
        await c.close()


async def _publish(conn, address: str, n: int, start: int = 0) -> None:
    p = await (await conn.session()).create_producer(address)
    for i in range(start, start + n):
        await p.send(b"m%d" % i, routing_type="multicast")


async def _refused(reason: Reason, coro) -> str:
    with pytest.raises(MeshMQError) as exc:
        await coro
    assert exc.value.reason is reason, exc.value
    return str(exc.value)


async def test_a_durable_subscription_is_qualified_by_the_client_id(client):
    topic = uniq("subs.news")
    one, two = await client("app-one"), await client("app-two")
    a = await (await one.session()).create_consumer(address=topic, subscription="archive")
    b = await (await two.session()).create_consumer(address=topic, subscription="archive")
    assert (a.queue, b.queue) == ("app-one.archive", "app-two.archive")
    await _publish(one, topic, 3)
    for c in (a, b):  # two subscriptions: each gets every message
        got = await receive_all(c, 3)
        assert [m.body for m in got] == [b"m0", b"m1", b"m2"]
        for m in got:
            m.ack()
        await c.close()
    await (await one.session()).unsubscribe("archive")
    await (await two.session()).unsubscribe("archive")


async def test_an_unshared_durable_subscription_needs_a_client_id_and_takes_one_consumer(client):
    topic = uniq("subs.single")
    anonymous = await client()
    why = await _refused(Reason.INVALID_REQUEST,
                         (await anonymous.session()).create_consumer(address=topic, subscription="solo"))
    assert "client id" in why
    app = await client("app-solo")
    first = await (await app.session()).create_consumer(address=topic, subscription="solo")
    await _refused(Reason.QUEUE_IN_USE, (await app.session()).create_consumer(address=topic, subscription="solo"))
    await first.close()
    await (await app.session()).unsubscribe("solo")


async def test_a_durable_subscription_keeps_messages_until_unsubscribed(client):
    topic = uniq("subs.keep")
    app = await client("app-keep")
    s = await app.session()
    await (await s.create_consumer(address=topic, subscription="later")).close()
    await _publish(app, topic, 4)
    assert (await app.admin.queue("app-keep.later")).message_count == 4
    c = await s.create_consumer(address=topic, subscription="later")
    await _refused(Reason.QUEUE_IN_USE, s.unsubscribe("later"))  # while it has a consumer
    got = await receive_all(c, 2)
    assert [m.body for m in got] == [b"m0", b"m1"]
    for m in got:
        m.ack()
    await c.close()
    await eventually(lambda: _count(app, "app-keep.later", 2), 5, "the two unacknowledged messages back")
    assert await s.unsubscribe("later") == 2
    assert await app.admin.queue("app-keep.later") is None
    await _refused(Reason.QUEUE_NOT_FOUND, s.unsubscribe("later"))


async def test_changing_an_idle_durable_subscriptions_filter_replaces_it(client):
    topic = uniq("subs.change")
    app = await client("app-change")
    s = await app.session()
    await (await s.create_consumer(address=topic, subscription="f")).close()
    await _publish(app, topic, 2)
    c = await s.create_consumer(address=topic, subscription="f", filter="color = 'red'")
    info = await app.admin.queue("app-change.f")
    assert (info.filter, info.message_count) == ("color = 'red'", 0)  # the old one went with its messages
    other = await client("app-change")
    await _refused(Reason.QUEUE_IN_USE, (await other.session()).create_consumer(
        address=topic, subscription="f", shared=True))  # not while it has a consumer
    await c.close()
    await s.unsubscribe("f")


async def test_a_shared_durable_subscription_gives_each_message_to_one_of_its_consumers(client):
    topic = uniq("subs.shared")
    one, two = await client(), await client()  # different connections, no client id
    a = await (await one.session()).create_consumer(address=topic, subscription="workers", shared=True)
    b = await (await two.session()).create_consumer(address=topic, subscription="workers", shared=True)
    assert a.queue == b.queue == "workers"
    await _publish(one, topic, 10)
    got: dict[str, list[bytes]] = {"a": [], "b": []}

    async def take():
        for name, c in (("a", a), ("b", b)):
            while (m := await c.receive(0.05)) is not None:
                got[name].append(m.body)
                m.ack()
        return len(got["a"]) + len(got["b"]) >= 10

    await eventually(take, 10, "the 10 messages between the two consumers")
    assert sorted(got["a"] + got["b"]) == sorted(b"m%d" % i for i in range(10)), got  # each once
    assert got["a"] and got["b"], got  # shared, not one consumer taking all
    await a.close()
    await b.close()
    await _publish(one, topic, 2, start=10)  # durable: kept with no consumer
    assert (await one.admin.queue("workers")).message_count == 2
    assert await (await one.session()).unsubscribe("workers") == 2


async def test_a_shared_subscription_with_a_client_id_is_qualified_by_it(client):
    topic = uniq("subs.sharedid")
    one, two = await client("app-sh"), await client("app-sh")
    a = await (await one.session()).create_consumer(address=topic, subscription="s", shared=True)
    b = await (await two.session()).create_consumer(address=topic, subscription="s", shared=True)
    assert a.queue == b.queue == "app-sh.s"
    await a.close()
    await b.close()
    await (await one.session()).unsubscribe("s")


async def test_a_shared_non_durable_subscription_lives_while_it_has_consumers(client):
    topic = uniq("subs.nondurable")
    one, two = await client(), await client()
    a = await (await one.session()).create_consumer(address=topic, subscription="live", shared=True, durable=False)
    b = await (await two.session()).create_consumer(address=topic, subscription="live", shared=True, durable=False)
    assert a.queue == b.queue == "nonDurable.live"
    info = await one.admin.queue("nonDurable.live")
    assert not info.durable and info.consumer_count == 2
    await _publish(one, topic, 4)
    first = await receive_all(a, 4, timeout=0.5) + await receive_all(b, 4, timeout=0.5)
    assert sorted(m.body for m in first) == [b"m0", b"m1", b"m2", b"m3"]
    for m in first:
        m.ack()
    await a.close()
    assert await one.admin.queue("nonDurable.live") is not None  # b is still there
    await b.close()
    await eventually(lambda: _gone(one, "nonDurable.live"), 5, "the shared non-durable subscription to go")
    await _refused(Reason.INVALID_REQUEST, (await one.session()).create_consumer(
        address=topic, subscription="x", durable=False))  # a named non-durable one must be shared


async def _count(conn, q: str, n: int) -> bool:
    info = await conn.admin.queue(q)
    return info is not None and info.message_count == n


async def _gone(conn, q: str) -> bool:
    return await conn.admin.queue(q) is None
