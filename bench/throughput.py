"""End-to-end throughput and confirm latency of one node on SQLite.

Starts a node (`meshmq serve router`, embedded journal, SQLite WAL with
synchronous=FULL: a durable confirm means the commit reached the disk), then
runs one producer and one consumer concurrently in one client process, first
with durable then with non-durable 1 KB messages, and prints messages/s and
p50/p99 confirm latency for each.

    .venv/bin/python bench/throughput.py [--count 200000] [--size 1024]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from meshmq import perf  # noqa: E402


def start_node(workdir: Path, sync: bool) -> tuple[subprocess.Popen, str]:
    cfg = workdir / "node.yaml"
    cfg.write_text(
        f"name: bench\ndata-directory: {workdir / 'data'}\n"
        "acceptors:\n  - {name: grpc, host: 127.0.0.1, port: 0}\n"
        f"journal:\n  sync: {'true' if sync else 'false'}\n"
    )
    ready = workdir / "ready.json"
    log = open(workdir / "node.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "meshmq.cli.main", "serve", "router", "--config", str(cfg), "--ready-file", str(ready), "--quiet"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"node did not start; see {workdir / 'node.log'}")
        time.sleep(0.05)
    return proc, "meshmq://" + json.loads(ready.read_text())["endpoints"][0]


async def run(url: str, count: int, size: int, durable: bool) -> dict:
    address = f"bench.{'durable' if durable else 'nondurable'}"
    prod, cons, total = await perf.client(url, address, count, size, durable)
    return {
        "mode": "durable" if durable else "non-durable",
        "messages": cons.messages,
        "msg_per_s": round(total.rate),
        "producer_msg_per_s": round(prod.rate),
        "consumer_msg_per_s": round(cons.rate),
        "confirm_p50_ms": round(prod.percentile(50), 2),
        "confirm_p99_ms": round(prod.percentile(99), 2),
        "e2e_p50_ms": round(cons.percentile(50), 2),
        "e2e_p99_ms": round(cons.percentile(99), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--modes", default="durable,non-durable")
    ap.add_argument("--window", type=int, default=0, help="confirmationWindowSize in bytes (0 = the SDK default, 1 MiB)")
    args = ap.parse_args()
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    print(f"# machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}")
    for mode in args.modes.split(","):
        with tempfile.TemporaryDirectory(prefix="meshmq-bench-") as tmp:
            proc, url = start_node(Path(tmp), sync=True)
            if args.window:
                url += f"?confirmationWindowSize={args.window}"
            try:
                result = asyncio.run(run(url, args.count, args.size, mode == "durable"))
                result["window"] = args.window or 1048576
                print(json.dumps(result))
            finally:
                proc.terminate()
                proc.wait(30)


if __name__ == "__main__":
    main()
