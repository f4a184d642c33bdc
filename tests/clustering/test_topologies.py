"""Cluster topologies and multicast across cluster connections (issue 11):
every subscription gets each message once, wherever it lives; a chain
passes messages on only as far as max-hops lets bindings travel."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.client import connect

from .cluster import collect, start_cluster, wait_bindings

pytestmark = pytest.mark.integration

TOPIC = "news"


async def test_each_subscription_across_the_cluster_gets_each_message_once(nodes):
    names = ["A", "B", "C"]
    cluster = start_cluster(nodes, {n: [m for m in names if m != n] for n in names})
    conns, consumers = [], {}
    try:
        for n in names:
            conn = await connect(cluster[n].url)
            conns.append(conn)
            s = await conn.session()
            # A temporary subscription on every node, and the durable subscription "audit" on A and B.
            consumers[f"{n}:temp"] = await s.create_consumer(address=TOPIC)
            if n in ("A", "B"):
                consumers[f"{n}:audit"] = await s.create_consumer(address=TOPIC, subscription="audit", shared=True)

        async def a_knows_every_subscription():
            state = await conns[0].admin.cluster_state()
            return sum(1 for b in state.remote_bindings if b.address == TOPIC) == 3  # B temp, C temp, B audit
        from tests.fixtures.nodes import eventually
        await eventually(a_knows_every_subscription, 20, "A to know the subscriptions of B and C", interval=0.1)

        async with await connect(cluster["A"].url) as conn:
            p = await (await conn.session()).create_producer(TOPIC)
            await asyncio.gather(*[await p.send_async(b"x", properties={"n": i}, routing_type="multicast")
                                   for i in range(30)])
        got = await collect(consumers, 30 * 3 + 30)
        for n in names:
            assert got[f"{n}:temp"] == list(range(30)), n
        # One durable subscription held on two nodes: one copy per message, shared round robin.
        assert sorted(got["A:audit"] + got["B:audit"]) == list(range(30))
        assert got["A:audit"] == list(range(0, 30, 2)) and got["B:audit"] == list(range(1, 30, 2))
    finally:
        for conn in conns:
            await conn.close()


CHAIN = {"A": ["B"], "B": ["C"], "C": []}
ORDERS = "addresses:\n  OrderQueue: {anycast: [{name: OrderQueue}]}\n"


@pytest.mark.parametrize("max_hops", [2, 1])
async def test_a_chain_passes_messages_as_far_as_max_hops(nodes, max_hops):
    cluster = start_cluster(nodes, CHAIN, options=f"max-hops: {max_hops}, allow-direct-connections-only: true",
                            extra=ORDERS)
    async with await connect(cluster["C"].url) as c_conn:
        consumer = await (await c_conn.session()).create_consumer("OrderQueue")
        await wait_bindings(cluster["B"], {("C", "OrderQueue", 1)})
        expected_at_a = {("B", "OrderQueue", 0)} | ({("C", "OrderQueue", 1)} if max_hops == 2 else set())
        await wait_bindings(cluster["A"], expected_at_a)
        async with await connect(cluster["A"].url) as a_conn:
            p = await (await a_conn.session()).create_producer("OrderQueue")
            await asyncio.gather(*[await p.send_async(b"o", properties={"n": i}) for i in range(50)])
            if max_hops == 2:
                got = await collect({"C": consumer}, 50)
                assert got == {"C": list(range(50))}
                state = await a_conn.admin.cluster_state()
                via = {(b.node_name, b.hops, b.via) for b in state.remote_bindings}
                assert ("C", 2, f"cc->{cluster['B'].endpoint}") in via
            else:
                assert await consumer.receive(timeout=1.0) is None
                assert (await a_conn.admin.queue("OrderQueue")).message_count == 50


@pytest.mark.parametrize("direct_only", [True, False])
async def test_static_members_with_and_without_allow_direct_connections_only(nodes, direct_only):
    # A lists only B; B lists A and C; C lists only B.
    links = {"A": ["B"], "B": ["A", "C"], "C": ["B"]}
    cluster = start_cluster(nodes, links, extra=ORDERS,
                            options=f"allow-direct-connections-only: {str(direct_only).lower()}")
    from .cluster import cluster_state
    from tests.fixtures.nodes import eventually

    expected = {cluster["B"].endpoint} if direct_only else {cluster["B"].endpoint, cluster["C"].endpoint}

    async def a_links():
        state = await cluster_state(cluster["A"])
        return {b.endpoint for b in state.bridges if b.state == "connected"} == expected
    await eventually(a_links, 20, f"A to link to exactly {sorted(expected)}", interval=0.1)
    await wait_bindings(cluster["A"], {("B", "OrderQueue", 0)} | (set() if direct_only else {("C", "OrderQueue", 0)}))
    if direct_only:  # nothing more shows up: C was learned through B, and A may not link to it
        await asyncio.sleep(1.0)
        assert {b.endpoint for b in (await cluster_state(cluster["A"])).bridges} == expected


async def test_a_symmetric_cluster_found_through_etcd(nodes, etcd_session):
    names = ["A", "B", "C"]
    discovery = f"""
discovery-groups:
  dg: {{etcd: {{endpoints: ["{etcd_session.endpoint}"]}}, cluster-name: sym-{id(nodes)}, refresh-timeout: 4000}}
broadcast-groups:
  bg: {{discovery-group-ref: dg, broadcast-period: 500}}
cluster-connections:
  cc: {{discovery-group-ref: dg, max-hops: 1}}
{ORDERS}"""
    cluster = {n: nodes.router(n, extra=discovery) for n in names}
    conns, consumers = [], {}
    try:
        for n in names:
            conn = await connect(cluster[n].url)
            conns.append(conn)
            consumers[n] = await (await conn.session()).create_consumer("OrderQueue")
        for n in names:
            await wait_bindings(cluster[n], {(m, "OrderQueue", 1) for m in names if m != n})
        async with await connect(cluster["B"].url) as conn:
            p = await (await conn.session()).create_producer("OrderQueue")
            await asyncio.gather(*[await p.send_async(b"o", properties={"n": i}) for i in range(30)])
        got = await collect(consumers, 30)
        # From B: B itself first, then the others by node name.
        assert got == {"B": list(range(0, 30, 3)), "A": list(range(1, 30, 3)), "C": list(range(2, 30, 3))}
    finally:
        for conn in conns:
            await conn.close()


async def test_a_node_that_joins_by_naming_one_member_is_linked_back_by_everyone(nodes):
    """A and B list each other; C, started later, lists only A. A links back to
    C when C links to it, and B learns C from A: a producer on A or B reaches
    the only consumer, on C. (Before, only C's own links existed: A and B never
    forwarded to it.)"""
    cluster = start_cluster(nodes, {"A": ["B"], "B": ["A"], "C": ["A"]}, extra=ORDERS, start=False)
    for name in ("A", "B"):
        await asyncio.to_thread(cluster[name].start)
    await wait_bindings(cluster["A"], {("B", "OrderQueue", 0)})
    await asyncio.to_thread(cluster["C"].start)
    async with await connect(cluster["C"].url) as c_conn:
        consumer = await (await c_conn.session()).create_consumer("OrderQueue")
        for name in ("A", "B"):
            await wait_bindings(cluster[name], {("C", "OrderQueue", 1),
                                                ("B" if name == "A" else "A", "OrderQueue", 0)})
        for n, name in enumerate(("A", "B")):
            async with await connect(cluster[name].url) as conn:
                await (await (await conn.session()).create_producer("OrderQueue")).send(b"x", properties={"n": n})
        got = await collect({"C": consumer}, 2)
        # One message through each of two bridges: no order between them (only per producer).
        assert sorted(got["C"]) == [0, 1] and set(got) == {"C"}
    assert "linking back to C" in cluster["A"].log_path.read_text()
