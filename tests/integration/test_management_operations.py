"""The management operations the admin gateway offers (issue #14), against
real routers: create/delete address, browse, move, retry dead letters,
pause/resume, the `view` permission, and a durable move interrupted by
kill -9 (services/router/message_moves.py, browsing.py)."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.client import ConnectionFailedError, MeshMQError, PermissionDeniedError, connect
from meshmq.errors import Reason
from meshmq.properties import properties_dict
from meshmq.v1 import management_pb2 as mgpb
from meshmq.v1 import messages_pb2 as mpb
from tests.fixtures.nodes import Nodes, eventually
from tests.integration.shared import drain

pytestmark = pytest.mark.integration

SETTINGS = """
address-settings:
  "mo.dlq.#":
    max-delivery-attempts: 1
    dead-letter-address: mo.DLQ
  "mo.delay.#":
    redelivery-delay: 600000
  "mo.paged.#":
    max-size-bytes: 20K
    page-size-bytes: 10K
  "mo.gone.#":
    max-delivery-attempts: 1
    dead-letter-address: mo.gone.DLQ
  "mo.order.#":
    max-delivery-attempts: 1
    dead-letter-address: mo.order.DLQ
    expiry-address: mo.order.Expiry
  "mo.strict.#":
    max-delivery-attempts: 1
    dead-letter-address: mo.strict.DLQ
    auto-create-addresses: false
    auto-create-queues: false
"""


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    n = Nodes(tmp_path_factory.mktemp("mgmt-ops"))
    yield n.router("mgmt", extra=SETTINGS)
    n.stop_all()


async def send(conn, address: str, n: int, *, body: bytes = b"", props=lambda i: {}, durable: bool = True,
               routing_type: str = "anycast") -> None:
    p = await (await conn.session()).create_producer(address)
    futs = [await p.send_async(body or f"m{i}".encode(), properties={"n": i, **props(i)}, durable=durable,
                               routing_type=routing_type) for i in range(n)]
    await asyncio.gather(*futs)


def ns(browsed) -> list[int]:
    return [properties_dict(b.message.properties)["n"] for b in browsed]


async def test_browse_shows_messages_in_delivery_order_with_states_and_consumes_nothing(node):
    async with await connect(node.url) as conn:
        await send(conn, "mo.delay.browse", 6, body=b"x" * 300)
        s = await conn.session()
        # m0: delivered once and given back: in its redelivery delay (scheduled).
        c0 = await s.create_consumer("mo.delay.browse", filter="n = 0")
        (await c0.receive(5)).nack()
        await c0.close()
        # m1: being delivered to a consumer that does not acknowledge it.
        c1 = await s.create_consumer("mo.delay.browse", filter="n = 1")
        assert (await c1.receive(5)) is not None
        info = await eventually(
            lambda: _settled(conn, "mo.delay.browse"), 5, "one delivering and one scheduled message")

        page = await conn.admin.browse("mo.delay.browse", body_preview_bytes=10)
        assert ns(page.messages) == [1, 0, 2, 3, 4, 5]
        assert [b.state for b in page.messages] == ["delivering", "scheduled", "waiting", "waiting", "waiting", "waiting"]
        assert [b.delivery_count for b in page.messages] == [1, 1, 0, 0, 0, 0]
        assert all(b.message.body == b"x" * 10 and b.body_size == 300 for b in page.messages)
        assert page.total == 6

        part = await conn.admin.browse("mo.delay.browse", offset=1, limit=2)
        assert ns(part.messages) == [0, 2] and part.total == 6
        assert part.messages[0].message.body == b"x" * 256  # the default preview
        filtered = await conn.admin.browse("mo.delay.browse", filter="n >= 3")
        assert ns(filtered.messages) == [3, 4, 5] and filtered.total == 3
        with pytest.raises(MeshMQError) as bad:
            await conn.admin.browse("mo.delay.browse", filter="n >>> 3")
        assert bad.value.reason == Reason.INVALID_SELECTOR and "position" in str(bad.value).lower()
        with pytest.raises(MeshMQError) as missing:
            await conn.admin.browse("mo.no-such-queue")
        assert missing.value.reason == Reason.QUEUE_NOT_FOUND

        after = await conn.admin.queue("mo.delay.browse")
        assert (after.message_count, after.scheduled_count, after.delivering_count) == (6, 1, 1)
        assert info.messages_added == after.messages_added
        await c1.close()


async def _settled(conn, queue):
    q = await conn.admin.queue(queue)
    return q if q.scheduled_count == 1 and q.delivering_count == 1 else None


async def test_browse_reads_paged_messages_from_the_store_without_depaging_them(node):
    async with await connect(node.url) as conn:
        await send(conn, "mo.paged.browse", 60, body=b"p" * 1000)
        before = await conn.admin.queue("mo.paged.browse")
        assert 0 < before.paged_count < 60
        page = await conn.admin.browse("mo.paged.browse", limit=1000)
        assert ns(page.messages) == list(range(60)) and page.total == 60
        in_memory = 60 - before.paged_count
        assert {b.state for b in page.messages[:in_memory]} == {"waiting"}
        assert {b.state for b in page.messages[in_memory:]} == {"paged"}
        tail = await conn.admin.browse("mo.paged.browse", filter="n >= 55")
        assert ns(tail.messages) == [55, 56, 57, 58, 59] and tail.total == 5
        assert (await conn.admin.browse("mo.paged.browse", offset=58, limit=5)).messages[0].state == "paged"
        after = await conn.admin.queue("mo.paged.browse")
        assert (after.message_count, after.paged_count) == (60, before.paged_count)


async def test_move_with_a_filter_moves_exactly_the_matching_messages(node):
    async with await connect(node.url) as conn:
        await send(conn, "mo.move.src", 1200, props=lambda i: {"color": "red" if i % 2 == 0 else "blue"})
        await conn.admin.create_queue("mo.elsewhere.dst", routing_type="anycast")
        seen = []
        final = await conn.admin.move_messages("mo.move.src", "mo.elsewhere.dst", filter="color = 'red'",
                                               on_progress=seen.append)
        assert (final.done, final.total, final.finished) == (600, 600, True)
        assert [p.done for p in seen] == [500, 600, 600] and seen[-1].finished and not seen[0].finished
        assert (await conn.admin.queue("mo.move.src")).message_count == 600
        assert (await conn.admin.queue("mo.elsewhere.dst")).message_count == 600

        got = await drain(conn, "mo.elsewhere.dst", 600)
        assert [m.properties["n"] for m in got] == list(range(0, 1200, 2))
        assert {(m.properties["_AMQ_ORIG_QUEUE"], m.properties["_AMQ_ORIG_ADDRESS"]) for m in got} == {
            ("mo.move.src", "mo.move.src")}
        assert {m.address for m in got} == {"mo.elsewhere.dst"}

        limited = await conn.admin.move_messages("mo.move.src", "mo.elsewhere.dst", limit=7)
        assert (limited.done, limited.total, limited.finished) == (7, 7, True)
        got = await drain(conn, "mo.elsewhere.dst", 7)
        assert [m.properties["n"] for m in got] == list(range(1, 14, 2))

        with pytest.raises(MeshMQError) as same:
            await conn.admin.move_messages("mo.move.src", "mo.move.src")
        assert same.value.reason == Reason.INVALID_REQUEST
        with pytest.raises(MeshMQError) as missing:
            await conn.admin.move_messages("mo.move.src", "mo.nowhere")
        assert missing.value.reason == Reason.QUEUE_NOT_FOUND and "mo.nowhere" in str(missing.value)


async def test_move_leaves_messages_being_delivered(node):
    async with await connect(node.url) as conn:
        await send(conn, "mo.move.busy", 5)
        await conn.admin.create_queue("mo.move.busy-dst", routing_type="anycast")
        c = await (await conn.session()).create_consumer("mo.move.busy", filter="n = 2")
        held = await c.receive(5)
        final = await conn.admin.move_messages("mo.move.busy", "mo.move.busy-dst")
        assert (final.done, final.total) == (4, 4)
        held.ack()
        await c.close()
        got = await drain(conn, "mo.move.busy-dst", 4)
        assert [m.properties["n"] for m in got] == [0, 1, 3, 4]


async def test_retry_returns_dead_letters_to_the_queue_they_died_on(node):
    async with await connect(node.url) as conn:
        await conn.admin.create_queue("mo.dlq.orders", routing_type="anycast")
        await send(conn, "mo.dlq.orders", 3)
        c = await (await conn.session()).create_consumer("mo.dlq.orders")
        for _ in range(3):
            (await c.receive(5)).nack()  # max-delivery-attempts 1: each goes to mo.DLQ
        await eventually(lambda: _count(conn, "mo.DLQ", 3), 5, "three dead letters")
        await c.close()
        await send(conn, "mo.DLQ", 1, props=lambda i: {"n": 99})  # no origin: stays

        final = await conn.admin.retry_messages("mo.DLQ")
        assert (final.done, final.total, final.finished) == (3, 4, True)
        assert (await conn.admin.queue("mo.DLQ")).message_count == 1
        got = await drain(conn, "mo.dlq.orders", 3)
        assert [m.properties["n"] for m in got] == [0, 1, 2]
        assert [m.delivery_count for m in got] == [1, 1, 1]  # reset: this is their first delivery again
        left = await conn.admin.browse("mo.DLQ")
        assert ns(left.messages) == [99]


async def _dead_letter(conn, queue: str, n: int) -> None:
    """Send `n` messages to `queue` (auto-created anycast unless it exists), reject
    each once (max-delivery-attempts 1: each is dead-lettered), then close the
    consumer — an auto-created queue is auto-deleted then, with its address."""
    await send(conn, queue, n)
    c = await (await conn.session()).create_consumer(queue)
    for _ in range(n):
        (await c.receive(5)).nack()
    await c.close()


async def test_retry_sends_dead_letters_to_their_address_when_their_queue_was_auto_deleted(node):
    async with await connect(node.url) as conn:
        await _dead_letter(conn, "mo.gone.orders", 3)
        await eventually(lambda: _count(conn, "mo.gone.DLQ", 3), 5, "three dead letters")
        await eventually(lambda: _gone(conn, "mo.gone.orders"), 5, "mo.gone.orders auto-deleted")
        assert "mo.gone.orders" not in {a.name for a in await conn.admin.list_addresses()}
        dead = await conn.admin.browse("mo.gone.DLQ")
        assert {properties_dict(b.message.properties)["_AMQ_ORIG_QUEUE"] for b in dead.messages} == {
            "mo.gone.orders"}
        dead_ids = [b.message.message_id for b in dead.messages]

        final = await conn.admin.retry_messages("mo.gone.DLQ")
        assert (final.done, final.total, final.finished) == (3, 3, True)
        assert final.kept == 0
        out = list(final.outcomes)
        assert [o.message_id for o in out] == dead_ids
        # The first one, sent to its address, re-created it and its anycast queue as a send
        # would; the others found their queue again and went straight back to it.
        assert [o.result for o in out] == [mgpb.MessageOutcome.SENT_TO_ADDRESS] + [mgpb.MessageOutcome.RETURNED] * 2
        assert {(o.address, tuple(o.queues)) for o in out} == {("mo.gone.orders", ("mo.gone.orders",))}
        assert (out[0].address_created, list(out[0].queues_created)) == (True, ["mo.gone.orders"])
        assert not any(o.address_created or o.queues_created for o in out[1:])
        assert all(o.new_message_id > max(dead_ids) for o in out)
        assert (await conn.admin.queue("mo.gone.DLQ")).message_count == 0
        q = await conn.admin.queue("mo.gone.orders")
        assert (q.routing_type, q.message_count) == (mpb.ANYCAST, 3)
        got = await drain(conn, "mo.gone.orders", 3)
        assert [m.properties["n"] for m in got] == [0, 1, 2]


async def test_retry_that_can_move_nothing_says_why_for_each_message_and_keeps_them(node):
    async with await connect(node.url) as conn:
        await conn.admin.create_queue("mo.strict.q", routing_type="anycast")
        await _dead_letter(conn, "mo.strict.q", 2)
        await eventually(lambda: _count(conn, "mo.strict.DLQ", 2), 5, "two dead letters")
        await conn.admin.delete_queue("mo.strict.q")
        await conn.admin.delete_address("mo.strict.q")
        await send(conn, "mo.strict.DLQ", 1, props=lambda i: {"n": 99})  # no origin at all

        final = await conn.admin.retry_messages("mo.strict.DLQ")
        assert (final.done, final.total, final.finished, final.kept) == (0, 3, True, 3)
        out = list(final.outcomes)
        assert [o.result for o in out] == [mgpb.MessageOutcome.KEPT] * 3
        assert [o.reason for o in out] == ["ADDRESS_NOT_FOUND", "ADDRESS_NOT_FOUND", "NO_ORIGIN"]
        assert all("mo.strict.q" in o.detail and "auto-create-addresses" in o.detail for o in out[:2])
        # Nothing lost, nothing created, the order kept.
        left = await conn.admin.browse("mo.strict.DLQ")
        assert ns(left.messages) == [0, 1, 99]
        assert "mo.strict.q" not in {a.name for a in await conn.admin.list_addresses()}


async def test_retry_of_one_message_by_id_and_bad_input_name_what_was_wrong(node):
    async with await connect(node.url) as conn:
        await _dead_letter(conn, "mo.gone.single", 2)
        await eventually(lambda: _count(conn, "mo.gone.DLQ", 2), 5, "two dead letters")
        first, second = (await conn.admin.browse("mo.gone.DLQ")).messages
        final = await conn.admin.retry_messages("mo.gone.DLQ", message_id=second.message.message_id)
        assert (final.done, final.total, [o.message_id for o in final.outcomes]) == (
            1, 1, [second.message.message_id])
        assert ns((await conn.admin.browse("mo.gone.DLQ")).messages) == [0]

        with pytest.raises(MeshMQError) as no_message:
            await conn.admin.retry_messages("mo.gone.DLQ", message_id=second.message.message_id)
        assert no_message.value.reason == Reason.MESSAGE_NOT_FOUND
        assert str(second.message.message_id) in str(no_message.value) and "mo.gone.DLQ" in str(no_message.value)
        with pytest.raises(MeshMQError) as no_queue:
            await conn.admin.retry_messages("mo.no-such-dlq")
        assert no_queue.value.reason == Reason.QUEUE_NOT_FOUND and "mo.no-such-dlq" in str(no_queue.value)
        assert (await conn.admin.retry_messages("mo.gone.DLQ", message_id=first.message.message_id)).done == 1
        assert [m.properties["n"] for m in await drain(conn, "mo.gone.single", 2)] == [1, 0]


async def test_dead_letters_keep_their_order_when_a_transaction_rolls_them_back_together(node):
    async with await connect(node.url) as conn:
        await send(conn, "mo.order.tx", 3)
        s = await conn.session(transacted=True)
        c = await s.create_consumer("mo.order.tx")
        for _ in range(3):
            assert await c.receive(5) is not None
        await s.rollback()  # max-delivery-attempts 1: all three die at once
        await eventually(lambda: _count(conn, "mo.order.DLQ", 3), 5, "three dead letters")
        assert ns((await conn.admin.browse("mo.order.DLQ")).messages) == [0, 1, 2]
        # The same consumer, closed with several deliveries, gives them back in order too.
        await send(conn, "mo.order.closed", 3)
        c2 = await (await conn.session()).create_consumer("mo.order.closed")
        for _ in range(3):
            assert await c2.receive(5) is not None
        await c2.close()
        await eventually(lambda: _count(conn, "mo.order.DLQ", 6), 5, "six dead letters")
        assert ns((await conn.admin.browse("mo.order.DLQ")).messages) == [0, 1, 2, 0, 1, 2]


async def test_expired_messages_keep_their_order_in_the_expiry_queue(node):
    async with await connect(node.url) as conn:
        p = await (await conn.session()).create_producer("mo.order.ttl")
        # Expired when they arrive (an expiration long past): the first dispatch moves them.
        await asyncio.gather(*[await p.send_async(b"x", properties={"n": i}, expiration=1, routing_type="anycast")
                               for i in range(3)])
        c = await (await conn.session()).create_consumer("mo.order.ttl")  # dispatch finds them expired
        assert await c.receive(0.2) is None
        await eventually(lambda: _count(conn, "mo.order.Expiry", 3), 5, "three expired messages")
        assert ns((await conn.admin.browse("mo.order.Expiry")).messages) == [0, 1, 2]
        await c.close()


async def _gone(conn, queue):
    return await conn.admin.queue(queue) is None


async def _count(conn, queue, n):
    q = await conn.admin.queue(queue)
    return q is not None and q.message_count == n


async def test_a_paused_queue_keeps_messages_until_resumed(node):
    async with await connect(node.url) as conn:
        await conn.admin.create_queue("mo.pause", routing_type="anycast")
        info = await conn.admin.pause_queue("mo.pause")
        assert info.paused
        c = await (await conn.session()).create_consumer("mo.pause")
        await send(conn, "mo.pause", 3)
        assert await c.receive(0.5) is None  # bounded: nothing is dispatched while paused
        q = await conn.admin.queue("mo.pause")
        assert (q.paused, q.message_count, q.delivering_count) == (True, 3, 0)
        assert not (await conn.admin.resume_queue("mo.pause")).paused
        got = []
        for _ in range(3):
            m = await c.receive(5)
            assert m is not None
            got.append(m.properties["n"])
            m.ack()
        assert got == [0, 1, 2]
        with pytest.raises(MeshMQError) as missing:
            await conn.admin.pause_queue("mo.no-such-queue")
        assert missing.value.reason == Reason.QUEUE_NOT_FOUND


async def test_create_and_delete_address(node):
    async with await connect(node.url) as conn:
        a = await conn.admin.create_address("mo.addr", routing_types=["multicast"])
        assert (a.name, list(a.routing_types), list(a.queues)) == ("mo.addr", [2], [])
        assert (await conn.admin.create_address("mo.addr", routing_types=["multicast"])).name == "mo.addr"
        with pytest.raises(MeshMQError) as clash:
            await conn.admin.create_address("mo.addr", routing_types=["anycast"])
        assert clash.value.reason == Reason.ADDRESS_EXISTS and "MULTICAST" in str(clash.value)
        assert list((await conn.admin.create_address("mo.addr-default")).routing_types) == [1]
        with pytest.raises(MeshMQError) as internal:
            await conn.admin.create_address("$.meshmq.sf.x")
        assert internal.value.reason == Reason.INVALID_REQUEST

        await conn.admin.create_queue("mo.addr.sub", address="mo.addr", routing_type="multicast")
        await send(conn, "mo.addr", 4, routing_type="multicast")
        with pytest.raises(MeshMQError) as in_use:
            await conn.admin.delete_address("mo.addr")
        assert in_use.value.reason == Reason.ADDRESS_IN_USE and "mo.addr.sub" in str(in_use.value)
        assert await conn.admin.delete_address("mo.addr", force=True) == 4
        names = {x.name for x in await conn.admin.list_addresses()}
        assert "mo.addr" not in names and await conn.admin.queue("mo.addr.sub") is None
        assert await conn.admin.delete_address("mo.addr-default") == 0
        with pytest.raises(MeshMQError) as gone:
            await conn.admin.delete_address("mo.addr")
        assert gone.value.reason == Reason.ADDRESS_NOT_FOUND


SECURED = """
security-enabled: true
users:
  - {username: admin, password: a, roles: [admins]}
  - {username: watcher, password: w, roles: [viewers]}
  - {username: looker, password: l, roles: [browsers]}
security-settings:
  "#":
    send: [admins]
    consume: [admins]
    create-address: [admins]
    delete-address: [admins]
    create-durable-queue: [admins]
    delete-durable-queue: [admins]
    manage: [admins]
    browse: [admins, browsers]
  "activemq.management":
    manage: [admins]
    view: [viewers]
"""


async def test_view_lists_but_changes_nothing_and_browse_needs_browse(nodes):
    node = nodes.router("secured", extra=SECURED)
    base = node.endpoint
    async with await connect(f"meshmq://admin:a@{base}") as admin:
        await send(admin, "perm.q", 2)
        await admin.admin.create_queue("perm.dst", routing_type="anycast")
        assert {q.name for q in await admin.admin.list_queues()} >= {"perm.q", "perm.dst"}  # manage implies view
    async with await connect(f"meshmq://watcher:w@{base}") as watcher:
        assert {q.name for q in await watcher.admin.list_queues()} >= {"perm.q"}
        assert "perm.q" in {a.name for a in await watcher.admin.list_addresses()}
        await watcher.admin.list_consumers()
        await watcher.admin.cluster_state()
        for call, permission in ((watcher.admin.purge_queue("perm.q"), "manage"),
                                 (watcher.admin.move_messages("perm.q", "perm.dst"), "manage"),
                                 (watcher.admin.pause_queue("perm.q"), "manage"),
                                 (watcher.admin.browse("perm.q"), "browse"),
                                 (watcher.admin.create_address("perm.new"), "create-address"),
                                 (watcher.admin.delete_address("perm.q", force=True), "delete-address")):
            with pytest.raises(PermissionDeniedError) as denied:
                await call
            assert f"permission {permission}" in str(denied.value) and "'watcher'" in str(denied.value)
    async with await connect(f"meshmq://looker:l@{base}") as looker:
        assert ns((await looker.admin.browse("perm.q")).messages) == [0, 1]
        with pytest.raises(PermissionDeniedError):
            await looker.admin.list_queues()
    async with await connect(f"meshmq://admin:a@{base}") as admin:
        assert (await admin.admin.queue("perm.q")).message_count == 2


async def test_kill9_during_a_durable_move_loses_and_duplicates_nothing(nodes):
    total = 20_000
    node = nodes.router("mover")
    async with await connect(node.url) as conn:
        await conn.admin.create_address("mo.kept", routing_types=["anycast", "multicast"])
        await conn.admin.create_queue("mo.big.dst", routing_type="anycast")
        p = await (await conn.session()).create_producer("mo.big.src")
        for start in range(0, total, 2000):
            await asyncio.gather(*[await p.send_async(b"b", properties={"n": i}, routing_type="anycast")
                                   for i in range(start, start + 2000)])
        killed = []

        def on_progress(progress):
            if not killed and progress.done >= 1500:
                killed.append(progress)
                node.kill9()

        with pytest.raises(ConnectionFailedError):
            await conn.admin.move_messages("mo.big.src", "mo.big.dst", on_progress=on_progress)
        assert killed and killed[0].done < total and not killed[0].finished

    node.start()
    async with await connect(node.url) as conn:
        src = (await conn.admin.queue("mo.big.src")).message_count
        dst = (await conn.admin.queue("mo.big.dst")).message_count
        assert src + dst == total and dst >= killed[0].done
        a = {m.properties["n"] for m in await drain(conn, "mo.big.src", src)}
        b = {m.properties["n"] for m in await drain(conn, "mo.big.dst", dst)}
        assert not a & b and a | b == set(range(total))
        kept = next(x for x in await conn.admin.list_addresses() if x.name == "mo.kept")
        assert list(kept.routing_types) == [1, 2]


def test_cli_commands(node):
    import subprocess
    import sys

    def meshmq(*args, returncode=0):
        r = subprocess.run([sys.executable, "-m", "meshmq.cli.main", *args, "--url", node.url],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == returncode, r.stdout + r.stderr
        return r.stdout

    assert "address mo.cli (MULTICAST)" in meshmq("address", "create", "mo.cli", "--routing-type", "multicast")
    meshmq("queue", "create", "mo.cli.a", "--address", "mo.cli", "--routing-type", "multicast")
    meshmq("queue", "create", "mo.cli.b", "--address", "mo.cli", "--routing-type", "multicast")
    assert "paused queue mo.cli.a" in meshmq("queue", "pause", "mo.cli.a")
    meshmq("send", "--address", "mo.cli", "--routing-type", "multicast", "--body", "hello there", "--count", "3",
           "-p", "n=1")
    listed = meshmq("queue", "browse", "mo.cli.a", "--body-bytes", "5").splitlines()
    assert listed[0].split("\t") == ["id", "state", "priority", "deliveries", "size", "properties", "headers", "body"]
    assert [line.split("\t")[1] for line in listed[1:]] == ["waiting"] * 3
    assert all(line.endswith("\thello…") for line in listed[1:])
    assert "moved 2 of 2 message(s) from mo.cli.a to mo.cli.b" in meshmq("queue", "move", "mo.cli.a", "mo.cli.b",
                                                                          "--limit", "2")
    assert "resumed queue mo.cli.a (1 messages)" in meshmq("queue", "resume", "mo.cli.a")
    # Sent there, not dead-lettered: nowhere to return it to; it stays, and the command says it failed.
    retried = meshmq("queue", "retry", "mo.cli.a", returncode=1)
    assert "kept in mo.cli.a: NO_ORIGIN" in retried and "retried 0 of 1 message(s) from mo.cli.a; 1 kept" in retried
    assert "deleted address mo.cli (6 messages removed)" in meshmq("address", "delete", "mo.cli", "--force")
