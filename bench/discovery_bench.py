"""Discovery benchmark: how fast a dead node leaves the topology, and what
keeping 100 nodes announced and watched costs.

Starts its own etcd (Debian's etcd-server, loopback, temp data dir) and, for
the service path, a discovery service process. Simulated nodes are
`tests/discovery/sim_node.py` processes (the same client code a router uses).

1. Removal after kill -9: N nodes announce, each is killed with -9 at a
   random phase of its keep-alive period, and the time until a watcher sees
   NODE_DOWN is measured (expected between refresh-timeout - broadcast-period
   and refresh-timeout + etcd's 0.5 s expiry tick). Graceful stop for comparison.
2. 100 nodes: time to announce all and to see all in a watcher; CPU of the
   announcing process, of etcd and of the discovery service while the 100
   keep their leases (one keep-alive per node per broadcast-period); latency
   of an update to a watcher and to 100 watchers of the service.

    .venv/bin/python bench/discovery_bench.py [--samples 6] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from meshmq.discovery import Announcer, DiscoveryCore, GrpcDiscoveryClient, TopologyWatcher  # noqa: E402
from meshmq.discovery.etcd_backend import EtcdBackend  # noqa: E402
from meshmq.v1 import discovery_pb2 as dpb  # noqa: E402
from tests.fixtures.etcd import EtcdServer  # noqa: E402


class Proc:
    def __init__(self, workdir: Path, name: str, argv: list[str]) -> None:
        self.ready = workdir / f"{name}.ready.json"
        self.log = open(workdir / f"{name}.log", "ab")
        self.proc = subprocess.Popen([*argv, "--ready-file", str(self.ready)], stdout=self.log,
                                     stderr=subprocess.STDOUT, cwd=ROOT)
        self.info: dict = {}

    async def wait_ready(self, timeout: float = 60) -> Proc:
        deadline = time.monotonic() + timeout
        while not self.ready.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{self.ready.stem} did not start; see {self.log.name}")
            await asyncio.sleep(0.02)
        self.info = json.loads(self.ready.read_text())
        return self

    def kill9(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


def sim(workdir: Path, name: str, cluster: str, *, etcd: str | None = None, service: str | None = None,
        count: int = 1, bp: int, rt: int) -> Proc:
    where = ["--etcd", etcd] if etcd else ["--service", service]
    return Proc(workdir, name, [sys.executable, "-m", "tests.discovery.sim_node", *where, "--cluster", cluster,
                                "--node-id", name, "--count", str(count), "--broadcast-period", str(bp),
                                "--refresh-timeout", str(rt)])


def stats(values: list[float]) -> dict:
    values = sorted(values)
    return {
        "n": len(values), "min": round(values[0], 3), "median": round(statistics.median(values), 3),
        "p99": round(values[min(len(values) - 1, int(0.99 * len(values)))], 3), "max": round(values[-1], 3),
    }


async def watcher_on(endpoint: str, cluster: str, rt: int):
    """A watcher straight on etcd, recording the arrival time of each node's first DOWN."""
    core = DiscoveryCore(EtcdBackend([endpoint]), refresh_timeout_ms=rt)
    watcher = TopologyWatcher(core, cluster, refresh_timeout_ms=rt)
    downs: dict[str, float] = {}

    async def record():
        async for e in watcher.changes():
            if e.kind == dpb.NODE_DOWN:
                downs.setdefault(e.node.node_id, time.monotonic())

    watcher.start()
    recorder = asyncio.create_task(record())
    await watcher.wait_ready(0)

    async def close() -> None:
        recorder.cancel()
        try:
            await recorder
        except asyncio.CancelledError:
            pass
        await watcher.close()
        await core.close()

    return close, watcher, downs


async def removal(etcd: EtcdServer, work: Path, *, bp: int, rt: int, samples: int, via: str,
                  service: str | None = None) -> dict:
    cluster = f"removal-{via}-{rt}"
    close, watcher, downs = await watcher_on(etcd.endpoint, cluster, rt)
    names = [f"k{i}" for i in range(samples)]
    procs = [sim(work, f"{cluster}-{n}", cluster, etcd=etcd.endpoint if via == "etcd" else None,
                 service=service, bp=bp, rt=rt) for n in names]
    for p in procs:
        await p.wait_ready()
    ids = [p.info["node_ids"][0] for p in procs]
    while {n.node_id for n in watcher.nodes()} != set(ids):
        await asyncio.sleep(0.02)
    await asyncio.sleep(bp / 1000 * 1.5)
    killed_at: dict[str, float] = {}
    for node_id, p in zip(ids, procs):
        await asyncio.sleep(random.uniform(0, bp / 1000))  # spread the kills over the keep-alive phase
        killed_at[node_id] = time.monotonic()
        p.kill9()
    deadline = time.monotonic() + rt / 1000 + 5
    while len(downs) < len(ids) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    latencies = [downs[i] - killed_at[i] for i in ids if i in downs]

    graceful = sim(work, f"{cluster}-graceful", cluster, etcd=etcd.endpoint if via == "etcd" else None,
                   service=service, bp=bp, rt=rt)
    await graceful.wait_ready()
    gid = graceful.info["node_ids"][0]
    while gid not in {n.node_id for n in watcher.nodes()}:
        await asyncio.sleep(0.02)
    stopped = time.monotonic()
    graceful.proc.send_signal(signal.SIGTERM)
    while gid not in downs and time.monotonic() < stopped + 10:
        await asyncio.sleep(0.005)
    graceful.stop()
    for p in procs:
        p.stop()
    await close()
    return {
        "via": via, "broadcast_period_ms": bp, "refresh_timeout_ms": rt,
        "expected_s": [round((rt - bp) / 1000, 2), round(rt / 1000 + 0.5, 2)],
        "kill9_to_removal_s": stats(latencies), "lost": len(ids) - len(latencies),
        "graceful_stop_to_removal_s": round(downs.get(gid, float("nan")) - stopped, 3),
    }


def cpu_seconds(pids: dict[str, int]) -> dict[str, float]:
    out = {}
    for name, pid in pids.items():
        t = psutil.Process(pid).cpu_times()
        out[name] = t.user + t.system
    return out


async def hundred(etcd: EtcdServer, work: Path, *, via: str, service: Proc | None, window_s: float) -> dict:
    bp, rt, count = 2000, 10000, 100
    cluster = f"hundred-{via}"
    close, watcher, _ = await watcher_on(etcd.endpoint, cluster, rt)
    started = time.monotonic()
    p = sim(work, cluster, cluster, etcd=etcd.endpoint if via == "etcd" else None,
            service=service.info["endpoints"][0] if service else None, count=count, bp=bp, rt=rt)
    await p.wait_ready()
    announced = time.monotonic() - started
    while len(watcher.nodes()) < count:
        await asyncio.sleep(0.005)
    all_seen = time.monotonic() - started

    pids = {"announcing process": p.proc.pid, "etcd": etcd.pid}
    if service:
        pids["discovery service"] = service.proc.pid
    before = cpu_seconds(pids)
    await asyncio.sleep(window_s)
    after = cpu_seconds(pids)
    cpu = {name: f"{100 * (after[name] - before[name]) / window_s:.1f}%" for name in pids}
    p.stop()
    await close()
    return {
        "via": via, "nodes": count, "broadcast_period_ms": bp,
        "all_announced_s": p.info["announced_in_s"],
        "process_start_to_all_announced_s": round(announced, 2),
        "process_start_to_all_in_watcher_s": round(all_seen, 2),
        "steady_cpu_one_core": cpu, "window_s": window_s,
        "keepalives_per_s": count / (bp / 1000),
    }


async def update_latency(etcd: EtcdServer, service: Proc, *, updates: int, watchers: int) -> dict:
    """Announcer.update() -> NODE_UPDATED at one watcher on etcd, and at `watchers` watchers of the service."""
    cluster = "latency"
    direct = DiscoveryCore(EtcdBackend([etcd.endpoint]), refresh_timeout_ms=10000)
    announcer = Announcer(direct, dpb.ClusterNode(node_id="u", cluster_name=cluster, connector="127.0.0.1:1"),
                          broadcast_period_ms=2000, refresh_timeout_ms=10000)
    await announcer.start()
    local = TopologyWatcher(direct, cluster)
    client = GrpcDiscoveryClient(service.info["endpoints"][0])
    remote = [TopologyWatcher(client, cluster) for _ in range(watchers)]
    for w in [local, *remote]:
        w.start()
        await w.wait_ready(1)
    one, fanout = [], []
    for i in range(updates):
        target = f"127.0.0.1:{30000 + i}"
        t0 = time.monotonic()
        await announcer.update(backup_connector=target)
        arrived = {}
        while len(arrived) < 1 + watchers:
            for k, w in enumerate([local, *remote]):
                if k not in arrived and w._state.nodes["u"].backup_connector == target:  # noqa: SLF001
                    arrived[k] = time.monotonic() - t0
            await asyncio.sleep(0)
        one.append(arrived[0] * 1000)
        fanout.append(max(arrived.values()) * 1000)
    await announcer.stop()
    for w in [local, *remote]:
        await w.close()
    await client.close()
    await direct.close()
    return {"updates": updates, "to_one_watcher_on_etcd_ms": stats(one),
            f"to_all_{watchers}_service_watchers_ms": stats(fanout)}


async def main(args) -> None:
    work = Path(tempfile.mkdtemp(prefix="meshmq-discovery-bench-"))
    etcd = EtcdServer(work / "etcd")
    etcd.root.mkdir()
    etcd.start()
    cfg = work / "discovery.yaml"
    cfg.write_text(textwrap.dedent(f"""
        name: bench-discovery
        discovery-groups:
          dg1: {{etcd: {{endpoints: ["{etcd.endpoint}"]}}}}
        discovery:
          listen: {{host: 127.0.0.1, port: 0}}
    """))
    service = await Proc(work, "service", [sys.executable, "-m", "meshmq.cli.main", "serve", "discovery",
                                           "--config", str(cfg), "--quiet"]).wait_ready()
    etcd_version = subprocess.run(["etcd", "--version"], capture_output=True, text=True).stdout.split()[2]
    results: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                                f"Python {platform.python_version()}, etcd {etcd_version}"}
    try:
        results["removal"] = [
            await removal(etcd, work, bp=500, rt=2000, samples=args.samples, via="etcd"),
            await removal(etcd, work, bp=500, rt=2000, samples=args.samples, via="service",
                          service=service.info["endpoints"][0]),
        ]
        if not args.quick:
            results["removal"].append(await removal(etcd, work, bp=2000, rt=10000, samples=args.samples, via="etcd"))
        window = 5.0 if args.quick else 20.0
        results["hundred_nodes"] = [
            await hundred(etcd, work, via="etcd", service=None, window_s=window),
            await hundred(etcd, work, via="service", service=service, window_s=window),
        ]
        results["update_latency"] = await update_latency(etcd, service, updates=50, watchers=100)
    finally:
        service.stop()
        etcd.cleanup()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=6, help="kill -9 samples per setting")
    parser.add_argument("--quick", action="store_true", help="skip the 10 s refresh-timeout run, shorter CPU window")
    asyncio.run(main(parser.parse_args()))
