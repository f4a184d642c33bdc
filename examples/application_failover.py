"""Application-level failover: no automatic reconnection (reconnectAttempts=0,
the default); the application hears the failure and rebuilds on another node.

    python examples/application_failover.py orders 10 meshmq://127.0.0.1:61616 meshmq://127.0.0.1:61626

Consumes `count` messages from `address` on the first node that answers; when its connection
fails, the session's exception listener fires, the application closes what it
had and connects to the next URI in its list. Messages it received but did not
acknowledge stay on the failed node (durable ones come back when it does).
Prints each message's body as it acknowledges it.
"""

from __future__ import annotations

import asyncio
import sys

from meshmq.client import ConnectionFailedError, MeshMQError, connect


async def consume(address: str, uris: list[str], stop_after: int) -> list[bytes]:
    received: list[bytes] = []
    turn = 0
    while len(received) < stop_after:
        uri = uris[turn % len(uris)]
        turn += 1
        try:
            conn = await connect(uri)
        except ConnectionFailedError as exc:
            print(f"cannot reach {uri}: {exc}; trying the next node", flush=True)
            await asyncio.sleep(0.2)
            continue
        failed = asyncio.Event()
        try:
            session = await conn.session()
            session.exception_listener = lambda err: failed.set()  # the connection is gone
            consumer = await session.create_consumer(address)
            print(f"consuming {address} on {uri}", flush=True)
            while len(received) < stop_after and not failed.is_set():
                try:
                    msg = await consumer.receive(1)
                except MeshMQError as exc:
                    print(f"lost {uri}: {exc}", flush=True)
                    break
                if msg is not None:
                    msg.ack()
                    received.append(msg.body)
                    print(msg.body.decode(), flush=True)
        finally:
            await conn.close()
    return received


if __name__ == "__main__":
    asyncio.run(consume(sys.argv[1], sys.argv[3:], int(sys.argv[2])))
