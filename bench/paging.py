"""Paging at scale (issue #9): a queue far bigger than its address's memory.

Starts a fresh node (SQLite WAL, synchronous=FULL) whose address "paged" has
max-size-bytes 10 MiB, fills one queue with COUNT durable 1 KB messages
(producer alone, as fast as its confirmation window allows), restarts the
node (SIGTERM, then start; the time to listen is reported), then drains the
queue with one consumer, checking every message arrives once and in order.
Router RSS is sampled throughout. For comparison it runs the same fill with
no limit (every message in memory) on COMPARE messages, for the throughput
of the in-memory path. Prints one JSON line per phase.

    .venv/bin/python bench/paging.py [--count 2000000] [--compare 200000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from throughput import start_node  # noqa: E402

from meshmq.client import connect  # noqa: E402
from meshmq.memwatch import RssSampler  # noqa: E402

BODY = b"x" * 1024


def start(workdir: Path, limit: str) -> tuple[subprocess.Popen, str, float]:
    """A node whose address "paged" has max-size-bytes `limit`; also how long it took to listen."""
    t0 = time.monotonic()
    proc, url = start_node(workdir, True, f"address-settings:\n  paged:\n    max-size-bytes: {limit}\n")
    return proc, url, time.monotonic() - t0


async def fill(url: str, count: int) -> float:
    async with await connect(url) as conn:
        await conn.admin.create_queue("paged", address="paged", routing_type="anycast")
        s = await conn.session()
        p = await s.create_producer("paged")
        t0 = time.perf_counter()
        pending = []
        for i in range(count):
            pending.append(await p.send_async(BODY, properties={"n": i}, routing_type="anycast"))
            if len(pending) >= 20_000:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
        return count / (time.perf_counter() - t0)


async def receive_in_order(consumer, count: int) -> float:
    """Receive and acknowledge `count` messages whose property n runs 0, 1, ...
    (exiting on a gap or a reordering); messages/s."""
    t0 = time.perf_counter()
    expect = 0
    while expect < count:
        batch = await consumer.receive_batch(1000, timeout=60)
        if not batch:
            raise SystemExit(f"only {expect} of {count} messages came back")
        for m in batch:
            if m.properties["n"] != expect:
                raise SystemExit(f"message {m.properties['n']} arrived where {expect} was due")
            expect += 1
            m.ack()
    return count / (time.perf_counter() - t0)


async def drain_checked(url: str, count: int) -> tuple[float, int]:
    async with await connect(url) as conn:
        paged = (await conn.admin.queue("paged")).paged_count
        c = await (await conn.session()).create_consumer("paged")
        rate = await receive_in_order(c, count)
        left = (await conn.admin.queue("paged")).message_count
        if left:
            raise SystemExit(f"{left} messages left after the drain")
        return rate, paged


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=2_000_000)
    ap.add_argument("--compare", type=int, default=200_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="meshmq-paging-bench-") as tmp:
        work = Path(tmp)
        (work / "mem").mkdir()
        proc, url, _ = start(work / "mem", "-1")
        try:
            rate = asyncio.run(fill(url, args.compare))
        finally:
            proc.terminate()
            proc.wait(60)
        print(json.dumps({"phase": "fill, no limit (in memory)", "messages": args.compare, "msg_per_s": round(rate)}),
              flush=True)
        (work / "paged").mkdir()
        proc, url, _ = start(work / "paged", "10M")
        try:
            with RssSampler(proc.pid, interval=0.2) as rss:
                rate = asyncio.run(fill(url, args.count))
            print(json.dumps({"phase": "fill, max-size-bytes 10M (paging)", "messages": args.count,
                              "msg_per_s": round(rate), "router_rss_peak_mb": round(rss.peak / 2**20)}), flush=True)
        finally:
            proc.terminate()
            proc.wait(120)
        proc, url, took = start(work / "paged", "10M")
        try:
            with RssSampler(proc.pid, interval=0.2) as rss:
                rate, paged = asyncio.run(drain_checked(url, args.count))
            print(json.dumps({"phase": "restart, then drain in order", "restart_s": round(took, 2),
                              "paged_after_restart": paged, "msg_per_s": round(rate),
                              "router_rss_peak_mb": round(rss.peak / 2**20)}), flush=True)
        finally:
            proc.terminate()
            proc.wait(120)


if __name__ == "__main__":
    main()
