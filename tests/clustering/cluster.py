"""Clusters of real router processes for the cluster-connection tests: each
node on a loopback port picked at run time (static connectors need it before
the node starts), linked as the test says, stopped by pid by `nodes`."""

from __future__ import annotations

import asyncio
import textwrap

from meshmq.client import connect
from tests.fixtures.nodes import Nodes, eventually, free_port


def cluster_yaml(name: str, port: int, ports: dict[str, int], targets: list[str], options: str = "",
                 extra: str = "") -> str:
    """One node's YAML: its acceptor, a connector per other node, and cluster
    connection `cc` linking to `targets` with `options` (YAML flow mapping items)."""
    connectors = "\n".join(f"  {n}: 127.0.0.1:{p}" for n, p in ports.items() if n != name) or "  {}"
    opts = f", {options}" if options else ""
    cc = (f"cluster-connections:\n  cc: {{static-connectors: [{', '.join(targets)}]{opts}}}\n" if targets else "")
    return (f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {port}}}\n"
            f"connectors:\n{connectors}\n{cc}{textwrap.dedent(extra)}")


def start_cluster(nodes: Nodes, links: dict[str, list[str]], options: str = "", extra: str = "",
                  per_node: dict[str, str] | None = None, start: bool = True) -> dict:
    """Routers named by `links` (name -> the names it links to), in order."""
    ports = {name: free_port() for name in links}
    procs = {}
    for name, targets in links.items():
        procs[name] = nodes.router(name, extra=cluster_yaml(
            name, ports[name], ports, targets, options, extra + (per_node or {}).get(name, "")), start=start)
    return procs


async def cluster_state(node):
    async with await connect(node.url) as conn:
        return await conn.admin.cluster_state()


async def wait_bindings(node, expected: set[tuple[str, str, int]], timeout: float = 20) -> None:
    """Until `node` knows exactly these remote bindings: (node name, queue, consumer count)."""
    async def seen():
        state = await cluster_state(node)
        return {(b.node_name, b.queue, len(b.consumer_filters)) for b in state.remote_bindings} == expected
    await eventually(seen, timeout, f"{node.name} to know remote bindings {sorted(expected)}", interval=0.1)


async def collect(consumers: dict, total: int, deadline: float = 20) -> dict[str, list[int]]:
    """Each consumer's messages ("n" in order) until `total` have arrived, and
    then a moment more, so that a message too many would be seen."""
    got: dict[str, list[int]] = {n: [] for n in consumers}

    async def take(name, consumer, timeout):
        while (m := await consumer.receive(timeout=timeout)) is not None:
            got[name].append(int(m.properties["n"]))
            consumer.ack(m)
            if sum(map(len, got.values())) >= total:
                return

    async def until_total():
        while sum(map(len, got.values())) < total:
            await asyncio.gather(*(take(n, c, 0.05) for n, c in consumers.items()))

    await asyncio.wait_for(until_total(), deadline)
    await asyncio.gather(*(take(n, c, 0.3) for n, c in consumers.items()))
    return got
