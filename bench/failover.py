"""Shared-store failover time: kill -9 of the live -> its backup serves.

Starts a live and a backup (`ha-policy: shared-store`) on a fresh PostgreSQL
database, sends --messages durable messages to the live, kills it with
SIGKILL, and times until the backup answers a session (lease taken, store
activated at a new epoch, state loaded, acceptor listening). Prints one JSON
line per run and a table, for each --lease RENEW/EXPIRATION pair (ms).

    .venv/bin/python bench/failover.py --journal-url postgresql+psycopg://postgres@127.0.0.1:5432/test \
        [--lease 200/1000,500/2000,2000/20000] [--repeat 3] [--messages 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.throughput import fresh_database, start_node  # noqa: E402
from meshmq.client import connect  # noqa: E402
from meshmq.ports import free_port  # noqa: E402


def start(workdir: Path, name: str, db: str, role: str, renew: int, expiration: int) -> tuple[subprocess.Popen, str]:
    """One node of the pair (bench/throughput.py's start_node, in a directory of its own)."""
    port = free_port()
    directory = workdir / name
    directory.mkdir()
    proc, _ = start_node(directory, sync=True, port=port,
                         journal=f"  url: {db}\n  jdbc-lock-renew-period: {renew}\n  jdbc-lock-expiration: {expiration}\n",
                         extra_config=(f"ha-policy:\n  shared-store:\n    {role}: {{}}\n"
                                       "addresses:\n  orders: {anycast: [{name: orders}]}\n"))
    return proc, f"127.0.0.1:{port}"


async def serves(endpoint: str) -> bool:
    try:
        async with await connect(f"meshmq://{endpoint}?callTimeout=500") as conn:
            return bool((await conn.admin.node_info()).node_id)
    except Exception:
        return False


async def one_run(db: str, renew: int, expiration: int, messages: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="meshmq-failover-") as tmp:
        live, live_ep = start(Path(tmp), "live", db, "master", renew, expiration)
        backup, backup_ep = start(Path(tmp), "backup", db, "slave", renew, expiration)
        try:
            async with await connect(f"meshmq://{live_ep}") as conn:
                producer = await (await conn.session()).create_producer("orders")
                await asyncio.gather(*[await producer.send_async(b"x" * 1024) for _ in range(messages)])
            killed = time.monotonic()
            os.kill(live.pid, signal.SIGKILL)
            live.wait()
            while not await serves(backup_ep):
                if time.monotonic() - killed > expiration / 1000 + 60:
                    raise SystemExit("the backup did not take over")
                await asyncio.sleep(0.01)
            took = time.monotonic() - killed
            async with await connect(f"meshmq://{backup_ep}") as conn:
                count = (await conn.admin.queue("orders")).message_count
            return {"renew_ms": renew, "expiration_ms": expiration, "messages": count, "failover_s": round(took, 3)}
        finally:
            for proc in (live, backup):
                if proc.poll() is None:
                    proc.terminate()
                    proc.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--journal-url", required=True, help="PostgreSQL URL; each run gets a fresh database beside it")
    ap.add_argument("--lease", default="200/1000,500/2000,2000/20000", help="RENEW/EXPIRATION pairs in ms")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--messages", type=int, default=10000)
    args = ap.parse_args()
    print(f"# machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}")
    rows = []
    for pair in args.lease.split(","):
        renew, expiration = (int(v) for v in pair.split("/"))
        times = []
        for _ in range(args.repeat):
            with fresh_database(args.journal_url) as db:
                result = asyncio.run(one_run(db, renew, expiration, args.messages))
            print(json.dumps(result), flush=True)
            times.append(result["failover_s"])
        rows.append((renew, expiration, times))
    print(f"\n{'renew/expiration (ms)':<24} {'median':>8} {'min':>8} {'max':>8}")
    for renew, expiration, times in rows:
        print(f"{f'{renew}/{expiration}':<24} {statistics.median(times):>7.2f}s {min(times):>7.2f}s {max(times):>7.2f}s")


if __name__ == "__main__":
    main()
