"""A temporary queue belongs to the session that created it
(services/router/temporary_queues.py), on a real router: nobody else consumes
from it, whatever their roles and with or without security; other users
manage it only with `manage` on activemq.management; sending to its address
stays open; it goes away with its session."""

from __future__ import annotations

import pytest

from meshmq.client import PermissionDeniedError, QueueExistsError, connect
from tests.fixtures.nodes import eventually
from tests.integration.test_authorization import EVERYTHING

pytestmark = pytest.mark.integration

SETTINGS = """
security-enabled: true
users:
  - {username: admin, password: a, roles: [admins]}
  - {username: cons, password: c, roles: [consumers]}
  - {username: ops, password: o, roles: [operators]}
security-settings:
  "#": {%s}
  "replies.#":
    send: [admins, consumers]
    consume: [admins, consumers]
    browse: [admins, consumers, operators]
    manage: [admins, consumers, operators]
    create-address: [admins]
    create-durable-queue: [admins, consumers]
    create-non-durable-queue: [admins]
    delete-non-durable-queue: [admins, consumers, operators]
  "activemq.management":
    manage: [admins, operators]
""" % ", ".join(f"{p}: [admins]" for p in EVERYTHING)
PASSWORDS = {"admin": "a", "cons": "c", "ops": "o"}


@pytest.fixture
def node(nodes):
    return nodes.router("tempq", extra=SETTINGS)


async def as_user(node, user: str):
    return await connect(f"meshmq://{user}:{PASSWORDS[user]}@{node.endpoint}")


async def test_only_the_creating_session_consumes_from_a_temporary_queue(node):
    async with await as_user(node, "admin") as owner:
        mine = await (await owner.session()).create_consumer(address="replies.a")
        temp = mine.queue
        assert (await owner.admin.queue(temp)).temporary
        for user in ("cons", "admin"):  # a consume-only user, and the owner's user on another connection
            async with await as_user(node, user) as other:
                session = await other.session()
                with pytest.raises(PermissionDeniedError) as exc:
                    await session.create_consumer(temp)
                assert f"user {user!r}" in str(exc.value) and repr(temp) in str(exc.value), str(exc.value)
        # Nor is it reached as a subscription of that name: a subscription's queue name is escaped
        # (`nonDurable.replies\.a\...`), another queue.
        sub = await (await owner.session()).create_consumer(address="replies.a", subscription=temp, shared=True,
                                                             durable=False)
        assert sub.queue == "nonDurable." + temp.replace(".", "\\.")
        await sub.close()
        producer = await (await owner.session()).create_producer("replies.a")
        for i in range(6):
            await producer.send(f"m{i}".encode(), routing_type="multicast")
        got = [m.body for m in await mine.receive_batch(6, timeout=5)]
        while len(got) < 6 and (m := await mine.receive(5)) is not None:
            got.append(m.body)
        assert got == [f"m{i}".encode() for i in range(6)]
        info = await owner.admin.queue(temp)
        assert info.consumer_count == 1 and info.messages_added == 6
        async with await as_user(node, "cons") as replier:  # sending to its address stays open (reply-to)
            await (await (await replier.session()).create_producer("replies.a")).send(b"reply", routing_type="multicast")
        assert (await mine.receive(5)).body == b"reply"
    async with await as_user(node, "admin") as admin:  # its session ended: the queue went with it
        async def gone() -> bool:
            return await admin.admin.queue(temp) is None

        await eventually(gone, 5, f"{temp} deleted with its session")


async def test_a_temporary_subscription_never_takes_over_an_existing_queue(node):
    async with await as_user(node, "admin") as admin:
        session = await admin.session()
        name = f"replies.b.{session.session_id}.1"  # the name its first temporary subscription gets
        await admin.admin.create_queue(name, address="replies.b", routing_type="multicast")
        with pytest.raises(QueueExistsError):
            await session.create_consumer(address="replies.b")


async def test_other_users_manage_a_temporary_queue_only_with_manage_on_management(node):
    async with await as_user(node, "admin") as owner:
        mine = await (await owner.session()).create_consumer(address="replies.c")
        await (await (await owner.session()).create_producer("replies.c")).send(b"x", routing_type="multicast")
        async with await as_user(node, "cons") as cons:  # browse and manage on replies.#, not on management
            for call in (cons.admin.browse, cons.admin.purge_queue, cons.admin.pause_queue, cons.admin.delete_queue):
                with pytest.raises(PermissionDeniedError) as exc:
                    await call(mine.queue)
                assert repr(mine.queue) in str(exc.value) and "temporary queue" in str(exc.value), str(exc.value)
        assert [m.message.body for m in (await owner.admin.browse(mine.queue)).messages] == [b"x"]  # its user may
        async with await as_user(node, "ops") as ops:  # an operator may, e.g. to clean up
            assert (await ops.admin.browse(mine.queue)).total == 1
            await ops.admin.delete_queue(mine.queue, force=True)
        assert await owner.admin.queue(mine.queue) is None


async def test_without_security_a_temporary_queue_still_belongs_to_its_session(nodes):
    node = nodes.router("tempq-open")
    async with await connect(f"meshmq://{node.endpoint}") as owner:
        session = await owner.session()
        mine = await session.create_consumer(address="news")
        async with await connect(f"meshmq://{node.endpoint}") as other:
            with pytest.raises(PermissionDeniedError) as exc:
                await (await other.session()).create_consumer(mine.queue)
            assert repr(mine.queue) in str(exc.value)
        second = await session.create_consumer(mine.queue)  # the owning session may add a consumer
        assert second.queue == mine.queue
        assert (await owner.admin.queue(mine.queue)).consumer_count == 2
