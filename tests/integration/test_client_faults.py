"""A client that dies (kill -9) or drops its connection loses nothing it had not acknowledged."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from meshmq.client import connect
from tests.fixtures.nodes import wait_for

pytestmark = pytest.mark.integration

CLIENT = textwrap.dedent(
    """
    import asyncio, os, sys
    from meshmq.client import connect

    async def main(url, queue, marker):
        conn = await connect(url)
        s = await conn.session()
        c = await s.create_consumer(queue)
        got = [await c.receive(10) for _ in range(3)]
        got[0].ack()
        await s.create_producer("barrier")  # answered after the router processed the ack (one ordered stream)
        with open(marker + ".tmp", "w") as f:  # renamed into place: the test never reads half a file
            f.write(",".join(m.body.decode() for m in got))
        os.replace(marker + ".tmp", marker)
        await asyncio.Event().wait()  # hold the rest, unacknowledged, until killed

    asyncio.run(main(*sys.argv[1:]))
    """
)


async def test_killed_consumer_process_gets_its_unacked_messages_redelivered(shared_router, tmp_path):
    queue = f"faults.{os.getpid()}"
    async with await connect(shared_router.url) as conn:
        s = await conn.session()
        p = await s.create_producer(queue)
        for i in range(5):
            await p.send(f"m{i}".encode(), routing_type="anycast")
        marker = tmp_path / "received"
        proc = subprocess.Popen([sys.executable, "-c", CLIENT, shared_router.url, queue, str(marker)])
        try:
            wait_for(marker.exists, 30, "the client to receive its messages")
            assert marker.read_text() == "m0,m1,m2"
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        c = await s.create_consumer(queue)
        got = []
        while (m := await c.receive(5)) is not None and len(got) < 4:
            got.append((m.body.decode(), m.delivery_count))
            m.ack()
        # m0 was acknowledged. m1..m4 come back in order: m1, m2 were received and
        # m3, m4 sat in the dead client's consumer buffer, so all were delivered once.
        assert got == [("m1", 2), ("m2", 2), ("m3", 2), ("m4", 2)]
