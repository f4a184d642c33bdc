"""Cluster-connection parameters with a behaviour of their own (issue 11):
`address` (which addresses a cluster connection balances),
`confirmation-window-size` (what a link may have unconfirmed), `client-id`
(how the link shows among a queue's consumers). The others are shown by the
load-balancing, topology, fault and large-message tests beside this file."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from meshmq.client import connect
from tests.fixtures.nodes import eventually

from .cluster import cluster_state, start_cluster, wait_bindings

pytestmark = pytest.mark.integration

PAIR = {"A": ["B"], "B": ["A"]}


async def send(node, address: str, count: int, body: bytes = b"x") -> None:
    async with await connect(node.url) as conn:
        p = await (await conn.session()).create_producer(address)
        await asyncio.gather(*[await p.send_async(body, properties={"n": i}) for i in range(count)])


async def counts(node, *queues: str) -> dict[str, int]:
    async with await connect(node.url) as conn:
        return {q: (await conn.admin.queue(q)).message_count for q in queues}


async def test_address_limits_what_a_cluster_connection_balances(nodes):
    extra = ("addresses:\n  eu.orders: {anycast: [{name: eu.orders}]}\n  eu.uk.orders: {anycast: [{name: eu.uk.orders}]}\n"
             "  us.orders: {anycast: [{name: us.orders}]}\n")
    cluster = start_cluster(nodes, PAIR, extra=extra, options="message-load-balancing: STRICT, address: 'eu,!eu.uk'")
    await wait_bindings(cluster["A"], {("B", "eu.orders", 0)})  # B's other queues are not on this connection
    for address in ("eu.orders", "eu.uk.orders", "us.orders"):
        await send(cluster["A"], address, 10)
    assert await counts(cluster["A"], "eu.orders", "eu.uk.orders", "us.orders") == {
        "eu.orders": 5, "eu.uk.orders": 10, "us.orders": 10}
    async def b_has_its_share():
        return (await counts(cluster["B"], "eu.orders"))["eu.orders"] == 5
    await eventually(b_has_its_share, 10, "B to hold its half of eu.orders")


async def test_a_link_has_at_most_its_confirmation_window_unconfirmed(nodes):
    extra = "addresses:\n  jobs: {anycast: [{name: jobs}]}\n"
    cluster = start_cluster(nodes, PAIR, extra=extra, options=(
        "message-load-balancing: STRICT, confirmation-window-size: 10K, connection-ttl: 60000"))
    await wait_bindings(cluster["A"], {("B", "jobs", 0)})
    os.kill(cluster["B"].proc.pid, signal.SIGSTOP)  # B takes nothing and confirms nothing
    try:
        await send(cluster["A"], "jobs", 100, body=b"x" * 1000)  # 50 for B, ~1.1 KB each

        async def stalled():
            b = (await cluster_state(cluster["A"])).bridges[0]
            return b.routed == 50 and b.forwarded > 0
        await eventually(stalled, 10, "A's bridge to fill its window")
        await asyncio.sleep(0.5)  # nothing more goes out while the window is full
        b = (await cluster_state(cluster["A"])).bridges[0]
        assert b.confirmed == 0 and 8 <= b.forwarded <= 10, b  # 10 KiB / ~1.1 KB
        assert b.pending == 50
    finally:
        os.kill(cluster["B"].proc.pid, signal.SIGCONT)

    async def drained():
        b = (await cluster_state(cluster["A"])).bridges[0]
        return b.confirmed == 50 and b.pending == 0
    await eventually(drained, 20, "the window to let everything through once B answers")


async def test_client_id_names_the_link_among_the_queues_consumers(nodes):
    cluster = start_cluster(nodes, PAIR, options="client-id: eu-west-link")
    await eventually(lambda: _linked(cluster["A"]), 10, "A to link to B")
    async with await connect(cluster["A"].url) as conn:
        consumers = await conn.admin.list_consumers()
        assert [c.client_id for c in consumers if c.queue.startswith("$.meshmq.sf.")] == ["eu-west-link"]


async def _linked(node) -> bool:
    state = await cluster_state(node)
    return bool(state.bridges) and state.bridges[0].state == "connected"


async def test_several_cluster_connections_on_one_node_each_balance_their_addresses(nodes):
    from tests.fixtures.nodes import free_port

    ports = {n: free_port() for n in "ABC"}
    queues = "addresses:\n  eu.orders: {anycast: [{name: eu.orders}]}\n  us.orders: {anycast: [{name: us.orders}]}\n"
    a_yaml = (f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {ports['A']}}}\n"
              f"connectors:\n  b: 127.0.0.1:{ports['B']}\n  c: 127.0.0.1:{ports['C']}\n"
              "cluster-connections:\n"
              "  europe: {address: eu, static-connectors: [b], message-load-balancing: STRICT}\n"
              "  america: {address: us, static-connectors: [c], message-load-balancing: STRICT}\n" + queues)
    other = {n: f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {ports[n]}}}\n" + queues for n in "BC"}
    b = nodes.router("B", extra=other["B"])
    c = nodes.router("C", extra=other["C"])
    a = nodes.router("A", extra=a_yaml)
    await wait_bindings(a, {("B", "eu.orders", 0), ("C", "us.orders", 0)})
    await send(a, "eu.orders", 10)
    await send(a, "us.orders", 10)

    async def spread():
        return (await counts(b, "eu.orders", "us.orders") == {"eu.orders": 5, "us.orders": 0}
                and await counts(c, "eu.orders", "us.orders") == {"eu.orders": 0, "us.orders": 5})
    await eventually(spread, 10, "eu.orders shared with B only and us.orders with C only")
    assert await counts(a, "eu.orders", "us.orders") == {"eu.orders": 5, "us.orders": 5}
    names = sorted(br.store_and_forward_queue for br in (await cluster_state(a)).bridges)
    assert names == [f"$.meshmq.sf.america.{c.info['node_id']}", f"$.meshmq.sf.europe.{b.info['node_id']}"]


async def test_clients_cannot_use_the_store_and_forward_queues(nodes):
    from meshmq.errors import InvalidRequestError

    cluster = start_cluster(nodes, PAIR)
    await eventually(lambda: _linked(cluster["A"]), 10, "A to link to B")
    sf = (await cluster_state(cluster["A"])).bridges[0].store_and_forward_queue
    async with await connect(cluster["A"].url) as conn:
        s = await conn.session()
        with pytest.raises(InvalidRequestError, match="internal to the router"):
            await s.create_consumer(sf)
        with pytest.raises(InvalidRequestError, match="internal to the router"):
            await s.create_consumer(address="$.meshmq.anything")
        p = await s.create_producer(sf)
        with pytest.raises(InvalidRequestError, match="internal to the router"):
            await p.send(b"x")
        with pytest.raises(InvalidRequestError, match="internal to the router"):
            await conn.admin.create_queue("$.meshmq.mine")


async def test_meshmq_cluster_bindings_shows_each_nodes_view(nodes):
    import subprocess
    import sys

    extra = "addresses:\n  jobs: {anycast: [{name: jobs}]}\n"
    cluster = start_cluster(nodes, PAIR, extra=extra)
    async with await connect(cluster["B"].url) as conn:
        await (await conn.session()).create_consumer("jobs", filter="colour = 'red'")
        await wait_bindings(cluster["A"], {("B", "jobs", 1)})
        out = subprocess.run([sys.executable, "-m", "meshmq.cli.main", "cluster", "bindings", "--url", cluster["A"].url],
                             capture_output=True, text=True, timeout=60, check=True).stdout
    lines = [line.split("\t") for line in out.splitlines()]
    bridge = lines[1]
    assert bridge[:5] == ["cc", "cluster", "B", cluster["B"].endpoint, "connected"]
    binding = next(line for line in lines if line[:2] == ["B", "jobs"])
    assert binding[2:8] == ["jobs", "ANYCAST", "", "1", "colour = 'red'", "1"]


async def test_a_link_forwards_a_burst_in_batches_not_a_call_per_message(nodes):
    extra = "addresses:\n  jobs: {anycast: [{name: jobs}]}\n"
    cluster = start_cluster(nodes, PAIR, extra=extra, options="message-load-balancing: STRICT")
    await wait_bindings(cluster["A"], {("B", "jobs", 0)})
    await send(cluster["A"], "jobs", 2000)  # half of them for B

    async def confirmed():
        b = (await cluster_state(cluster["A"])).bridges[0]
        return b if b.confirmed == 1000 and b.pending == 0 else None
    b = await eventually(confirmed, 20, "B to confirm its 1,000")
    assert b.forwarded == 1000
    assert 1 <= b.batches <= b.forwarded // 10, b  # at least ten messages a frame on average
    assert (await counts(cluster["B"], "jobs")) == {"jobs": 1000}
