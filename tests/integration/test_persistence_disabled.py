"""`persistence-enabled: false`: everything lives in memory, large bodies
included; the store holds only the node's identity."""

from __future__ import annotations

import sqlite3

import pytest

from meshmq.client import connect

pytestmark = pytest.mark.integration


async def test_nothing_but_the_node_identity_is_written(nodes):
    node = nodes.router("memory-only", extra="persistence-enabled: false\nid-cache-size: 10\n")
    async with await connect(node.url) as conn:
        s = await conn.session()
        sub = await s.create_consumer(address="news", subscription="keep", shared=True)
        p = await s.create_producer()
        for i in range(20):
            await p.send(f"o{i}".encode(), address="orders", duplicate_id=f"d{i}", routing_type="anycast")
            await p.send(f"n{i}".encode(), address="news", routing_type="multicast")
        c = await s.create_consumer("orders")
        for i in range(10):
            (await c.receive(5)).ack()
            (await sub.receive(5)).ack()
        await conn.admin.create_queue("declared", address="declared", routing_type="anycast")
    node.stop()
    db = sqlite3.connect(node.workdir / "memory-only-data" / "journal.db")
    counts = {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
              for t in ("addresses", "queues", "messages", "message_refs", "duplicate_ids", "events",
                        "large_message_chunks")}
    keys = {k for (k,) in db.execute("SELECT key FROM node_state")}
    db.close()
    assert counts == dict.fromkeys(counts, 0)
    assert "node_id" in keys and "reserved_message_ids_to" in keys


async def test_large_bodies_stay_in_memory_and_arrive_whole(nodes):
    node = nodes.router("memory-large", extra="persistence-enabled: false\n")
    bodies = [bytes([i]) * 350_000 + b"end" for i in range(2)]  # > minLargeMessageSize: sent in chunks
    async with await connect(node.url) as conn:
        s = await conn.session()
        p = await s.create_producer("big")
        for body in bodies:
            await p.send(body, routing_type="anycast")
        # Waiting in the router, not in the store.
        db = sqlite3.connect(node.workdir / "memory-large-data" / "journal.db")
        assert db.execute("SELECT count(*) FROM large_message_chunks").fetchone()[0] == 0
        db.close()
        c = await s.create_consumer("big")
        for body in bodies:
            m = await c.receive(10)
            assert m is not None and m.body == body
            m.ack()
        assert await c.receive(0.3) is None
