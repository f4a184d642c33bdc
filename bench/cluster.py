"""What forwarding over cluster connections costs (issue 11): throughput and
end-to-end latency through one node, one hop, a chain and a symmetric cluster.

Four scenarios, each on fresh router processes (`meshmq serve router`,
embedded journal on SQLite with synchronous=FULL, as bench/throughput.py
starts them; every node predeclares the anycast queue `bench`):

* single      one node; the producer and the consumer on it (the baseline).
* one-hop     A and B linked both ways (ON_DEMAND, max-hops 1); producer on A,
              consumer on B: every message crosses one bridge.
* chain       A -> B -> C (one-directional static connectors, max-hops 2,
              allow-direct-connections-only); producer on A, consumer on C:
              every message is stored on A, B and C and crosses two bridges.
* symmetric   A, B, C each linked to the other two (ON_DEMAND, max-hops 1); a
              producer and a consumer on every node: each message stays local
              or goes one hop (round robin over the three consumers, so 2/3
              of them are forwarded).

Clients pin their sessions to the node named in their URI
(useTopologyForLoadBalancing=false). Each producer stamps a wall-clock time
in a message property; the consumer takes receive time minus that stamp (one
machine, one clock), on every message. Before measuring, each scenario waits
until the producers' nodes know the remote consumers (Management
GetClusterState), then sends a warm-up that is not counted.

Two runs per scenario, durable messages of --size bytes:

* saturation: --count messages, the producers sending as fast as their
  confirmation windows allow. msg/s is counted from the first send to the
  last receive. The latency here is mostly queueing (window / throughput).
* fixed rate: --rate msg/s in total (split evenly over the producers of the
  scenario) for --rate-seconds; a comma-separated list gives one run per
  rate. Each message is stamped with the time it was *due* on the
  schedule, not when it went out, so a stall shows as latency (no
  coordinated omission; see meshmq/perf.py). This is the like-for-like
  latency: the same offered load in every scenario.

Also printed: the bridges' `forwarded` and `batches` counters summed over all
nodes during the saturation run (forwarded per message delivered, and
messages per ForwardBatch frame: a link batches like a producer), and the CPU all nodes' processes
(routers and their journal writers) spent per message, and in the
fixed-rate runs how many cores they and the client process kept busy: on
a small machine the nodes and the client compete for the same cores.

    .venv/bin/python bench/cluster.py [--count 20000] [--size 256] [--rate 2000[,500...]]
        [--rate-seconds 6] [--repeat 1] [--scenarios single,one-hop,chain,symmetric] [--json FILE]

With --repeat N the scenarios alternate (single, one-hop, ..., single, ...)
so a slow spell of the machine hits all of them, and the ratios use medians.
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
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import psutil  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from meshmq.client import connect  # noqa: E402
from meshmq.ports import free_port  # noqa: E402
from throughput import cpu_seconds, start_node  # noqa: E402

QUEUE = "bench"
ADDRESSES = f"addresses:\n  {QUEUE}: {{anycast: [{{name: {QUEUE}}}]}}\n"
SENT_AT = "bench_sent_ms"  # the producer's stamp: wall-clock ms (due time in the fixed-rate run)
PIN = "?useTopologyForLoadBalancing=false"
WARMUP = 500
BINDINGS_TIMEOUT_S = 30
# After the producers are done, how long the consumers may take for the rest.
DRAIN_TIMEOUT_S = 60
RATE_TICK_S = 0.001  # shortest pause between bursts of a paced producer, as meshmq/perf.py

# name -> (links: node -> nodes it has static connectors to, cluster-connection options,
#          nodes with a producer, nodes with a consumer)
SCENARIOS: dict[str, tuple[dict[str, list[str]], str, list[str], list[str]]] = {
    "single": ({"A": []}, "", ["A"], ["A"]),
    "one-hop": ({"A": ["B"], "B": ["A"]}, "message-load-balancing: ON_DEMAND, max-hops: 1", ["A"], ["B"]),
    "chain": ({"A": ["B"], "B": ["C"], "C": []},
              "message-load-balancing: ON_DEMAND, max-hops: 2, allow-direct-connections-only: true", ["A"], ["C"]),
    "symmetric": ({"A": ["B", "C"], "B": ["A", "C"], "C": ["A", "B"]},
                  "message-load-balancing: ON_DEMAND, max-hops: 1", ["A", "B", "C"], ["A", "B", "C"]),
}


# ---------------------------------------------------------------- nodes


def start_cluster_node(workdir: Path, name: str, port: int, ports: dict[str, int], targets: list[str],
                       options: str) -> tuple[subprocess.Popen, str]:
    """A node configured as bench/throughput.py's `start_node` configures one,
    plus its name, a fixed port, a connector per other node and cluster
    connection `cc` to `targets`."""
    workdir.mkdir(parents=True, exist_ok=True)
    connectors = "".join(f"  {n}: 127.0.0.1:{p}\n" for n, p in ports.items() if n != name)
    cc = ""
    if targets:
        opts = f", {options}" if options else ""
        cc = f"cluster-connections:\n  cc: {{static-connectors: [{', '.join(targets)}]{opts}}}\n"
    cfg = workdir / "node.yaml"
    cfg.write_text(
        f"name: {name}\ndata-directory: {workdir / 'data'}\n"
        f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {port}}}\n"
        f"journal:\n  sync: true\n"
        f"connectors:\n{connectors}{cc}{ADDRESSES}"
    )
    ready = workdir / "ready.json"
    log = open(workdir / "node.log", "ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "meshmq.cli.main", "serve", "router", "--config", str(cfg), "--ready-file", str(ready),
         "--quiet"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    return proc, str(ready)


def wait_ready(procs: dict[str, subprocess.Popen], ready: dict[str, str], workdir: Path) -> dict[str, str]:
    """Each node's client URL once it listens."""
    deadline = time.monotonic() + 60
    urls = {}
    while len(urls) < len(procs):
        for name, proc in procs.items():
            if name in urls:
                continue
            if Path(ready[name]).exists():
                urls[name] = "meshmq://" + json.loads(Path(ready[name]).read_text())["endpoints"][0]
            elif proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"node {name} did not start; see {workdir / name / 'node.log'}")
        time.sleep(0.05)
    return urls


def start_scenario(workdir: Path, scenario: str) -> tuple[dict[str, subprocess.Popen], dict[str, str]]:
    links, options, _, _ = SCENARIOS[scenario]
    if scenario == "single":  # exactly bench/throughput.py's node, with the queue declared
        proc, url = start_node(workdir, sync=True, extra_config=ADDRESSES)
        return {"A": proc}, {"A": url}
    ports = {name: free_port() for name in links}
    procs, ready = {}, {}
    try:
        for name, targets in links.items():
            procs[name], ready[name] = start_cluster_node(workdir / name, name, ports[name], ports, targets, options)
        return procs, wait_ready(procs, ready, workdir)
    except BaseException:
        stop_nodes(procs)
        raise


def stop_nodes(procs: dict[str, subprocess.Popen]) -> None:
    """SIGTERM each node by its pid, SIGKILL one that does not stop within 30 s."""
    for proc in procs.values():
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
    for proc in procs.values():
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)


def nodes_cpu(procs: dict[str, subprocess.Popen]) -> tuple[float, float]:
    """CPU seconds so far of every node: (the routers, their journal writer processes)."""
    per_node = [cpu_seconds(p.pid) for p in procs.values()]
    return sum(r for r, _ in per_node), sum(w for _, w in per_node)


def client_cpu() -> float:
    """CPU seconds so far of this process (every producer and consumer)."""
    t = psutil.Process().cpu_times()
    return t.user + t.system


# ---------------------------------------------------------------- load


@dataclass
class Sink:
    """What the consumers of one run received."""

    total: int
    got: int = 0
    per_node: dict[str, int] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)
    last: float = 0.0
    done: asyncio.Event = field(default_factory=asyncio.Event)


def percentile(data: list[float], p: float) -> float:
    if not data:
        return float("nan")
    data = sorted(data)
    return data[min(len(data) - 1, max(0, int(round(p / 100 * (len(data) - 1)))))]


async def consume(name: str, consumer, sink: Sink, record: bool) -> None:
    clock, wall = time.perf_counter, time.time
    while sink.got < sink.total:
        batch = await consumer.receive_batch(1000, 0.1)
        if not batch:
            continue
        for msg in batch:
            if record:
                sink.latencies_ms.append(wall() * 1000 - msg.properties[SENT_AT])
            msg.ack()
        sink.got += len(batch)
        sink.per_node[name] = sink.per_node.get(name, 0) + len(batch)
        sink.last = clock()
    sink.done.set()


async def produce(producer, count: int, body: bytes, rate: float | None) -> None:
    """`count` durable messages: as fast as the window allows, or `rate` msg/s stamped with their due time."""
    clock = time.perf_counter
    start, wall0 = clock(), time.time()
    i = 0
    while i < count:
        due = count if rate is None else min(count, int((clock() - start) * rate) + 1)
        while i < due:
            stamp = time.time() * 1000 if rate is None else (wall0 + i / rate) * 1000
            await producer.send_async(body, properties={SENT_AT: stamp}, durable=True, routing_type="anycast")
            i += 1
        if i < count:
            await asyncio.sleep(max(RATE_TICK_S, start + i / rate - clock()))
    await producer.flush()


async def load(producers: list, consumers: dict, count: int, size: int, rate: float | None,
               record: bool = True) -> dict:
    """One run: `count` messages split over the producers; until the consumers have them all."""
    sink = Sink(total=count)
    tasks = [asyncio.create_task(consume(n, c, sink, record)) for n, c in consumers.items()]
    body = b"x" * size
    shares = [count // len(producers) + (1 if i < count % len(producers) else 0) for i in range(len(producers))]
    per_producer_rate = None if rate is None else rate / len(producers)
    start = time.perf_counter()
    try:
        await asyncio.gather(*(produce(p, n, body, per_producer_rate) for p, n in zip(producers, shares)))
        sent = time.perf_counter()
        try:
            await asyncio.wait_for(sink.done.wait(), DRAIN_TIMEOUT_S)
        except asyncio.TimeoutError:
            pass
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    end = sink.last if sink.got else time.perf_counter()
    return {
        "sent": count,
        "received": sink.got,
        "seconds": round(end - start, 3),
        "producer_seconds": round(sent - start, 3),
        "msg_per_s": round(sink.got / (end - start)) if end > start else 0,
        "p50_ms": round(percentile(sink.latencies_ms, 50), 2),
        "p99_ms": round(percentile(sink.latencies_ms, 99), 2),
        "per_node": dict(sorted(sink.per_node.items())),
    }


async def cluster_counters(urls: dict[str, str]) -> dict:
    """The bridges' counters summed over all nodes, and whether every bridge is connected."""
    totals = {"routed": 0, "forwarded": 0, "batches": 0, "confirmed": 0, "pending": 0, "bridges": 0, "connected": 0}
    for url in urls.values():
        async with await connect(url + PIN) as conn:
            state = await conn.admin.cluster_state()
        for b in state.bridges:
            totals["bridges"] += 1
            totals["connected"] += b.state == "connected"
            for k in ("routed", "forwarded", "batches", "confirmed", "pending"):
                totals[k] += getattr(b, k)
    return totals


async def wait_for_remote_consumers(scenario: str, urls: dict[str, str]) -> None:
    """Until every producer's node knows a consumer on every other consumer node."""
    _, _, producer_nodes, consumer_nodes = SCENARIOS[scenario]
    deadline = time.monotonic() + BINDINGS_TIMEOUT_S
    for p in producer_nodes:
        wanted = {c for c in consumer_nodes if c != p}
        if not wanted:
            continue
        async with await connect(urls[p] + PIN) as conn:
            while True:
                state = await conn.admin.cluster_state()
                seen = {b.node_name for b in state.remote_bindings if b.queue == QUEUE and b.consumer_filters}
                if wanted <= seen:
                    break
                if time.monotonic() > deadline:
                    raise SystemExit(f"{scenario}: node {p} knows consumers on {sorted(seen)}, not {sorted(wanted)}, "
                                     f"after {BINDINGS_TIMEOUT_S} s")
                await asyncio.sleep(0.1)


async def run_scenario(scenario: str, procs: dict[str, subprocess.Popen], urls: dict[str, str], args) -> dict:
    _, _, producer_nodes, consumer_nodes = SCENARIOS[scenario]
    conns = []
    try:
        consumers = {}
        for n in consumer_nodes:
            conn = await connect(urls[n] + PIN)
            conns.append(conn)
            consumers[n] = await (await conn.session()).create_consumer(QUEUE)
        await wait_for_remote_consumers(scenario, urls)
        producers = []
        for n in producer_nodes:
            conn = await connect(urls[n] + PIN)
            conns.append(conn)
            producers.append(await (await conn.session()).create_producer(QUEUE))

        warm = await load(producers, consumers, WARMUP, args.size, None, record=False)
        if warm["received"] != WARMUP:
            raise SystemExit(f"{scenario}: warm-up: {warm['received']} of {WARMUP} messages arrived")

        paced = []
        for rate in args.rates:
            (routers0, writers0), client0 = nodes_cpu(procs), client_cpu()
            run = await load(producers, consumers, int(rate * args.rate_seconds), args.size, rate)
            (routers1, writers1), client = nodes_cpu(procs), client_cpu() - client0
            routers, writers = routers1 - routers0, writers1 - writers0
            cpu = routers + writers
            run["offered_msg_per_s"] = rate
            run["nodes_cpu_us_per_msg"] = round(cpu / max(1, run["received"]) * 1e6, 1)
            # Where it goes: the routers' processes, their journal writers, this client.
            for key, seconds in (("routers", routers), ("writers", writers), ("client", client)):
                run[f"{key}_cpu_us_per_msg"] = round(seconds / max(1, run["received"]) * 1e6, 1)
            # CPU seconds per second: how many cores the nodes, and this client process, kept busy.
            run["nodes_cores"] = round(cpu / run["seconds"], 2)
            run["client_cores"] = round(client / run["seconds"], 2)
            paced.append(run)

        before = await cluster_counters(urls)
        cpu0 = sum(nodes_cpu(procs))
        each0 = {name: sum(cpu_seconds(p.pid)) for name, p in procs.items()}
        saturated = await load(producers, consumers, args.count, args.size, None)
        cpu1 = sum(nodes_cpu(procs))
        each = {name: sum(cpu_seconds(p.pid)) - each0[name] for name, p in procs.items()}
        after = await cluster_counters(urls)
    finally:
        for conn in conns:
            await conn.close()
    return {
        "scenario": scenario,
        "nodes": len(procs),
        "size": args.size,
        "saturation": saturated,
        "rates": paced,
        "bridges": after["bridges"],
        "bridges_connected": after["connected"],
        "forwarded": after["forwarded"] - before["forwarded"],
        "batches": after["batches"] - before["batches"],
        "confirmed": after["confirmed"] - before["confirmed"],
        "pending_after": after["pending"],
        "nodes_cpu_us_per_msg": round((cpu1 - cpu0) / max(1, saturated["received"]) * 1e6, 1),
        # Each node's own CPU (router + journal writer) per message delivered: with a machine per
        # node, the busiest one bounds the cluster's throughput, not the sum on shared cores.
        "node_cpu_us_per_msg": {name: round(v / max(1, saturated["received"]) * 1e6, 1) for name, v in each.items()},
    }


async def run_all(scenarios: list[str], args) -> list[dict]:
    """Every scenario, --repeat times, alternating; nodes start and stop off the event loop."""
    results = []
    for _ in range(args.repeat):
        for scenario in scenarios:
            with tempfile.TemporaryDirectory(prefix=f"meshmq-bench-cluster-{scenario}-") as tmp:
                t0 = time.monotonic()
                procs, urls = await asyncio.to_thread(start_scenario, Path(tmp), scenario)
                try:
                    result = await run_scenario(scenario, procs, urls, args)
                finally:
                    await asyncio.to_thread(stop_nodes, procs)
                result["wall_seconds"] = round(time.monotonic() - t0, 1)
                print(json.dumps(result), flush=True)
                results.append(result)
    return results


# ---------------------------------------------------------------- report


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}×" if a is not None and b else "—"


def report(console: Console, results: list[dict], args) -> None:
    sat = Table(title=f"Saturation: {args.count:,} durable {args.size}-byte messages, producers as fast as "
                      "their windows allow")
    for col in ("scenario", "msg/s", "e2e p50", "e2e p99", "received", "forwarded (per msg)", "per batch",
                "nodes' CPU/msg (each node)", "consumed per node"):
        sat.add_column(col, justify="left" if col in ("scenario", "consumed per node") else "right")
    for r in results:
        s = r["saturation"]
        sat.add_row(r["scenario"], f"{s['msg_per_s']:,}", f"{s['p50_ms']:.1f} ms", f"{s['p99_ms']:.1f} ms",
                    f"{s['received']:,}/{s['sent']:,}",
                    f"{r['forwarded']:,} ({r['forwarded'] / max(1, s['received']):.2f})",
                    f"{r['forwarded'] / r['batches']:.0f}" if r["batches"] else "-",
                    f"{r['nodes_cpu_us_per_msg']:.0f} µs ("
                    + " / ".join(f"{k} {v:.0f}" for k, v in r["node_cpu_us_per_msg"].items()) + ")",
                    " ".join(f"{k}:{v}" for k, v in s["per_node"].items()))
    console.print(sat)

    paced = Table(title=f"Fixed rate, offered in total for {args.rate_seconds:g} s (latency from each message's "
                        "due time)")
    for col in ("scenario", "offered", "msg/s", "e2e p50", "e2e p99", "received", "nodes' CPU/msg",
                "routers / writers / client CPU/msg", "cores busy: nodes + client"):
        paced.add_column(col, justify="left" if col == "scenario" else "right")
    for rate in args.rates:
        for r in results:
            p = next(x for x in r["rates"] if x["offered_msg_per_s"] == rate)
            paced.add_row(r["scenario"], f"{rate:,.0f}/s", f"{p['msg_per_s']:,}", f"{p['p50_ms']:.1f} ms",
                          f"{p['p99_ms']:.1f} ms", f"{p['received']:,}/{p['sent']:,}",
                          f"{p['nodes_cpu_us_per_msg']:.0f} µs",
                          f"{p['routers_cpu_us_per_msg']:.0f} / {p['writers_cpu_us_per_msg']:.0f} / "
                          f"{p['client_cpu_us_per_msg']:.0f} µs",
                          f"{p['nodes_cores']:.2f} + {p['client_cores']:.2f}")
    console.print(paced)

    def med(scenario: str, pick) -> float | None:
        values = [pick(r) for r in results if r["scenario"] == scenario]
        return statistics.median(values) if values else None

    def at(rate: float, key: str):
        return lambda r: next(x for x in r["rates"] if x["offered_msg_per_s"] == rate)[key]

    columns = {}
    for rate in args.rates:
        columns[f"p50 @ {rate:,.0f}/s"] = at(rate, "p50_ms")
        columns[f"p99 @ {rate:,.0f}/s"] = at(rate, "p99_ms")
    columns["throughput"] = lambda r: r["saturation"]["msg_per_s"]
    # The ratio expected with a machine per node (CPU-bound): single's CPU per message over the busiest
    # node's here — a projection from measured CPU, for a cluster that does not share its cores.
    columns["throughput, a machine per node (projected)"] = lambda r: 1e6 / max(r["node_cpu_us_per_msg"].values())
    columns["saturation p50"] = lambda r: r["saturation"]["p50_ms"]
    columns["saturation p99"] = lambda r: r["saturation"]["p99_ms"]
    if med("single", columns["throughput"]) is None:
        return
    ratios = Table(title="Against the single node, medians of the runs (one hop's goals: p50 at 300 msg/s ≤ 2.00×, "
                         "saturation throughput ≥ 0.75×)")
    ratios.add_column("scenario")
    for col in columns:
        ratios.add_column(col, justify="right")
    for scenario in SCENARIOS:
        if scenario == "single" or med(scenario, columns["throughput"]) is None:
            continue
        ratios.add_row(scenario, *(ratio(med(scenario, pick), med("single", pick)) for pick in columns.values()))
    console.print(ratios)


def rates(text: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: msg/s, or several separated by commas (500,2000)") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: rates must be positive")
    return values


def main() -> None:
    doc = __doc__.split("\n\n")
    ap = argparse.ArgumentParser(description=doc[0], epilog="\n\n".join(doc[1:]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=20_000, help="messages in the saturation run (default 20000)")
    ap.add_argument("--size", type=int, default=256, help="body bytes (default 256)")
    ap.add_argument("--rate", dest="rates", type=rates, default=[2000.0], metavar="RATE[,RATE...]",
                    help="msg/s offered in total in the fixed-rate run; several = one run each (default 2000)")
    ap.add_argument("--rate-seconds", type=float, default=6, help="length of each fixed-rate run (default 6)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each scenario, each on fresh nodes (default 1)")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated, from: " + ", ".join(SCENARIOS))
    ap.add_argument("--json", metavar="FILE", help="also write every run's figures to FILE")
    args = ap.parse_args()
    scenarios = args.scenarios.split(",")
    unknown = [s for s in scenarios if s not in SCENARIOS]
    if unknown:
        ap.error(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}")
    if args.count < 1 or args.rate_seconds <= 0 or args.repeat < 1:
        ap.error("--count, --rate-seconds and --repeat must be positive")
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    console = Console(width=max(Console().width, 132))
    console.print(f"# machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, "
                  f"Python {platform.python_version()}")
    results = asyncio.run(run_all(scenarios, args))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    report(console, results, args)


if __name__ == "__main__":
    main()
