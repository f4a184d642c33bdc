"""group-first-key on a message a cluster connection forwards: it leaves the
sending node from an internal store-and-forward queue, which does not group,
and the queue on the far node marks it for the consumer it pins the group to
there (services/router/message_groups.py)."""

from __future__ import annotations

import pytest

from meshmq.client import connect

from .cluster import start_cluster, wait_bindings

pytestmark = pytest.mark.integration

ADDRESS = "jobs.first"
FIRST = "JMSXGroupFirstForConsumer"
PAIR = {"A": ["B"], "B": ["A"]}


def queue_yaml(first_key: str = "") -> str:
    key = f", group-first-key: {first_key}" if first_key else ""
    return f"addresses:\n  {ADDRESS}: {{anycast: [{{name: {ADDRESS}{key}}}]}}\n"


async def test_the_far_nodes_queue_marks_the_first_message_of_a_group_it_was_forwarded(nodes):
    # only B's queue has a group-first-key; every message is sent to A; STRICT: every other one goes to B
    cluster = start_cluster(nodes, PAIR, options="message-load-balancing: STRICT",
                            per_node={"A": queue_yaml(), "B": queue_yaml(FIRST)})
    for n, other in (("A", "B"), ("B", "A")):
        await wait_bindings(cluster[n], {(other, ADDRESS, 0)})
    conns = {n: await connect(cluster[n].url) for n in PAIR}
    try:
        consumers = {n: await (await c.session()).create_consumer(ADDRESS) for n, c in conns.items()}
        producer = await (await conns["A"].session()).create_producer(ADDRESS)
        for seq in range(1, 7):
            await producer.send(f"g:{seq}".encode(), routing_type="anycast", group_id="g", group_seq=seq)
        got: dict[str, list] = {n: [] for n in PAIR}
        for n, c in consumers.items():
            while len(got[n]) < 3:
                m = await c.receive(20)
                assert m is not None, f"{n} got {len(got[n])} of its 3 messages"
                got[n].append(m)
                c.ack(m)
            assert await c.receive(0.3) is None
        seqs = {n: [m.group_seq for m in ms] for n, ms in got.items()}
        assert all(s == sorted(s) for s in seqs.values()) and sorted(seqs["A"] + seqs["B"]) == [1, 2, 3, 4, 5, 6]
        assert [m.properties.get(FIRST) for m in got["B"]] == [True, None, None]  # marked by B's queue, once
        assert [m.properties.get(FIRST) for m in got["A"]] == [None, None, None]  # A's queue has no key
    finally:
        for c in conns.values():
            await c.close()
