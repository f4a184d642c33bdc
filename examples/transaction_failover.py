"""Once and only once through a failover: the seed's recipe, as written.

A transacted producer sends each batch with a duplicate id per message. If
the session fails over during the batch, or while commit() waits for its
answer, commit raises TransactionRolledBackError: the whole batch is sent
again with the same ids, on the same session, and committed. A message the
old live had already committed is refused as a duplicate (DuplicateIdError
at its send) instead of being stored twice.

    python examples/transaction_failover.py 'meshmq://127.0.0.1:61616?reconnectAttempts=-1' orders 10

Run it against a live with a backup (docs/ha.md) and kill the live while it
runs: every message is stored exactly once.
"""

from __future__ import annotations

import asyncio
import sys

from meshmq.client import DuplicateIdError, TransactionRolledBackError, UnblockedError, connect


async def send_batch(session, producer, batch: list[tuple[str, bytes]]) -> int:
    """Send and commit `batch` ((duplicate id, body) pairs); returns how many attempts it took."""
    attempts = 0
    while True:
        attempts += 1
        try:
            for dup, body in batch:
                try:
                    await producer.send(body, duplicate_id=dup)
                except DuplicateIdError:
                    pass  # committed by an earlier attempt: already stored once
            await session.commit()
            return attempts
        except (TransactionRolledBackError, UnblockedError):
            continue  # the session failed over: the transaction is rolled back, send it all again


async def main(uri: str, address: str, count: int, batch_size: int = 5) -> None:
    async with await connect(uri) as conn:
        session = await conn.session(transacted=True)
        producer = await session.create_producer(address)
        retried = 0
        for start in range(0, count, batch_size):
            batch = [(f"example-{i}", f"message {i}".encode()) for i in range(start, min(start + batch_size, count))]
            retried += await send_batch(session, producer, batch) - 1
        print(f"sent {count} messages in batches of {batch_size}; {retried} batch(es) sent again after a failover")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 10))
