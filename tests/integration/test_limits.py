"""Every documented message limit (meshmq/message_limits.py) is refused with
a reason naming it, on SQLite and PostgreSQL, and the node keeps serving: a
client cannot make the journal fail a commit (which would halt the node)."""

from __future__ import annotations

import pytest

from meshmq import message_limits as lim
from meshmq.client import connect
from meshmq.errors import DuplicateIdError, InvalidRequestError, InvalidSelectorError, MeshMQError

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sqlite", "postgresql"])
def router(request, nodes):
    url = request.getfixturevalue("make_pg_url")() if request.param == "postgresql" else None
    return nodes.router("limits", journal_url=url)


OVER_LIMIT = {
    "duplicate id length": (dict(duplicate_id="d" * (lim.MAX_DUPLICATE_ID_LENGTH + 1)), "duplicate id is 256 characters"),
    "NUL in duplicate id": (dict(duplicate_id="a\x00b"), "duplicate id contains a NUL"),
    "property count": (dict(properties={f"p{i}": i for i in range(lim.MAX_PROPERTIES + 1)}), "1025 properties"),
    "property name length": (dict(properties={"k" * (lim.MAX_PROPERTY_NAME_LENGTH + 1): 1}), "is 256 characters"),
    "property value size": (dict(properties={"v": "x" * (lim.MAX_PROPERTY_VALUE_BYTES + 1)}), "the limit is 262144"),
    "header size": (
        dict(properties={f"v{i}": "x" * (lim.MAX_PROPERTY_VALUE_BYTES - 16) for i in range(5)}),
        r"message header \(properties, address, ids\) is \d+ bytes; the limit is 1048576",
    ),
}


async def test_every_limit_is_refused_by_name_and_the_node_keeps_serving(router):
    async with await connect(router.url) as conn:
        # Declared, so it outlives its consumers (an auto-deleted address takes its duplicate ids along).
        await conn.admin.create_queue("limits", address="limits", routing_type="anycast")
        s = await conn.session()
        p = await s.create_producer("limits")
        for what, (fields, says) in OVER_LIMIT.items():
            with pytest.raises(InvalidRequestError, match=says):
                await p.send(b"x", routing_type="anycast", **fields)
        for name in ("a" * (lim.MAX_NAME_LENGTH + 1), "bad\x00name"):
            with pytest.raises(InvalidRequestError, match="address name"):
                await p.send(b"x", routing_type="anycast", address=name)
            with pytest.raises(InvalidRequestError, match="queue name"):
                await conn.admin.create_queue(name, address="limits", routing_type="anycast")
        with pytest.raises(InvalidSelectorError, match="NUL"):
            await s.create_consumer(address="limits", subscription="sub", shared=True, filter="color = 'a\x00b'")

        # At the limits exactly, everything is stored (the PostgreSQL columns hold it) and works.
        at_limit = "d" * lim.MAX_DUPLICATE_ID_LENGTH
        await p.send(b"kept", routing_type="anycast", duplicate_id=at_limit,
                     properties={"k" * lim.MAX_PROPERTY_NAME_LENGTH: "y"})
        with pytest.raises(DuplicateIdError):
            await p.send(b"again", routing_type="anycast", duplicate_id=at_limit)
        long_queue = "q" * lim.MAX_NAME_LENGTH
        await conn.admin.create_queue(long_queue, address="limits.long", routing_type="anycast")
        c = await s.create_consumer("limits")
        m = await c.receive(5)
        assert m.body == b"kept"
        m.ack()
    assert router.proc.poll() is None, router.log_tail()
    # The stored state is readable after a restart (nothing half written).
    router.stop()
    router.start()
    async with await connect(router.url) as conn:
        names = {q.name for q in await conn.admin.list_queues()}
        assert long_queue in names
        s = await conn.session()
        p = await s.create_producer("limits")
        with pytest.raises(DuplicateIdError):
            await p.send(b"again", routing_type="anycast", duplicate_id=at_limit)
