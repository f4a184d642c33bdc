"""A 50 MB message through one node: time and the router's peak RSS growth.

    .venv/bin/python bench/large_message.py [--mb 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from throughput import start_node  # noqa: E402

from meshmq.client import connect  # noqa: E402
from meshmq.memwatch import RssSampler  # noqa: E402


async def run(url: str, pid: int, mb: int, repeat: int) -> list[dict]:
    body = os.urandom(mb * 2**20)
    out = []
    async with await connect(url) as conn:
        s = await conn.session()
        p = await s.create_producer("bench.large")
        c = await s.create_consumer("bench.large")
        for _ in range(repeat):
            with RssSampler(pid) as rss:
                t0 = time.perf_counter()
                await p.send(body, routing_type="anycast")
                t1 = time.perf_counter()
                got = await c.receive(300)
                t2 = time.perf_counter()
                got.ack()
            assert got.body == body
            out.append({
                "mb": mb,
                "send_s": round(t1 - t0, 2),
                "receive_s": round(t2 - t1, 2),
                "router_rss_growth_mb": round(rss.growth_mb, 1),
                "router_rss_peak_mb": round(rss.peak / 2**20, 1),
            })
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="meshmq-bench-") as tmp:
        proc, url = start_node(Path(tmp), sync=True)
        try:
            for row in asyncio.run(run(url, proc.pid, args.mb, args.repeat)):
                print(json.dumps(row))
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
