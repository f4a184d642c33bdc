"""End-to-end throughput and confirm latency of one node on SQLite.

Starts a fresh node for each mode (`meshmq serve router`, embedded journal,
SQLite WAL with synchronous=FULL: a durable confirm means the commit reached
the disk), then runs one producer and one consumer concurrently in one client
process with 1 KB messages and prints one JSON line per run: messages/s end
to end and p50/p99 confirm latency.

Modes: `durable` and `non-durable` send as fast as the confirmation window
allows (saturation: the most msg/s; the latency there is mostly queueing
behind the window). `durable@RATE` sends durable messages at RATE msg/s on a
schedule and counts each confirm from when its message was due: the latency
a user sending at that rate sees (see meshmq/perf.py).

    .venv/bin/python bench/throughput.py [--count 200000] [--size 1024]
        [--modes durable,non-durable,durable@25000] [--repeat 3]
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


async def run(url: str, count: int, size: int, mode: str) -> dict:
    kind, _, rate = mode.partition("@")
    durable = kind == "durable"
    address = f"bench.{'durable' if durable else 'nondurable'}"
    prod, cons, total = await perf.client(url, address, count, size, durable, rate=float(rate) if rate else None)
    return {
        "mode": mode,
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
    ap.add_argument("--modes", default="durable,non-durable,durable@25000")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each mode, each on a fresh node")
    ap.add_argument("--window", type=int, default=0, help="confirmationWindowSize in bytes (0 = the SDK default, 1 MiB)")
    args = ap.parse_args()
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    print(f"# machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}")
    for mode in args.modes.split(","):
        kind = mode.partition("@")[0]
        if kind not in ("durable", "non-durable"):
            raise SystemExit(f"unknown mode {mode!r}: durable, non-durable or durable@RATE")
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="meshmq-bench-") as tmp:
                proc, url = start_node(Path(tmp), sync=True)
                if args.window:
                    url += f"?confirmationWindowSize={args.window}"
                try:
                    result = asyncio.run(run(url, args.count, args.size, mode))
                    result["window"] = args.window or 1048576
                    print(json.dumps(result), flush=True)
                finally:
                    proc.terminate()
                    proc.wait(30)


if __name__ == "__main__":
    main()
