"""Send latency with a backlog that no consumer selects (issue #9 defect 9).

Starts a fresh node (as bench/throughput.py does), fills one queue with
BACKLOG durable messages that its one consumer's selector rejects, then
times SENDS sequential durable sends (each waits for its confirm) to that
queue — every one of them triggers a dispatch of the queue. The same sends
to a node with an empty queue (and the same consumer) give the baseline.
Prints one JSON line per case and the ratio of the medians.

    .venv/bin/python bench/selector_backlog.py [--backlog 100000] [--sends 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from throughput import start_node  # noqa: E402

from meshmq.client import connect  # noqa: E402


async def case(url: str, backlog: int, sends: int) -> dict:
    async with await connect(url) as conn:
        s = await conn.session()
        p = await s.create_producer("backlog")
        futs = [await p.send_async(b"x" * 1024, properties={"color": "blue"}, routing_type="anycast")
                for _ in range(backlog)]
        await asyncio.gather(*futs)
        c = await s.create_consumer("backlog", filter="color = 'red'")  # selects none of them
        await p.send(b"warm-up", properties={"color": "green"}, routing_type="anycast")
        times = []
        for _ in range(sends):
            t0 = time.perf_counter()
            await p.send(b"y" * 1024, properties={"color": "green"}, routing_type="anycast")
            times.append((time.perf_counter() - t0) * 1000)
        await c.close()
    times.sort()
    return {
        "backlog": backlog,
        "sends": sends,
        "send_p50_ms": round(statistics.median(times), 3),
        "send_p99_ms": round(times[int(len(times) * 0.99) - 1], 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backlog", type=int, default=100_000)
    ap.add_argument("--sends", type=int, default=300)
    args = ap.parse_args()
    results = []
    for backlog in (0, args.backlog):
        with tempfile.TemporaryDirectory(prefix="meshmq-selector-bench-") as tmp:
            proc, url = start_node(Path(tmp), sync=True)
            try:
                results.append(asyncio.run(case(url, backlog, args.sends)))
            finally:
                proc.terminate()
                proc.wait(30)
        print(json.dumps(results[-1]), flush=True)
    print(f"median send latency with the backlog / without: {results[1]['send_p50_ms'] / results[0]['send_p50_ms']:.2f}x")


if __name__ == "__main__":
    main()
