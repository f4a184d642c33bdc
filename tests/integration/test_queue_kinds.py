"""Last-value, non-destructive and exclusive queues (Artemis's queue
attributes) on real routers: created by the management API, by the config
file and by address-settings defaults, and kept across a restart."""

from __future__ import annotations


import pytest

from meshmq.client import connect
from meshmq.errors import MeshMQError, Reason
from tests.fixtures.nodes import eventually
from tests.integration.shared import receive_all, uniq

pytestmark = pytest.mark.integration


async def test_last_value_queue_keeps_the_newest_per_key_beside_ordinary_messages(conn):
    q = uniq("lvq")
    info = await conn.admin.create_queue(q, last_value_key="symbol")
    assert (info.last_value_key, info.non_destructive, info.exclusive) == ("symbol", False, False)
    s = await conn.session()
    p = await s.create_producer(q)
    for body, symbol in ((b"ACME 1", "ACME"), (b"INIT 1", "INIT"), (b"ACME 2", "ACME"), (b"plain", None),
                         (b"plain", None), (b"ACME 3", "ACME")):
        await p.send(body, properties={"symbol": symbol} if symbol else {}, routing_type="anycast")
    info = await conn.admin.queue(q)
    assert (info.messages_added, info.message_count) == (6, 4)
    c = await s.create_consumer(q)
    got = await receive_all(c, 4)
    assert [m.body for m in got] == [b"INIT 1", b"plain", b"plain", b"ACME 3"]
    assert await c.receive(0.2) is None
    # a key of another type is another value: 1 (int) and "1" (string) both stay
    await p.send(b"int", properties={"symbol": 1}, routing_type="anycast")
    await p.send(b"str", properties={"symbol": "1"}, routing_type="anycast")
    assert [m.body for m in await receive_all(c, 2)] == [b"int", b"str"]
    assert (await conn.admin.list_queues(address=q))[0].last_value_key == "symbol"


async def test_a_message_being_delivered_is_not_replaced_and_an_older_value_returned_is_dropped(conn):
    q = uniq("lvq-back")
    await conn.admin.create_queue(q, last_value_key="k")
    s = await conn.session()
    p = await s.create_producer(q)
    await p.send(b"v1", properties={"k": "a"}, routing_type="anycast")
    c = await s.create_consumer(q)
    first = await c.receive(5)
    assert first.body == b"v1"
    await p.send(b"v2", properties={"k": "a"}, routing_type="anycast")  # v1 is out: both are counted
    second = await c.receive(5)
    assert second.body == b"v2"
    first.nack()  # v1 comes back while a newer value of its key is there: dropped
    second.nack()
    again = await c.receive(5)
    assert again.body == b"v2" and again.delivery_count == 2
    assert await c.receive(0.3) is None
    again.ack()
    await eventually(lambda: _count(conn, q, 0), 5, "the last-value queue to be empty")


async def _count(conn, q: str, n: int) -> bool:
    return (await conn.admin.queue(q)).message_count == n


async def test_non_destructive_queue_every_consumer_reads_everything_and_an_ack_keeps_it(conn):
    q = uniq("nd")
    info = await conn.admin.create_queue(q, non_destructive=True)
    assert info.non_destructive and not info.last_value_key
    s = await conn.session()
    p = await s.create_producer(q)
    for i in range(3):
        await p.send(f"m{i}".encode(), routing_type="anycast")
    c1, c2 = await s.create_consumer(q), await s.create_consumer(q)
    received = []
    for c in (c1, c2):
        got = await receive_all(c, 3)
        assert [m.body for m in got] == [b"m0", b"m1", b"m2"]
        assert all(m.delivery_count == 1 for m in got)  # each consumer's own count
        received += got
    # while both hold them unacknowledged, the queue still shows each message once, waiting
    browsed = await conn.admin.browse(q)
    assert [(m.message.body, m.state) for m in browsed.messages] == [(b"m0", "waiting"), (b"m1", "waiting"),
                                                                     (b"m2", "waiting")]
    assert browsed.total == 3
    for m in received:
        m.ack()
    await eventually(lambda: _acked(conn, q, 6), 5, "six acks counted")
    info = await conn.admin.queue(q)
    assert (info.message_count, info.delivering_count) == (3, 0)
    await p.send(b"m3", routing_type="anycast")
    assert [m.body for m in await receive_all(c1, 1)] == [b"m3"]
    assert [m.body for m in await receive_all(c2, 1)] == [b"m3"]
    late = await s.create_consumer(q)  # starts at the head
    assert [m.body for m in await receive_all(late, 4)] == [b"m0", b"m1", b"m2", b"m3"]
    # closing a consumer with unacked deliveries returns nothing twice
    await c1.close()
    assert await c2.receive(0.3) is None
    assert await conn.admin.purge_queue(q) == 4
    assert (await conn.admin.queue(q)).message_count == 0


async def _acked(conn, q: str, n: int) -> bool:
    return (await conn.admin.queue(q)).messages_acknowledged == n


async def test_last_value_and_non_destructive_make_a_latest_value_cache(conn):
    q = uniq("cache")
    await conn.admin.create_queue(q, last_value_key="symbol", non_destructive=True)
    s = await conn.session()
    p = await s.create_producer(q)
    await p.send(b"ACME 1", properties={"symbol": "ACME"}, routing_type="anycast")
    await p.send(b"INIT 1", properties={"symbol": "INIT"}, routing_type="anycast")
    reader = await s.create_consumer(q)
    for m in await receive_all(reader, 2):
        m.ack()
    await p.send(b"ACME 2", properties={"symbol": "ACME"}, routing_type="anycast")
    update = await reader.receive(5)
    assert update.body == b"ACME 2"  # a reader sees every update
    update.ack()
    late = await s.create_consumer(q)  # a new reader gets the latest value of each key
    assert [m.body for m in await receive_all(late, 2)] == [b"INIT 1", b"ACME 2"]
    assert await late.receive(0.2) is None
    assert (await conn.admin.queue(q)).message_count == 2


async def test_exclusive_queue_one_consumer_receives_until_it_closes(conn):
    q = uniq("excl")
    info = await conn.admin.create_queue(q, exclusive=True)
    assert info.exclusive
    s = await conn.session()
    first = await s.create_consumer(q)
    second = await s.create_consumer(q)
    p = await s.create_producer(q)
    for i in range(4):
        await p.send(f"m{i}".encode(), routing_type="anycast")
    got = await receive_all(first, 4)
    assert [m.body for m in got] == [b"m0", b"m1", b"m2", b"m3"]
    assert await second.receive(0.3) is None
    got[0].ack()
    await first.close()  # m1..m3 come back: the next consumer takes over
    taken = await receive_all(second, 3)
    assert [m.body for m in taken] == [b"m1", b"m2", b"m3"]
    await p.send(b"m4", routing_type="anycast")
    assert (await second.receive(5)).body == b"m4"


async def test_address_settings_defaults_make_auto_created_queues_of_each_kind(conn):
    s = await conn.session()
    p = await s.create_producer()
    lvq, nd, excl = uniq("kinds-lvq"), uniq("kinds-nd"), uniq("kinds-excl")
    for address in (lvq, nd, excl):
        await p.send(b"x", address=address, properties={"symbol": "A"}, routing_type="anycast")
    await p.send(b"y", address=lvq, properties={"symbol": "A"}, routing_type="anycast")
    kinds = {q.name: (q.last_value_key, q.non_destructive, q.exclusive) for q in await conn.admin.list_queues()}
    assert kinds[lvq] == ("symbol", False, False)
    assert kinds[nd] == ("", True, False)
    assert kinds[excl] == ("", False, True)
    assert (await conn.admin.queue(lvq)).message_count == 1
    # a queue created with the attribute given explicitly overrides the default
    explicit = uniq("kinds-nd")
    assert not (await conn.admin.create_queue(explicit, non_destructive=False)).non_destructive


async def test_bad_attributes_are_refused_with_a_clear_error(conn):
    with pytest.raises(MeshMQError) as info:
        await conn.admin.create_queue(uniq("bad"), last_value_key="")
    assert info.value.reason == Reason.INVALID_REQUEST and "last-value-key is empty" in str(info.value)
    with pytest.raises(MeshMQError) as info:
        await conn.admin.create_queue(uniq("bad"), last_value_key="a\x01b")
    assert info.value.reason == Reason.INVALID_REQUEST and "control characters" in str(info.value)


async def test_queue_kinds_from_the_config_file_and_after_a_restart(nodes):
    node = nodes.router(
        "kinds",
        extra="""
        addresses:
          prices:
            multicast:
              - {name: prices.latest, last-value: true, non-destructive: true}
          jobs:
            anycast:
              - {name: jobs, exclusive: true}
        """,
    )
    async with await connect(node.url) as conn:
        kinds = {q.name: (q.last_value_key, q.non_destructive, q.exclusive) for q in await conn.admin.list_queues()}
        assert kinds["prices.latest"] == ("_AMQ_LVQ_NAME", True, False)
        assert kinds["jobs"] == ("", False, True)
        made = uniq("made")
        await conn.admin.create_queue(made, last_value_key="k")
        s = await conn.session()
        p = await s.create_producer()
        for body, key in ((b"A1", "A"), (b"B1", "B"), (b"A2", "A")):
            await p.send(body, address="prices", properties={"_AMQ_LVQ_NAME": key}, routing_type="multicast")
        await p.send(b"v1", address=made, properties={"k": "x"}, routing_type="anycast")
        c = await s.create_consumer(made)
        held = await c.receive(5)  # v1 is being delivered: v2 does not replace it, both are stored
        assert held.body == b"v1"
        await p.send(b"v2", address=made, properties={"k": "x"}, routing_type="anycast")
        assert (await conn.admin.queue(made)).message_count == 2
    node.kill9()
    node.start()
    async with await connect(node.url) as conn:
        kinds = {q.name: (q.last_value_key, q.non_destructive, q.exclusive) for q in await conn.admin.list_queues()}
        assert kinds["prices.latest"] == ("_AMQ_LVQ_NAME", True, False)
        assert kinds[made] == ("k", False, False)
        # recovery adds the stored messages in order: only the last of each key is left
        assert (await conn.admin.queue(made)).message_count == 1
        s = await conn.session()
        c = await s.create_consumer(made)
        m = await c.receive(5)
        assert m.body == b"v2"
        assert await c.receive(0.2) is None
        cache = await s.create_consumer("prices.latest")
        assert [m.body for m in await receive_all(cache, 2)] == [b"B1", b"A2"]
    node.stop()
    node.start()  # the stored replacement of v1 was written: nothing comes back
    async with await connect(node.url) as conn:
        assert (await conn.admin.queue(made)).message_count == 1


def test_the_cli_creates_and_lists_queue_kinds(shared_router):
    import subprocess
    import sys

    def meshmq(*args):
        return subprocess.run([sys.executable, "-m", "meshmq.cli.main", *args, "--url", shared_router.url],
                              capture_output=True, text=True, timeout=60)

    name = uniq("cli-cache")
    made = meshmq("queue", "create", name, "--last-value-key", "symbol", "--non-destructive")
    assert made.returncode == 0, made.stderr
    assert f"created queue {name} on address {name} (last-value-key=symbol, non-destructive)" in made.stdout
    listed = meshmq("queue", "list")
    header, *rows = [line.split("\t") for line in listed.stdout.splitlines()]
    row = next(r for r in rows if r[0] == name)
    assert header[-1] == "kind" and row[-1] == "last-value-key=symbol, non-destructive"
