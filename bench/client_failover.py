"""Client failover time as an application sees it: kill -9 of the live -> the
first message consumed again, on the backup, by the same consumer object.

For each of --kills runs: a fresh replicating group (bench/replication.py's:
classic by default, a master and its slave beside two voting lives; or
`--quorum etcd`, a primary and its backup on an etcd this script starts), a
client connected to the live with automatic failover, a producer sending 1 KB
durable messages with duplicate ids at --rate msg/s and a consumer acking
them. The live is killed with SIGKILL; the script times, from the kill, the
failure as the client detects it (FAILURE_DETECTED), the failover as it
completes (FAILOVER_COMPLETED) and the first message the consumer receives on
the new stream. Prints one JSON line per kill, then p50/p99/max.

    .venv/bin/python bench/client_failover.py [--kills 10] [--quorum classic|etcd] [--retry-ms 100] [--rate 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.replication import classic_group, pair  # noqa: E402
from meshmq.client import FailoverEventType, UnblockedError, connect  # noqa: E402
from meshmq.errors import DuplicateIdError  # noqa: E402
from meshmq.launcher.etcd import EtcdServer  # noqa: E402

QUEUE = "orders"


async def one_kill(url: str, live, retry_ms: int, rate: int) -> dict:
    conn = await connect(f"{url}?reconnectAttempts=-1&retryInterval={retry_ms}&maxRetryInterval={retry_ms}")
    seen: dict[FailoverEventType, float] = {}
    conn.add_failover_listener(lambda event, err: seen.setdefault(event, time.monotonic()))
    deadline = time.monotonic() + 10
    while not conn._backup_of:  # the topology names the backup the session will move to
        if time.monotonic() > deadline:
            raise SystemExit("the live never named its backup")
        await asyncio.sleep(0.02)
    stop = asyncio.Event()
    consumed_again = asyncio.get_running_loop().create_future()

    async def produce() -> None:
        producer = await (await conn.session()).create_producer(QUEUE)
        i, start = 0, time.monotonic()
        while not stop.is_set():
            dup = f"m-{i}"
            try:
                await producer.send(b"x" * 1024, duplicate_id=dup)
            except (UnblockedError, DuplicateIdError):
                pass  # (resending is bench/… and the tests' business; here only the timing counts)
            i += 1
            await asyncio.sleep(max(0.0, start + i / rate - time.monotonic()))

    async def consume() -> None:
        session = await conn.session()
        consumer = await session.create_consumer(QUEUE)
        while not stop.is_set():
            m = await consumer.receive(1)
            if m is None:
                continue
            if session.failovers and not consumed_again.done():
                consumed_again.set_result(time.monotonic())
            try:
                m.ack()
            except UnblockedError:
                pass

    tasks = [asyncio.create_task(produce()), asyncio.create_task(consume())]
    try:
        await asyncio.sleep(1.0)  # steady traffic first
        killed = time.monotonic()
        os.kill(live.pid, signal.SIGKILL)
        first = await asyncio.wait_for(consumed_again, 60)
        deadline = time.monotonic() + 30
        while FailoverEventType.FAILOVER_COMPLETED not in seen:  # every session moved (the producer's too)
            if time.monotonic() > deadline:
                raise SystemExit("the failover did not complete")
            await asyncio.sleep(0.01)
        return {
            "detected_s": round(seen[FailoverEventType.FAILURE_DETECTED] - killed, 3),
            "failover_completed_s": round(seen[FailoverEventType.FAILOVER_COMPLETED] - killed, 3),
            "first_consumed_s": round(first - killed, 3),
        }
    finally:
        stop.set()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await conn.close()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--quorum", choices=("classic", "etcd"), default="classic")
    ap.add_argument("--session-ms", type=int, default=2000, help="etcd quorum session (with --quorum etcd)")
    ap.add_argument("--retry-ms", type=int, default=100, help="the client's retryInterval = maxRetryInterval")
    ap.add_argument("--rate", type=int, default=2000, help="messages per second the producer sends")
    args = ap.parse_args()
    print(f"# machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"# {args.quorum} replication, client retryInterval={args.retry_ms} ms, {args.rate} msg/s")
    rows = []
    with tempfile.TemporaryDirectory(prefix="meshmq-etcd-") as etcd_dir:
        etcd = EtcdServer(Path(etcd_dir)) if args.quorum == "etcd" else None
        if etcd is not None:
            etcd.start()
        try:
            for _ in range(args.kills):
                with tempfile.TemporaryDirectory(prefix="meshmq-bench-") as tmp:
                    live, backup, url, _, others = (
                        classic_group(Path(tmp)) if etcd is None else pair(Path(tmp), etcd.endpoint, args.session_ms)
                    )
                    try:
                        result = asyncio.run(one_kill(url, live, args.retry_ms, args.rate))
                    finally:
                        for p in (live, backup, *others):
                            if p.poll() is None:
                                p.terminate()
                                p.wait(30)
                print(json.dumps(result), flush=True)
                rows.append(result)
        finally:
            if etcd is not None:
                etcd.stop()
    print(f"\n{'from kill -9 to':<28} {'p50':>8} {'p99':>8} {'max':>8}")
    for key, label in (("detected_s", "failure detected"), ("failover_completed_s", "failover completed"),
                       ("first_consumed_s", "first message consumed")):
        values = [r[key] for r in rows]
        print(f"{label:<28} {statistics.median(values):>7.3f}s {percentile(values, 0.99):>7.3f}s {max(values):>7.3f}s")


if __name__ == "__main__":
    main()
