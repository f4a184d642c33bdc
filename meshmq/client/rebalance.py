"""Where a connection's sessions go when the cluster asks its clients to
rebalance (a node with rebalance-cluster-clients saw a node join).

ActiveMQ's failover clients answer such a request by reconnecting to a
random broker of the updated list, so many clients spread evenly in
expectation. A meshmq connection holds several sessions, each on its own
node: the plan gives every node an even share of them (the remainder to
nodes drawn at random, which is what spreads single-session clients), keeps
as many sessions where they are as those shares allow and moves the rest.
Pure: the caller moves the sessions (Session.move_to).
"""

from __future__ import annotations

import random
from collections.abc import Sequence


def rebalance_plan(placement: Sequence[str], nodes: Sequence[str], rng: random.Random) -> list[str]:
    """The node each session should be on, by index of `placement` (the node each
    is on now); a session on a node not in `nodes` always moves. `nodes` empty: no change."""
    if not nodes:
        return list(placement)
    base, extra = divmod(len(placement), len(nodes))
    quota = dict.fromkeys(nodes, base)
    for node in rng.sample(list(nodes), extra):
        quota[node] += 1
    plan = list(placement)
    movers = []
    for i, node in enumerate(placement):
        if quota.get(node, 0) > 0:
            quota[node] -= 1
        else:
            movers.append(i)
    room = [node for node in nodes for _ in range(quota[node])]
    for i, node in zip(movers, room):
        plan[i] = node
    return plan
