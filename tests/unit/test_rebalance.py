"""The rebalance plan (meshmq/client/rebalance.py) and the router's rebalance
requests in the topology it pushes (services/router/client_topology.py)."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from meshmq.client.rebalance import rebalance_plan
from meshmq.v1 import management_pb2 as mgpb
from services.router.client_topology import ClientTopology

NODES = ["a", "b", "c", "d"]


@given(
    placement=st.lists(st.sampled_from(NODES + ["gone"]), max_size=30),
    size=st.integers(min_value=1, max_value=4),
    seed=st.integers(),
)
def test_the_plan_shares_sessions_evenly_and_moves_no_more_than_it_must(placement, size, seed):
    nodes = NODES[:size]
    plan = rebalance_plan(placement, nodes, random.Random(seed))
    assert len(plan) == len(placement)
    counts = Counter(plan)
    assert set(counts) <= set(nodes)
    shares = [counts.get(n, 0) for n in nodes]
    assert max(shares) - min(shares) <= 1  # an even share each, the remainder one more
    # A session stays wherever its node keeps a share it fills: only the surplus and the gone move.
    now = Counter(placement)
    moved = sum(1 for old, new in zip(placement, plan) if old != new)
    elsewhere = sum(n for node, n in now.items() if node not in nodes)  # not a member (any more): always moves
    assert moved == sum(max(0, now.get(n, 0) - counts.get(n, 0)) for n in nodes) + elsewhere


def test_a_node_joining_a_balanced_pair_takes_a_third_of_six_sessions():
    plan = rebalance_plan(["a", "b"] * 3, ["a", "b", "c"], random.Random(1))
    assert Counter(plan) == {"a": 2, "b": 2, "c": 2}
    assert sum(1 for old, new in zip(["a", "b"] * 3, plan) if old != new) == 2


def test_single_session_clients_spread_over_the_nodes_as_activemq_clients_do():
    """One session per connection: the remainder goes to a node drawn at random,
    so many clients on one node spread out (in expectation, evenly)."""
    rng = random.Random(7)
    plans = Counter(rebalance_plan(["a"], ["a", "b", "c"], rng)[0] for _ in range(3000))
    assert set(plans) == {"a", "b", "c"}
    assert all(900 < n < 1100 for n in plans.values())


def test_no_nodes_no_change():
    assert rebalance_plan(["a", "b"], [], random.Random(0)) == ["a", "b"]


def _member(node_id: str) -> mgpb.TopologyMember:
    return mgpb.TopologyMember(node_id=node_id, connector=f"127.0.0.1:{1000 + len(node_id)}")


def test_the_router_asks_for_a_rebalance_when_a_node_joins_and_only_then():
    async def run(rebalance_on_join: bool) -> list[int]:
        topology = ClientTopology(rebalance_on_join=rebalance_on_join)
        seen = []
        for members in (["me"], ["me", "x"], ["me", "x"], ["me"], ["me", "x", "yy"], ["me", "yy"]):
            await topology.replace([_member(m) for m in members])
            seen.append(topology.snapshot().rebalance)
        return seen

    # joined x; nothing new; x left; x and yy joined; x left
    assert asyncio.run(run(True)) == [0, 1, 1, 1, 2, 2]
    assert asyncio.run(run(False)) == [0, 0, 0, 0, 0, 0]
