"""Networks of real router processes for the network-connector and tree tests:
each node on a loopback port picked at run time, its network connectors (or
tree connector) pointing at the others by port, stopped by pid by `nodes`."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

from meshmq.client import connect
from tests.fixtures.nodes import Nodes, ServiceProcess, eventually, free_port


def network_yaml(port: int, connectors: dict[str, dict], tree: dict | None = None, extra: str = "") -> str:
    """One node's YAML: its acceptor, `connectors` (name -> a network
    connector's keys, as ActiveMQ names them) and `tree` (tree-connector keys)."""
    lines = [f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {port}}}"]
    if connectors:
        lines.append("network-connectors:")
        lines += [f"  {name}: {json.dumps(options)}" for name, options in connectors.items()]
    if tree is not None:
        lines.append(f"tree-connector: {json.dumps(tree)}")
    return "\n".join(lines) + "\n" + extra


def pinned(url: str) -> str:
    """`url` for a client that stays on that node: nodes that announce in a
    discovery group are one topology, which the SDK would spread sessions over."""
    return url + ("&" if "?" in url else "?") + "useTopologyForLoadBalancing=false"


def static_uri(*ports: int) -> str:
    return "static:(" + ",".join(f"meshmq://127.0.0.1:{p}" for p in ports) + ")"


def start_network(nodes: Nodes, links: dict[str, dict[str, str | tuple[str, dict]]], options: dict | None = None,
                  per_node: dict[str, str] | None = None) -> dict:
    """Routers named by `links`: name -> {connector name: target node, or
    (target node, that connector's own options)}, each connector with
    `options` as well; `per_node` adds YAML to a node."""
    ports = {name: free_port() for name in links}
    procs = {}
    for name, targets in links.items():
        connectors = {}
        for c, target in targets.items():
            to, own = (target, {}) if isinstance(target, str) else target
            connectors[c] = {"uri": static_uri(ports[to]), **(options or {}), **own}
        procs[name] = nodes.router(name, extra=network_yaml(ports[name], connectors,
                                                           extra=(per_node or {}).get(name, "")), start=False)
    with ThreadPoolExecutor(len(procs)) as pool:  # together: each start waits for its process to listen
        list(pool.map(lambda proc: proc.start(), procs.values()))
    return procs


def start_together(procs) -> None:
    """Start router processes side by side (a router spends its start-up
    importing, so a tree of 13 starts in the time of a few)."""
    with ThreadPoolExecutor(max_workers=len(procs) or 1) as pool:
        list(pool.map(ServiceProcess.start, procs))


def tree_node_type(name: str, parents: dict[str, str | None]) -> str | None:
    """A node's tree-connector node-type in the tree `parents`: None for the
    root (no parent), "branch" for a child of the root, else "leaf"."""
    parent = parents[name]
    if parent is None:
        return None
    return "branch" if parents[parent] is None else "leaf"


def tree_yaml(port: int, parent_port: int | None, node_type: str | None) -> str:
    tree = None if node_type is None else {"node-type": node_type, "uri": static_uri(parent_port)}
    return network_yaml(port, {}, tree=tree)


def start_tree(nodes: Nodes, parents: dict[str, str | None],
               node_types: dict[str, str] | None = None,
               extra: dict[str, str] | None = None) -> tuple[dict, dict[str, int]]:
    """Routers linked by tree connectors: name -> its parent (None: the root),
    all started together; the processes and their ports by name. `node_types`
    overrides the node-type a node's place gives it (to build a wrong tree);
    `extra` adds config (YAML) to the nodes it names."""
    ports = {name: free_port() for name in parents}
    types = {name: tree_node_type(name, parents) for name in parents} | (node_types or {})
    procs = {name: nodes.router(name, start=False, extra=tree_yaml(ports[name], ports.get(parent), types[name])
                                + (extra or {}).get(name, ""))
             for name, parent in parents.items()}
    start_together(list(procs.values()))
    return procs, ports


async def link_states(node) -> list:
    async with await connect(pinned(node.url)) as conn:
        state = await conn.admin.cluster_state()
    return list(state.bridges)


async def wait_linked(node, count: int, timeout: float = 20) -> None:
    """Until `node` has `count` connected links (network and tree links included)."""
    async def linked():
        return sum(1 for b in await link_states(node) if b.state == "connected") >= count
    await eventually(linked, timeout, f"{node.name} to have {count} connected links", interval=0.1)


async def all_settled(net: dict) -> bool:
    """Every link on every node has nothing waiting or unconfirmed."""
    for node in net.values():
        if any(b.pending or b.forwarded != b.confirmed for b in await link_states(node)):
            return False
    return True


async def link_to(node, peer: str):
    """`node`'s link to the node named `peer`."""
    [link] = [b for b in await link_states(node) if b.target_node_name == peer]
    return link


async def wait_links(node, count: int, timeout: float = 20) -> list:
    """Until `node` has exactly `count` links, all connected; returns them."""
    async def linked():
        links = await link_states(node)
        return links if len(links) == count and all(b.state == "connected" for b in links) else None
    return await eventually(linked, timeout, f"{node.name} to have exactly {count} connected links", interval=0.1)


async def network_consumers(node, queue: str) -> list:
    """The consumers links hold on `node`'s `queue` (network subscriptions)."""
    async with await connect(pinned(node.url)) as conn:
        return [c for c in await conn.admin.list_consumers(queue) if c.session_id.startswith("network ")]


async def wait_network_consumers(node, queue: str, count: int, timeout: float = 20) -> list:
    async def there():
        found = await network_consumers(node, queue)
        return found if len(found) == count else None
    return await eventually(there, timeout, f"{node.name} to hold {count} network consumers on {queue}",
                            interval=0.1)


async def wait_topic_demand(node, address: str, count: int = 1, timeout: float = 20) -> None:
    """Until `node` holds `count` network subscriptions on topic `address` (its internal multicast queues)."""
    async def there():
        async with await connect(pinned(node.url)) as conn:
            queues = await conn.admin.list_queues(address)
        return sum(1 for q in queues if q.name.startswith("$.meshmq.net.")) == count
    await eventually(there, timeout, f"{node.name} to hold {count} network subscriptions on topic {address}",
                     interval=0.1)


async def queue_count(node, queue: str) -> int:
    async with await connect(pinned(node.url)) as conn:
        for q in await conn.admin.list_queues():
            if q.name == queue:
                return q.message_count
    return 0


async def wait_count(node, queue: str, count: int, timeout: float = 20) -> None:
    async def there():
        return await queue_count(node, queue) == count
    await eventually(there, timeout, f"{node.name}'s {queue} to hold {count}", interval=0.1)


async def send(node, address: str, count: int, *, routing_type: str = "anycast", props=None,
               offset: int = 0) -> None:
    """`count` durable messages to `address` on `node`, "n" numbering them
    from `offset`, each confirmed."""
    await send_to(node.url, address, count, routing_type=routing_type, props=props, offset=offset)


async def send_to(url: str, address: str, count: int, *, routing_type: str = "anycast", props=None,
                  offset: int = 0) -> None:
    """`send` to the node at `url` (a launched node, known by its endpoint)."""
    async with await connect(pinned(url)) as conn:
        p = await (await conn.session()).create_producer(address)
        await asyncio.gather(*[await p.send_async(b"x", properties={"n": i, **((props or (lambda i: {}))(i))},
                                                  routing_type=routing_type)
                               for i in range(offset, offset + count)])
