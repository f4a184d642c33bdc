"""Authorization (Artemis security-settings) against a real router: each
permission type the router checks, refused and allowed by role, the refusal
naming the user, the permission and the address; and the most specific
match applying whole (services/router/access.py)."""

from __future__ import annotations

import pytest

from meshmq.client import PermissionDeniedError, connect

pytestmark = pytest.mark.integration

EVERYTHING = ("send", "consume", "create-address", "delete-address", "create-durable-queue", "delete-durable-queue",
              "create-non-durable-queue", "delete-non-durable-queue", "manage", "browse")
SETTINGS = """
security-enabled: true
users:
  - {username: admin, password: a, roles: [admins]}
  - {username: prod, password: p, roles: [producers]}
  - {username: cons, password: c, roles: [consumers]}
  - {username: ops, password: o, roles: [operators]}
  - {username: reader, password: r, roles: [readers]}
security-settings:
  "#": {%s}
  "orders.#":
    send: [producers, admins]
    consume: [consumers, readers, admins]
    create-address: [admins]
    create-durable-queue: [consumers, admins]
    create-non-durable-queue: [consumers, admins]
    delete-durable-queue: [operators, admins]
    delete-non-durable-queue: [operators]
    manage: [operators, admins]
    browse: [readers, admins]
  "orders.secret":
    consume: [admins]
    create-address: [admins]
    create-durable-queue: [admins]
  "activemq.management":
    manage: [operators, admins]
""" % ", ".join(f"{p}: [admins]" for p in EVERYTHING)


@pytest.fixture
def node(nodes):
    return nodes.router("authz", extra=SETTINGS)


def url(node, user: str, password: str) -> str:
    return f"meshmq://{user}:{password}@{node.endpoint}"


async def as_user(node, user: str):
    return await connect(url(node, user, {"admin": "a", "prod": "p", "cons": "c", "ops": "o", "reader": "r"}[user]))


def refused(exc_info, user: str, permission: str, address: str) -> None:
    text = str(exc_info.value)
    assert f"user {user!r}" in text and f"permission {permission}" in text and repr(address) in text, text


async def test_send_needs_send(node):
    async with await as_user(node, "admin") as admin:
        await admin.admin.create_queue("orders.send", routing_type="anycast")
    async with await as_user(node, "prod") as conn:
        p = await (await conn.session()).create_producer("orders.send")
        await p.send(b"allowed", routing_type="anycast")
    async with await as_user(node, "cons") as conn:
        p = await (await conn.session()).create_producer("orders.send")
        with pytest.raises(PermissionDeniedError) as exc:
            await p.send(b"refused", routing_type="anycast")
        refused(exc, "cons", "send", "orders.send")
    async with await as_user(node, "admin") as admin:
        assert (await admin.admin.queue("orders.send")).message_count == 1  # the refused one is nowhere


async def test_consume_needs_consume(node):
    async with await as_user(node, "admin") as admin:
        await admin.admin.create_queue("orders.consume", routing_type="anycast")
        await (await (await admin.session()).create_producer("orders.consume")).send(b"m", routing_type="anycast")
    async with await as_user(node, "prod") as conn:
        with pytest.raises(PermissionDeniedError) as exc:
            await (await conn.session()).create_consumer("orders.consume")
        refused(exc, "prod", "consume", "orders.consume")
    async with await as_user(node, "cons") as conn:
        c = await (await conn.session()).create_consumer("orders.consume")
        assert (await c.receive(5)).body == b"m"


async def test_sending_to_a_new_address_needs_create_address(node):
    async with await as_user(node, "prod") as conn:
        p = await (await conn.session()).create_producer("orders.brand-new")
        with pytest.raises(PermissionDeniedError) as exc:
            await p.send(b"x", routing_type="anycast")
        refused(exc, "prod", "create-address", "orders.brand-new")
    async with await as_user(node, "admin") as admin:
        assert "orders.brand-new" not in {a.name for a in await admin.admin.list_addresses()}
        await (await (await admin.session()).create_producer("orders.brand-new")).send(b"x", routing_type="anycast")
        assert (await admin.admin.queue("orders.brand-new")).message_count == 1


async def test_a_durable_subscription_needs_create_durable_queue(node):
    async with await as_user(node, "admin") as admin:
        await admin.admin.create_queue("orders.topic.keep", address="orders.topic", routing_type="multicast")
    async with await as_user(node, "reader") as conn:
        with pytest.raises(PermissionDeniedError) as exc:
            await (await conn.session()).create_consumer(address="orders.topic", subscription="prod-sub", shared=True)
        refused(exc, "reader", "create-durable-queue", "orders.topic")
        with pytest.raises(PermissionDeniedError):
            await conn.admin.create_queue("orders.topic.mine", address="orders.topic", routing_type="multicast")
    async with await as_user(node, "cons") as conn:
        await (await conn.session()).create_consumer(address="orders.topic", subscription="cons-sub", shared=True)
    async with await as_user(node, "admin") as admin:
        names = {q.name for q in await admin.admin.list_queues("orders.topic")}
        assert "cons-sub" in names and "prod-sub" not in names and "orders.topic.mine" not in names


async def test_a_temporary_subscription_needs_create_non_durable_queue(node):
    async with await as_user(node, "admin") as admin:
        await admin.admin.create_queue("orders.news.keep", address="orders.news", routing_type="multicast")
    async with await as_user(node, "reader") as conn:
        with pytest.raises(PermissionDeniedError) as exc:
            await (await conn.session()).create_consumer(address="orders.news")
        refused(exc, "reader", "create-non-durable-queue", "orders.news")
    async with await as_user(node, "cons") as conn:
        c = await (await conn.session()).create_consumer(address="orders.news")
        async with await as_user(node, "admin") as admin:
            await (await (await admin.session()).create_producer("orders.news")).send(b"n", routing_type="multicast")
        assert (await c.receive(5)).body == b"n"


async def test_deleting_queues_needs_the_delete_permission_of_their_durability(node):
    async with await as_user(node, "admin") as admin:
        await admin.admin.create_queue("orders.del.durable", routing_type="anycast")
        await admin.admin.create_queue("orders.del.memory", routing_type="anycast", durable=False)
    async with await as_user(node, "cons") as conn:
        with pytest.raises(PermissionDeniedError) as exc:
            await conn.admin.delete_queue("orders.del.durable")
        refused(exc, "cons", "delete-durable-queue", "orders.del.durable")
        with pytest.raises(PermissionDeniedError) as exc:
            await conn.admin.delete_queue("orders.del.memory")
        refused(exc, "cons", "delete-non-durable-queue", "orders.del.memory")
    async with await as_user(node, "admin") as admin:
        assert await admin.admin.queue("orders.del.memory") is not None
        with pytest.raises(PermissionDeniedError):  # admins may delete durable queues here, not non-durable ones
            await admin.admin.delete_queue("orders.del.memory")
    async with await as_user(node, "ops") as conn:
        await conn.admin.delete_queue("orders.del.durable")
        await conn.admin.delete_queue("orders.del.memory")
        assert await conn.admin.queue("orders.del.durable") is None


async def test_management_needs_manage(node):
    async with await as_user(node, "admin") as admin:
        await admin.admin.create_queue("orders.purge", routing_type="anycast")
        await (await (await admin.session()).create_producer("orders.purge")).send(b"p", routing_type="anycast")
    async with await as_user(node, "prod") as conn:
        with pytest.raises(PermissionDeniedError) as exc:
            await conn.admin.list_queues()
        refused(exc, "prod", "view", "activemq.management")  # listing needs view, which manage implies
        with pytest.raises(PermissionDeniedError) as exc:
            await conn.admin.purge_queue("orders.purge")
        refused(exc, "prod", "manage", "orders.purge")
    async with await as_user(node, "ops") as conn:
        assert "orders.purge" in {q.name for q in await conn.admin.list_queues()}
        assert await conn.admin.purge_queue("orders.purge") == 1


async def test_a_queue_browser_needs_browse(node):
    """As Artemis's `browse`: consume does not let a user browse (cons), browse
    alone lets one browse (reader: no send, no manage)."""
    async with await as_user(node, "admin") as admin:
        await admin.admin.create_queue("orders.browse", routing_type="anycast")
        await (await (await admin.session()).create_producer("orders.browse")).send(b"b", routing_type="anycast")
    async with await as_user(node, "cons") as conn:
        with pytest.raises(PermissionDeniedError) as exc:
            await (await conn.session()).create_browser("orders.browse")
        refused(exc, "cons", "browse", "orders.browse")
    async with await as_user(node, "reader") as conn:
        browser = await (await conn.session()).create_browser("orders.browse")
        assert [m.body async for m in browser] == [b"b"]
    async with await as_user(node, "admin") as admin:
        assert (await admin.admin.queue("orders.browse")).message_count == 1


async def test_the_most_specific_match_applies_whole(node):
    """orders.secret grants consume only to admins, and no send: consumers (who
    may consume orders.#) may not, and nobody may send there, though orders.#
    and # allow it."""
    async with await as_user(node, "admin") as admin:
        await admin.admin.create_queue("orders.secret", routing_type="anycast")
        p = await (await admin.session()).create_producer("orders.secret")
        with pytest.raises(PermissionDeniedError) as exc:
            await p.send(b"s", routing_type="anycast")
        refused(exc, "admin", "send", "orders.secret")
        await (await admin.session()).create_consumer("orders.secret")
    async with await as_user(node, "cons") as conn:
        with pytest.raises(PermissionDeniedError) as exc:
            await (await conn.session()).create_consumer("orders.secret")
        refused(exc, "cons", "consume", "orders.secret")
    async with await as_user(node, "prod") as conn:
        p = await (await conn.session()).create_producer("elsewhere")  # only `#` applies: admins only
        with pytest.raises(PermissionDeniedError) as exc:
            await p.send(b"e", routing_type="anycast")
        refused(exc, "prod", "send", "elsewhere")


async def test_the_user_id_is_the_authenticated_user_and_cannot_be_forged(node):
    """A client writing another user's id into its message (raw protocol: the
    SDK has no such field) gets its own user id stamped over it."""
    import grpc

    from meshmq.transport import credentials_metadata
    from meshmq.v1 import broker_pb2 as bpb
    from meshmq.v1 import broker_pb2_grpc as bgrpc
    from meshmq.v1 import messages_pb2 as mpb

    async with await as_user(node, "admin") as admin:
        await admin.admin.create_queue("orders.who", routing_type="anycast")
    async with grpc.aio.insecure_channel(node.endpoint) as channel:
        requests = [
            bpb.SessionRequest(open=bpb.OpenSession(client_id="forger")),
            bpb.SessionRequest(create_producer=bpb.CreateProducer(producer_id=1, address="orders.who")),
            bpb.SessionRequest(send=bpb.SendBatch(producer_id=1, batch_id=1, messages=[
                mpb.Message(body=b"forged", user_id="admin", routing_type=mpb.ANYCAST, durable=True)])),
        ]
        call = bgrpc.BrokerStub(channel).Session(iter(requests), metadata=credentials_metadata("prod", "p"))
        async for resp in call:
            if resp.HasField("confirm"):
                assert not resp.confirm.rejections
                break
        call.cancel()
    async with await as_user(node, "cons") as conn:
        m = await (await conn.session()).create_consumer("orders.who")
        got = await m.receive(5)
        assert got.body == b"forged" and got.proto.user_id == "prod"


async def test_with_security_off_the_user_id_is_empty(nodes):
    node = nodes.router("no-security")
    async with await connect(f"meshmq://claimed:whatever@{node.endpoint}") as conn:
        s = await conn.session()
        await (await s.create_producer("open.q")).send(b"x", routing_type="anycast")
        got = await (await s.create_consumer("open.q")).receive(5)
        assert got.body == b"x" and got.proto.user_id == ""
