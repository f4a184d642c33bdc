"""A router's memory with the default configuration and a deep queue (issue #25).

Starts a node from the starter configuration `meshmq up` writes (no
max-size-bytes, no global-max-size: the computed default; the admin gateway
in the process, as there), then:

1. records the RSS of the router process and of its journal writer process
   (a child of the router) once the node is ready;
2. fills one anycast queue with COUNT durable 1 KB messages (one producer, as
   fast as its confirmation window allows) and records RSS at the end of the
   fill (peak during it too), with the queue's paged count;
3. kills the router (SIGKILL) and starts it again: RSS once it is ready
   (recovery done) and how long that took;
4. drains the queue with one consumer, checking every message arrives once
   and in order, and records RSS once it is empty (peak during the drain too).

Each settled figure is taken after SETTLE seconds of quiet. Prints one JSON
line per phase, then a table.

    .venv/bin/python bench/memory.py [--count 2000000] [--settle 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil  # noqa: E402
from paging import receive_in_order  # noqa: E402
from throughput import launch_node  # noqa: E402

from meshmq.client import connect  # noqa: E402
from meshmq.config.loader import default_dev_config_yaml  # noqa: E402
from meshmq.memwatch import RssSampler  # noqa: E402
from meshmq.ports import free_port  # noqa: E402

QUEUE = "memory.bench"
BODY = b"x" * 1024
MB = 2**20


def start(workdir: Path) -> tuple[subprocess.Popen, str, float]:
    """The node of `workdir` (its config written on first start); its URL and seconds to ready."""
    cfg = workdir / "node.yaml"
    if not cfg.exists():
        cfg.write_text(default_dev_config_yaml(name="membench", port=0, data_directory=str(workdir / "data"),
                                               console_port=free_port()))
    t0 = time.monotonic()
    proc, url = launch_node(cfg, workdir, quiet=False, timeout=600)  # (the effective configuration in its log)
    return proc, url, time.monotonic() - t0


def rss(pid: int) -> dict:
    """RSS in MB of the router process and of its child processes (the journal writer)."""
    router = psutil.Process(pid)
    writer = 0
    for child in router.children(recursive=True):
        try:
            writer += child.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return {"router_rss_mb": round(router.memory_info().rss / MB), "writer_rss_mb": round(writer / MB)}


def settled(pid: int, seconds: float) -> dict:
    time.sleep(seconds)
    return rss(pid)


async def fill(url: str, count: int) -> tuple[float, dict]:
    async with await connect(url) as conn:
        await conn.admin.create_queue(QUEUE, address=QUEUE, routing_type="anycast")
        s = await conn.session()
        p = await s.create_producer(QUEUE)
        t0 = time.perf_counter()
        pending = []
        for i in range(count):
            pending.append(await p.send_async(BODY, properties={"n": i}, routing_type="anycast", durable=True))
            if len(pending) >= 20_000:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
        rate = count / (time.perf_counter() - t0)
        return rate, await counts(conn)


async def counts(conn) -> dict:
    q = await conn.admin.queue(QUEUE)
    info = await conn.admin.node_info()
    return {"message_count": q.message_count, "paged_count": q.paged_count,
            "memory_bytes": info.memory_bytes, "global_max_size": info.global_max_size}


async def queue_counts(url: str) -> dict:
    async with await connect(url) as conn:
        return await counts(conn)


async def drain(url: str, count: int) -> float:
    async with await connect(url) as conn:
        c = await (await conn.session()).create_consumer(QUEUE)
        rate = await receive_in_order(c, count)
        deadline = time.monotonic() + 30  # the last acks travel on the session stream, not with this call
        while (left := (await conn.admin.queue(QUEUE)).message_count) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        if left:
            raise SystemExit(f"{left} messages left after the drain")
        await c.close()
        return rate


def report(phase: str, **fields) -> dict:
    row = {"phase": phase, **fields}
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=2_000_000)
    ap.add_argument("--settle", type=float, default=5.0, help="seconds of quiet before a settled RSS reading")
    ap.add_argument("--keep", help="a directory for the node (kept) instead of a temporary one")
    args = ap.parse_args()
    print(f"# machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, "
          f"{psutil.virtual_memory().total / 2**30:.1f} GiB, Python {platform.python_version()}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="meshmq-memory-bench-") as tmp:
        work = Path(args.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        proc, url, took = start(work)
        try:
            rows.append(report("start", **settled(proc.pid, args.settle), ready_s=round(took, 2)))
            with RssSampler(proc.pid, interval=0.2) as sampler:
                rate, c = asyncio.run(fill(url, args.count))
            rows.append(report("filled", **settled(proc.pid, args.settle), router_peak_mb=round(sampler.peak / MB),
                               msg_per_s=round(rate), **c))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(60)
        proc, url, took = start(work)
        try:
            c = asyncio.run(queue_counts(url))
            rows.append(report("restarted (kill -9, recovered)", **settled(proc.pid, args.settle),
                               ready_s=round(took, 2), **c))
            with RssSampler(proc.pid, interval=0.2) as sampler:
                rate = asyncio.run(drain(url, args.count))
            rows.append(report("drained, in order", **settled(proc.pid, args.settle),
                               router_peak_mb=round(sampler.peak / MB), msg_per_s=round(rate)))
        finally:
            proc.terminate()
            proc.wait(120)
    print(f"\n{'phase':<34} {'router RSS':>11} {'writer RSS':>11} {'router peak':>12} {'msg/s':>8}")
    for r in rows:
        peak = f"{r['router_peak_mb']} MB" if "router_peak_mb" in r else ""
        print(f"{r['phase']:<34} {r['router_rss_mb']:>8} MB {r['writer_rss_mb']:>8} MB {peak:>12} "
              f"{r.get('msg_per_s', ''):>8}")


if __name__ == "__main__":
    main()
