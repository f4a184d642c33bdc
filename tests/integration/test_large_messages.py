"""A 50 MB body round-trips in chunks while the router's memory stays bounded."""

from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3

import pytest

from meshmq.client import connect
from meshmq.memwatch import RssSampler
from tests.fixtures.nodes import wait_for

pytestmark = pytest.mark.integration

BODY_MB = 50
# The router's RSS growth while the body goes through: 10-14 MB measured alone
# (gRPC buffers, a few chunks, the allocator's high-water mark), 30 MB once
# under the whole suite's four workers. A router holding the body whole grows
# by all of it at least, so three quarters of the body still tells the two apart.
RSS_BOUND_MB = BODY_MB * 3 / 4


async def test_50mb_message_round_trip_with_bounded_router_memory(nodes):
    node = nodes.router("large")
    body = os.urandom(BODY_MB * 2**20)
    async with await connect(node.url) as conn:
        s = await conn.session()
        p = await s.create_producer("large.q")
        await p.send(b"warm-up" * 20000, routing_type="anycast")  # a small large message first
        c = await s.create_consumer("large.q")
        (await c.receive(30)).ack()
        with RssSampler(node.proc.pid) as rss:
            await p.send(body, properties={"sha": hashlib.sha256(body).hexdigest()}, routing_type="anycast")
            got = await c.receive(120)
            got.ack()
        assert len(got.body) == len(body)
        assert hashlib.sha256(got.body).hexdigest() == got.properties["sha"]
        print(f"router RSS grew {rss.growth_mb:.1f} MB while a {BODY_MB} MB message went through")
        assert rss.growth_mb < RSS_BOUND_MB, f"router RSS grew {rss.growth_mb:.1f} MB for a {BODY_MB} MB body"
        deadline = asyncio.get_running_loop().time() + 10
        while (await conn.admin.queue("large.q")).message_count:  # acks travel asynchronously
            assert asyncio.get_running_loop().time() < deadline, "the ack never took effect"
            await asyncio.sleep(0.02)
    # the stored chunks are deleted once the message is acknowledged
    db = node.workdir / "large-data" / "journal.db"

    def chunks_left() -> int:
        with sqlite3.connect(db) as con:
            return con.execute("SELECT count(*) FROM large_message_chunks").fetchone()[0]

    wait_for(lambda: chunks_left() == 0, 10, "large-message chunks to be deleted")


async def test_a_large_message_whose_stream_fails_midway_reaches_the_consumer_as_an_error(nodes):
    """Chunks gone from the store mid-body: the consumer gets an error, not a wait for a last chunk that never comes."""
    from meshmq.errors import MeshMQError

    node = nodes.router("broken-large")
    async with await connect(node.url) as conn:
        s = await conn.session()
        p = await s.create_producer("broken.q")
        await p.send(os.urandom(2 * 2**20), routing_type="anycast")  # 2 MB: many chunks
        db = sqlite3.connect(node.workdir / "broken-large-data" / "journal.db")
        with db:
            deleted = db.execute("DELETE FROM large_message_chunks WHERE seq >= 5").rowcount
        db.close()
        assert deleted > 0
        c = await s.create_consumer("broken.q")
        with pytest.raises(MeshMQError, match="could not be streamed"):
            await asyncio.wait_for(c.receive(30), 30)
