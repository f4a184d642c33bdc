"""The tree connector (AMQ-2875) on real router processes: HQ at the root,
regions as branches, stores as leaves. Demand travels only along the tree
(a leaf's up to the root, never to its siblings or to other regions), so
where a consumer is decides which nodes hold a network subscription for it;
messages follow that demand down to a store and up to HQ. A store offline
finds its messages waiting on its branch; moving a store to another region
is a change of its uri; a link that would make a second root is refused."""

from __future__ import annotations

import pytest

from meshmq.client import connect
from tests.clustering.cluster import collect
from tests.fixtures.nodes import eventually

from .network import all_settled, link_states, send, start_tree, tree_yaml, wait_linked, wait_topic_demand

pytestmark = pytest.mark.integration

STORE_QUEUE = "store-4711.incoming"
HQ_QUEUE = "hq.orders"
# HQ, three regions, three stores in each: the 13 processes.
REGIONS = {"b1": ["s11", "s12", "s13"], "b2": ["s21", "s22", "s23"], "b3": ["s31", "s32", "s33"]}
TREE = {"hq": None, **{b: "hq" for b in REGIONS}, **{s: b for b, stores in REGIONS.items() for s in stores}}


async def network_holders(net: dict, queue: str) -> set[str]:
    """The nodes holding a network subscription (a consumer of another node's
    demand) on `queue`."""
    held = set()
    for name, node in net.items():
        async with await connect(node.url) as conn:
            if any(c.session_id.startswith("network ") for c in await conn.admin.list_consumers(queue)):
                held.add(name)
    return held


async def wait_holders(net: dict, queue: str, expected: set[str], timeout: float = 20) -> None:
    async def settled():
        return await network_holders(net, queue) == expected
    try:
        await eventually(settled, timeout, f"network subscriptions on {queue} at exactly {sorted(expected)}")
    except TimeoutError:
        raise AssertionError(f"network subscriptions on {queue}: {sorted(await network_holders(net, queue))}, "
                             f"expected {sorted(expected)}") from None


async def demand_sent(net: dict) -> int:
    """Demand messages sent so far over every link of every node."""
    total = 0
    for node in net.values():
        total += sum(link.demand_sent for link in await link_states(node))
    return total


async def test_demand_travels_only_along_the_tree_and_messages_follow_it(nodes):
    net, _ = start_tree(nodes, TREE)
    await wait_linked(net["hq"], 3)
    for branch in REGIONS:
        await wait_linked(net[branch], 4)

    # A store's consumer: its region and HQ hold its demand; no other store, no other region —
    # and it cost exactly two demand messages in the whole tree, one per level (bench/tree.py's figure).
    sent_before = await demand_sent(net)
    async with await connect(net["s12"].url) as store:
        consumer = await (await store.session()).create_consumer(STORE_QUEUE)
        await wait_holders(net, STORE_QUEUE, {"b1", "hq"})
        assert await demand_sent(net) - sent_before == 2
        await send(net["hq"], STORE_QUEUE, 10)
        assert (await collect({"s12": consumer}, 10))["s12"] == list(range(10))
    await wait_holders(net, STORE_QUEUE, set())

    # HQ's consumer: its demand goes down to every node; a store of another region writes and it goes up.
    async with await connect(net["hq"].url) as hq:
        consumer = await (await hq.session()).create_consumer(HQ_QUEUE)
        await wait_holders(net, HQ_QUEUE, set(TREE) - {"hq"})
        await send(net["s23"], HQ_QUEUE, 10)
        assert (await collect({"hq": consumer}, 10))["hq"] == list(range(10))
    await wait_holders(net, HQ_QUEUE, set())

    # A region's consumer: up to HQ and down to its own stores only.
    async with await connect(net["b3"].url) as region:
        await (await region.session()).create_consumer("region-3.reports")
        await wait_holders(net, "region-3.reports", {"hq", *REGIONS["b3"]})


async def test_a_store_offline_finds_its_messages_waiting_on_its_branch(nodes):
    net, _ = start_tree(nodes, {"hq": None, "b1": "hq", "s11": "b1"})
    await wait_linked(net["b1"], 2)
    async with await connect(net["s11"].url) as store:
        await (await store.session()).create_consumer(STORE_QUEUE)
        await wait_holders(net, STORE_QUEUE, {"b1", "hq"})
        net["s11"].kill9()  # the store goes dark with its consumer's demand standing
    await send(net["hq"], STORE_QUEUE, 10)

    async def waiting_on_the_branch():
        async with await connect(net["b1"].url) as conn:
            queues = {q.name: q.message_count for q in await conn.admin.list_queues()}
        return sum(n for name, n in queues.items() if name == STORE_QUEUE or name.startswith("$.meshmq.sf.tree.")) == 10
    await eventually(waiting_on_the_branch, 20, "HQ's 10 to wait on the branch")

    net["s11"].start()
    async with await connect(net["s11"].url) as store:
        consumer = await (await store.session()).create_consumer(STORE_QUEUE)
        assert (await collect({"s11": consumer}, 10))["s11"] == list(range(10))  # none lost, none twice


async def test_moving_a_store_to_another_region_is_a_change_of_its_uri(nodes):
    net, ports = start_tree(nodes, {"hq": None, "b1": "hq", "b2": "hq", "s": "b1"})
    await wait_linked(net["b1"], 2)
    async with await connect(net["s"].url) as store:
        await (await store.session()).create_consumer(STORE_QUEUE)
        await wait_holders(net, STORE_QUEUE, {"b1", "hq"})
    await wait_holders(net, STORE_QUEUE, set())
    net["s"].stop()

    net["s"].config_path.write_text(net["s"].config_path.read_text().replace(
        tree_yaml(ports["s"], ports["b1"], "leaf"), tree_yaml(ports["s"], ports["b2"], "leaf")))
    net["s"].start()
    await wait_linked(net["b2"], 2)
    async with await connect(net["s"].url) as store:
        consumer = await (await store.session()).create_consumer(STORE_QUEUE)
        await wait_holders(net, STORE_QUEUE, {"b2", "hq"})
        await send(net["hq"], STORE_QUEUE, 10)
        assert (await collect({"s": consumer}, 10))["s"] == list(range(10))


async def network_sessions(node, queue: str) -> set[str]:
    """The sessions of the network subscriptions `node` holds on `queue` ("network <link>")."""
    async with await connect(node.url) as conn:
        return {c.session_id for c in await conn.admin.list_consumers(queue) if c.session_id.startswith("network ")}


async def waiting_on(node) -> int:
    """Messages waiting on `node` for the store: in its queue and in its tree links' sf queues."""
    async with await connect(node.url) as conn:
        queues = await conn.admin.list_queues()
    return sum(q.message_count for q in queues if q.name == STORE_QUEUE or q.name.startswith("$.meshmq.sf.tree."))


# On b1, the link's store-and-forward address pages past 3 messages.
PAGED_SF = 'address-settings:\n  "$.meshmq.sf.#": {max-size-messages: 3, page-size-bytes: 2K}\n'


@pytest.mark.parametrize("stop", ["stop", "kill9", "stop, paged"])
async def test_a_store_moved_with_its_consumer_attached_gets_what_waited_on_its_old_region(nodes, stop):
    paged = stop.endswith(", paged")
    stop = stop.split(",")[0]
    net, ports = start_tree(nodes, {"hq": None, "b1": "hq", "b2": "hq", "s": "b1"},
                            extra={"b1": PAGED_SF} if paged else None)
    await wait_linked(net["b1"], 2)
    await wait_linked(net["hq"], 2)
    async with await connect(net["s"].url) as store:
        consumer = await (await store.session()).create_consumer(STORE_QUEUE)
        await wait_holders(net, STORE_QUEUE, {"b1", "hq"})
        await send(net["hq"], STORE_QUEUE, 5)
        assert (await collect({"s": consumer}, 5))["s"] == list(range(5))
        getattr(net["s"], stop)()  # down with its consumer attached: b1 keeps its demand, as for an outage
    await send(net["hq"], STORE_QUEUE, 10, offset=5)

    async def on_b1():
        return await waiting_on(net["b1"]) == 10
    await eventually(on_b1, 20, "HQ's 10 to wait on b1")
    if paged:
        async with await connect(net["b1"].url) as conn:
            queues = await conn.admin.list_queues()
        assert sum(q.paged_count for q in queues if q.name.startswith("$.meshmq.sf.tree.")) >= 7

    net["s"].config_path.write_text(net["s"].config_path.read_text().replace(
        tree_yaml(ports["s"], ports["b1"], "leaf"), tree_yaml(ports["s"], ports["b2"], "leaf")))
    net["s"].start()
    await wait_linked(net["b2"], 2)
    async with await connect(net["s"].url) as store:
        consumer = await (await store.session()).create_consumer(STORE_QUEUE)
        # HQ forwards to the store's new region only; b1 dropped the store's old demand and holds only
        # its return subscription toward HQ (what waited there for the store goes back up).
        async def routed_anew():
            on_hq = await network_sessions(net["hq"], STORE_QUEUE)
            return (len(on_hq) == 1 and next(iter(on_hq)).startswith("network tree<-b2(")
                    and await network_sessions(net["b1"], STORE_QUEUE) == {f"network tree->127.0.0.1:{ports['hq']}"})
        await eventually(routed_anew, 20, "HQ to route the store's queue through b2 only")
        await send(net["hq"], STORE_QUEUE, 10, offset=15)
        got = (await collect({"s": consumer}, 20))["s"]
        assert sorted(got) == list(range(5, 25))  # none lost, none twice
        assert await waiting_on(net["b1"]) == 0 and await waiting_on(net["hq"]) == 0


TOPIC = "store.prices"


async def subscribe(node, name: str):
    """A durable subscription `name` to TOPIC on `node`: its consumer and connection."""
    conn = await connect(node.url)
    consumer = await (await conn.session()).create_consumer(address=TOPIC, subscription=name, shared=True)
    return conn, consumer


@pytest.mark.parametrize("paged", [False, True], ids=["in-memory", "paged"])
async def test_a_moved_store_gets_its_topic_messages_that_waited_on_its_old_region_and_no_one_else_twice(
        nodes, paged):
    """Topic messages that waited on the old branch for the store's durable
    subscription (in the link's store-and-forward queue and the network
    subscription's queue) go on to the store alone: up to HQ, down the new
    branch, to no other subscription on the way."""
    net, ports = start_tree(nodes, {"hq": None, "b1": "hq", "b2": "hq", "s": "b1", "t": "b2"},
                            extra={"b1": PAGED_SF} if paged else None)
    await wait_linked(net["b1"], 2)
    await wait_linked(net["b2"], 2)
    t_conn, on_t = await subscribe(net["t"], "t-archive")
    try:
        s_conn, on_s = await subscribe(net["s"], "s-archive")
        for node, count in (("hq", 2), ("b1", 1), ("b2", 1)):
            await wait_topic_demand(net[node], TOPIC, count)
        await send(net["hq"], TOPIC, 5, routing_type="multicast")
        assert (await collect({"s": on_s}, 5))["s"] == list(range(5))
        net["s"].kill9()  # down with its subscription's consumer attached: b1 keeps its demand
        await s_conn.close()
        await send(net["hq"], TOPIC, 10, offset=5, routing_type="multicast")
        assert (await collect({"t": on_t}, 15))["t"] == list(range(15))

        async def held_on_b1():
            async with await connect(net["b1"].url) as conn:
                queues = await conn.admin.list_queues()
            return sum(q.message_count for q in queues if q.name.startswith("$.meshmq.")) == 10
        await eventually(held_on_b1, 20, "HQ's 10 to wait on b1 for the store")

        net["s"].config_path.write_text(net["s"].config_path.read_text().replace(
            tree_yaml(ports["s"], ports["b1"], "leaf"), tree_yaml(ports["s"], ports["b2"], "leaf")))
        net["s"].start()
        await wait_linked(net["b2"], 3)
        s_conn, on_s = await subscribe(net["s"], "s-archive")
        got = (await collect({"s": on_s}, 10))["s"]
        assert sorted(got) == list(range(5, 15))  # none lost, none twice
        await send(net["hq"], TOPIC, 5, offset=15, routing_type="multicast")
        assert (await collect({"s": on_s, "t": on_t}, 10)) == {"s": list(range(15, 20)), "t": list(range(15, 20))}
        await eventually(lambda: all_settled(net), 20, "every link to settle")
        async with await connect(net["b1"].url) as conn:
            assert sum(q.message_count for q in await conn.admin.list_queues() if q.name.startswith("$.meshmq.")) == 0
        await s_conn.close()
    finally:
        await t_conn.close()


async def wait_refused(node, reason: str) -> None:
    """Until `node`'s tree link shows `reason` as its problem (first dials may
    find the parent still starting: those problems pass)."""
    async def problem() -> str:
        return next((b.problem for b in await link_states(node) if b.cluster_connection == "tree"), "")

    async def refused() -> bool:
        return (await problem()).startswith(reason)
    try:
        await eventually(refused, 20, f"{node.name}'s tree link to be refused")
    except TimeoutError:
        raise AssertionError(f"{node.name}'s tree link shows {await problem()!r}, not {reason!r}") from None


async def test_a_second_root_is_refused_with_the_reason_at_both_ends(nodes):
    # A leaf naming a node without tree-connector (a root), and a branch naming a branch.
    net, ports = start_tree(nodes, {"hq": None, "s": "hq", "b1": "hq", "b2": "b1"}, node_types={"s": "leaf", "b2": "branch"})
    cases = {("s", "hq"): "hq has no tree-connector, so it is the root, but s is a leaf: a leaf links to its branch. "
                          "A tree has one root",
             ("b2", "b1"): "b1 is a branch but b2 is a branch too: a branch links to the root (the node without a "
                           "tree-connector)"}
    for (child, parent), reason in cases.items():
        await wait_refused(net[child], reason)
        assert f"network link tree->127.0.0.1:{ports[parent]} refused: {reason}" in net[child].log_path.read_text()
        assert f"tree link from {child} refused: {reason}" in net[parent].log_path.read_text()
    # Only the right link stands: b1 under hq.
    await wait_linked(net["hq"], 1)
    assert [(b.target_node_name, b.state) for b in await link_states(net["hq"])] == [("b1", "connected")]
