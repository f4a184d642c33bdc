"""Clustered grouping (grouping-handler) on real three-node clusters: A holds
the LOCAL handler, B and C REMOTE ones. Every message of a group is consumed
on one node whichever node it was sent to; with A killed, known groups still
route and a new group's send fails after `timeout` naming the cause; A's
decisions survive its restart."""

from __future__ import annotations

import asyncio
import time

import pytest

from meshmq.client import GroupingUnavailableError, connect

from .cluster import start_cluster, wait_bindings

pytestmark = pytest.mark.integration

ADDRESS = "jms.orders"
QUEUE = f"addresses:\n  {ADDRESS}: {{anycast: [{{name: {ADDRESS}}}]}}\n"
LINKS = {"A": ["B", "C"], "B": ["A", "C"], "C": ["A", "B"]}


def handlers(timeout: int = 5000) -> dict[str, str]:
    return {n: (f"grouping-handler: {{name: gh, type: {'LOCAL' if n == 'A' else 'REMOTE'}, address: jms, "
                f"timeout: {timeout}}}\n") for n in LINKS}


async def consume_all(conns: dict, total: int, deadline: float = 30) -> dict[str, list[tuple[str, str, int]]]:
    """(group, producer node, n) of every message, by the node it was consumed on, until `total`
    have come and then a moment more (a message too many would be seen)."""
    got: dict[str, list[tuple[str, str, int]]] = {n: [] for n in conns}
    consumers = {n: await (await c.session()).create_consumer(ADDRESS) for n, c in conns.items()}

    async def take(name, timeout):
        while (m := await consumers[name].receive(timeout=timeout)) is not None:
            got[name].append((m.group_id, m.properties["via"], int(m.properties["n"])))
            consumers[name].ack(m)

    end = time.monotonic() + deadline
    while sum(map(len, got.values())) < total and time.monotonic() < end:
        await asyncio.gather(*(take(n, 0.05) for n in consumers))
    await asyncio.gather(*(take(n, 0.5) for n in consumers))
    return got


def by_group(got: dict[str, list[tuple[str, str, int]]]) -> dict[str, set[str]]:
    nodes: dict[str, set[str]] = {}
    for node, msgs in got.items():
        for group, _, _ in msgs:
            nodes.setdefault(group, set()).add(node)
    return nodes


async def test_each_group_is_consumed_on_one_node_whichever_node_it_was_sent_to(nodes):
    cluster = start_cluster(nodes, LINKS, options="message-load-balancing: STRICT", extra=QUEUE,
                            per_node=handlers())
    conns = {n: await connect(cluster[n].url) for n in LINKS}
    try:
        for n in LINKS:
            await wait_bindings(cluster[n], {(o, ADDRESS, 0) for o in LINKS if o != n})
        producers = {n: await (await c.session()).create_producer(ADDRESS) for n, c in conns.items()}
        groups, per_group = [f"g{k}" for k in range(6)], 9
        sent = 0
        for i in range(per_group):
            for k, group in enumerate(groups):
                via = "ABC"[(i + k) % 3]  # each group's messages go to all three nodes in turn
                await producers[via].send(f"{group}-{i}".encode(), group_id=group,
                                          properties={"n": i, "via": via})
                sent += 1
        got = await consume_all(conns, sent)
        assert sum(map(len, got.values())) == sent
        placed = by_group(got)
        assert all(len(where) == 1 for where in placed.values()), f"groups split over nodes: {placed}"
        assert len({next(iter(w)) for w in placed.values()}) > 1, f"every group on one node: {placed}"
        for msgs in got.values():  # in send order per producer
            for group in groups:
                for via in "ABC":
                    ns = [n for g, v, n in msgs if g == group and v == via]
                    assert ns == sorted(ns), f"{group} from {via} out of order: {ns}"
    finally:
        for c in conns.values():
            await c.close()


async def test_with_the_local_handler_killed_known_groups_route_new_ones_fail_and_decisions_survive(nodes):
    cluster = start_cluster(nodes, LINKS, options="message-load-balancing: STRICT", extra=QUEUE,
                            per_node=handlers(timeout=2000))
    for n in LINKS:
        await wait_bindings(cluster[n], {(o, ADDRESS, 0) for o in LINKS if o != n})
    known = [f"k{k}" for k in range(6)]
    confirmed: list[tuple[str, str, int]] = []

    async def send(via: str, group: str, n: int) -> None:
        async with await connect(cluster[via].url) as conn:
            producer = await (await conn.session()).create_producer(ADDRESS)
            await producer.send(b"x", group_id=group, properties={"n": n, "via": via})
        confirmed.append((group, via, n))

    for group in known:  # decided by A, B caches the answers
        await send("B", group, 0)
    cluster["A"].kill9()

    for group in known:  # known on B: routed as decided (to A's queue: kept in B's store-and-forward queue)
        await send("B", group, 1)
    started = time.monotonic()
    with pytest.raises(GroupingUnavailableError) as refused:
        await send("B", "new-group", 0)
    waited = time.monotonic() - started
    assert 1.9 <= waited < 10, waited
    assert "LOCAL grouping handler 'gh'" in str(refused.value) and "within its timeout (2000 ms)" in str(refused.value)
    assert "new-group" in str(refused.value)

    cluster["A"].start()
    for n in LINKS:
        await wait_bindings(cluster[n], {(o, ADDRESS, 0) for o in LINKS if o != n}, timeout=30)
    for group in known:  # C never asked about them: A answers from the decisions it stored
        await send("C", group, 2)
    await send("B", "new-group", 1)  # and decides new groups again

    conns = {n: await connect(cluster[n].url) for n in LINKS}
    try:
        got = await consume_all(conns, len(confirmed))
    finally:
        for c in conns.values():
            await c.close()
    assert sorted(m for msgs in got.values() for m in msgs) == sorted(confirmed)  # nothing lost, nothing twice
    placed = by_group(got)
    assert all(len(where) == 1 for where in placed.values()), f"groups split over nodes: {placed}"
