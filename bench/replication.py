"""What replication costs, and how long a takeover takes (ha-policy replication).

In one run, alternating: a node alone, and a primary with a replicating
backup (pluggable quorum on an etcd this script starts; or, with `--quorum
classic`, a master and its slave beside two more lives that vote); each
gets a producer and a consumer in this process (bench/throughput.py's
client, 1 KB durable messages), and prints msg/s and confirm p50/p99. Then,
for the replicating pair, kill -9 of the live and the time until its backup
serves. Prints one JSON line per run and a table with the ratios.

    .venv/bin/python bench/replication.py [--count 50000] [--repeat 2] [--session-ms 2000] [--quorum classic]
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

from bench.failover import free_port, serves  # noqa: E402
from bench.throughput import run, start_node  # noqa: E402
from meshmq.launcher.etcd import EtcdServer  # noqa: E402


def pair(workdir: Path, etcd: str, session_ms: int):
    ports = {"primary": free_port(), "backup": free_port()}
    manager = (f"manager: {{properties: {{connect-string: '{etcd}', session-ms: {session_ms}, "
               f"session-percent: 25, namespace: bench}}}}")
    primary_dir, backup_dir = workdir / "primary", workdir / "backup"
    primary_dir.mkdir()
    backup_dir.mkdir()
    primary, url = start_node(primary_dir, sync=True, acceptor="", extra_config=(
        f"ha-policy:\n  replication:\n    primary: {{{manager}}}\n"), port=ports["primary"])
    backup, _ = start_node(backup_dir, sync=True, extra_config=(
        f"connectors: {{primary: '127.0.0.1:{ports['primary']}'}}\n"
        "cluster-connections: {ha: {static-connectors: [primary]}}\n"
        f"ha-policy:\n  replication:\n    backup: {{{manager}}}\n"), port=ports["backup"])
    wait_in_sync(primary_dir / "node.log")
    return primary, backup, url, f"127.0.0.1:{ports['backup']}", []


# Classic votes: links that notice a dead peer at once (kill -9 closes its sockets) and a silent one in 2 s.
CLASSIC_LINK = "check-period: 500, connection-ttl: 2000, retry-interval: 200, max-retry-interval: 500"


def classic_group(workdir: Path):
    """A master and its slave, and two live-only nodes linked to the master that vote."""
    ports = {n: free_port() for n in ("m", "s", "l2", "l3")}
    ep = {n: f"127.0.0.1:{p}" for n, p in ports.items()}

    def node(name: str, links: list[str], policy: str = ""):
        directory = workdir / name
        directory.mkdir()
        extra = (f"connectors: {{{', '.join(f'{n}: {ep[n]!r}' for n in links)}}}\n"
                 f"cluster-connections: {{ha: {{static-connectors: [{', '.join(links)}], {CLASSIC_LINK}}}}}\n")
        if policy:
            extra += f"ha-policy:\n  replication:\n    {policy}\n"
        return start_node(directory, sync=True, extra_config=extra, port=ports[name])

    master, url = node("m", ["l2", "l3"], "master: {}")
    voters = [node("l2", ["m", "l3"])[0], node("l3", ["m", "l2"])[0]]
    slave, _ = node("s", ["m", "l2", "l3"], "slave: {vote-retry-wait: 200, quorum-vote-wait: 2}")
    wait_in_sync(workdir / "m" / "node.log")
    return master, slave, url, ep["s"], voters


def wait_in_sync(log: Path) -> None:
    deadline = time.monotonic() + 30
    while "is in sync" not in log.read_text():
        if time.monotonic() > deadline:
            raise SystemExit(f"the backup did not get in sync; see {log}")
        time.sleep(0.05)


async def takeover(primary, backup_endpoint: str) -> float:
    killed = time.monotonic()
    os.kill(primary.pid, signal.SIGKILL)
    primary.wait()
    while not await serves(backup_endpoint):
        if time.monotonic() - killed > 60:
            raise SystemExit("the backup did not take over")
        await asyncio.sleep(0.01)
    return time.monotonic() - killed


async def measure(url: str, count: int, primary, backup_endpoint: str) -> dict:
    """Throughput and confirm latency, then (for a pair) the takeover: one event loop for both."""
    result = await run(url, count, 1024, "durable")
    if primary is not None:
        result["takeover_s"] = round(await takeover(primary, backup_endpoint), 3)
    return result


async def all_runs(args, etcd_endpoint: str) -> dict[str, list[dict]]:
    rows: dict[str, list[dict]] = {"single": [], "replicated": []}
    for _ in range(args.repeat):
        for kind in ("single", "replicated"):
            with tempfile.TemporaryDirectory(prefix="meshmq-bench-") as tmp:
                procs = []
                try:
                    if kind == "single":
                        proc, url = await asyncio.to_thread(start_node, Path(tmp), True)
                        procs = [proc]
                        result = await measure(url, args.count, None, "")
                    else:
                        primary, backup, url, backup_ep, others = await asyncio.to_thread(
                            *((classic_group, Path(tmp)) if args.quorum == "classic"
                              else (pair, Path(tmp), etcd_endpoint, args.session_ms)))
                        procs = [primary, backup, *others]
                        result = await measure(url, args.count, primary, backup_ep)
                    result["kind"] = kind
                    print(json.dumps(result), flush=True)
                    rows[kind].append(result)
                finally:
                    for p in procs:
                        if p.poll() is None:
                            p.terminate()
                            p.wait(30)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--session-ms", type=int, default=2000, help="the quorum lease (takeover time follows it)")
    ap.add_argument("--quorum", choices=("pluggable", "classic"), default="pluggable",
                    help="pluggable: primary/backup on etcd; classic: master/slave and two voting lives")
    args = ap.parse_args()
    print(f"# machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}")
    etcd = EtcdServer(Path(tempfile.mkdtemp(prefix="meshmq-bench-etcd-"))).start()
    try:
        # One event loop for every run: grpc.aio stays bound to the first loop it saw.
        rows = asyncio.run(all_runs(args, etcd.endpoint))
    finally:
        etcd.stop()
    print(f"\n{'':<12} {'msg/s':>9} {'confirm p50':>12} {'confirm p99':>12}")
    med = {}
    for kind, rs in rows.items():
        med[kind] = {k: statistics.median(r[k] for r in rs) for k in ("msg_per_s", "confirm_p50_ms", "confirm_p99_ms")}
        m = med[kind]
        print(f"{kind:<12} {m['msg_per_s']:>9,.0f} {m['confirm_p50_ms']:>9.1f} ms {m['confirm_p99_ms']:>9.1f} ms")
    s, r = med["single"], med["replicated"]
    print(f"replicated / single: throughput {r['msg_per_s'] / s['msg_per_s']:.2f}x, "
          f"p99 confirm {r['confirm_p99_ms'] / s['confirm_p99_ms']:.2f}x")
    how = "classic votes" if args.quorum == "classic" else f"session-ms {args.session_ms}"
    print(f"takeover (kill -9 -> backup serving, {how}): "
          + ", ".join(f"{x['takeover_s']:.2f} s" for x in rows["replicated"]))


if __name__ == "__main__":
    main()
