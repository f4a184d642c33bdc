"""What the feature tests on a router use: names of their own (the shared
router is shared), and taking the messages of a consumer or a queue."""

from __future__ import annotations

import uuid


def uniq(prefix: str) -> str:
    """A queue or address name no other test on the shared router uses."""
    return f"{prefix}.{uuid.uuid4().hex[:8]}"


async def receive_all(consumer, n: int, timeout: float = 5.0):
    """Up to `n` messages, stopping at the first `timeout` without one."""
    out = []
    while len(out) < n:
        msg = await consumer.receive(timeout)
        if msg is None:
            break
        out.append(msg)
    return out


async def drain(conn, queue: str, expect: int) -> list:
    """Exactly `expect` messages of `queue`, each acknowledged: fails when fewer
    come within 10 s each, or when one more comes within 0.2 s."""
    c = await (await conn.session()).create_consumer(queue)
    got = []
    for _ in range(expect):
        m = await c.receive(10)
        assert m is not None, f"{queue}: only {len(got)} of {expect} messages came"
        got.append(m)
        m.ack()
    assert await c.receive(0.2) is None, f"{queue}: more than {expect} messages"
    await c.close()
    return got
