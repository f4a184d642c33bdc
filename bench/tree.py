"""Tree connector against a mesh of network connectors: what one consumer
registration at a store costs in demand messages and network subscriptions
(issue 28, AMQ-2875's spillage).

1 root, 10 branches and N leaves (stores, spread over the branches) as
in-process `NetworkDemand` nodes (services/router/network/simulation.py
delivers each demand message to its peer until the network is quiet). A
consumer registers on `store-<i>.incoming` at a sample of leaves, one at a
time, and each registration reports the demand messages sent, the network
subscriptions created and the spill (demand messages reaching a node that is
not on the leaf's way to the root: a sibling store or another branch's
subtree). Two shapes alike but for the links: tree connectors, then duplex
network connectors with networkTTL 2 (the seed's spillage: the branch passes
a store's demand to its other stores as well as to the root). Memory is
tracemalloc's count of everything the nodes hold, per leaf once built, and
what a registration adds (on a second build: tracemalloc slows the timing).
The mesh's sample is smaller by default: each of its registrations is a
thousand demand messages, and the figures are per registration.

    .venv/bin/python bench/tree.py [--leaves 10000] [--sample 1000] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from services.router.network.demand import QUEUE, Destination, LinkPolicy  # noqa: E402
from services.router.network.simulation import Network, Traffic  # noqa: E402

BRANCHES = 10
TREE, MESH = "tree connector", "mesh, networkTTL 2"
MEMORY_REGISTRATIONS = 20
SHAPES = {TREE: LinkPolicy(tree=True), MESH: LinkPolicy(consumer_ttl=2)}


def build(leaves: int, policy: LinkPolicy) -> Network:
    net = Network()
    for b in range(BRANCHES):
        link(net, f"branch-{b}", "root", policy)
    for i in range(leaves):
        link(net, f"store-{i}", f"branch-{i % BRANCHES}", policy)
    return net


def link(net: Network, child: str, parent: str, policy: LinkPolicy) -> None:
    if policy.tree:
        net.connect_tree(child, parent, policy)
    else:
        net.connect(child, parent, policy, duplex=True)


def register(net: Network, leaf: int) -> tuple[Traffic, float]:
    node = f"store-{leaf}"
    started = time.perf_counter()
    changes = net.nodes[node].consumer_added("c1", Destination(QUEUE, f"{node}.incoming"))
    traffic = net.deliver(node, changes)
    return traffic, time.perf_counter() - started


def sample_of(leaves: int, sample: int) -> list[int]:
    """`sample` leaves spread evenly over all of them (so over every branch)."""
    return list(range(0, leaves, max(1, leaves // sample)))[:sample]


def run(shape: str, policy: LinkPolicy, leaves: int, sample: int) -> dict:
    """Registrations timed without tracemalloc (it slows allocation severalfold); memory measured on
    a second build that makes the same registrations."""
    started = time.perf_counter()
    net = build(leaves, policy)
    built_s = time.perf_counter() - started
    gc.freeze()  # a real node holds one node's objects, not 10,000 nodes' for the collector to rescan
    messages, subscriptions, spill, seconds = [], [], [], []
    chosen = sample_of(leaves, sample)
    for leaf in chosen:
        traffic, elapsed = register(net, leaf)
        on_the_way = {f"branch-{leaf % BRANCHES}", "root"}
        messages.append(traffic.messages)
        subscriptions.append(traffic.subscriptions_created)
        spill.append(sum(n for node, n in traffic.received_by.items() if node not in on_the_way))
        seconds.append(elapsed)
    del net
    gc.unfreeze()
    gc.collect()
    return {
        "shape": shape, "leaves": leaves, "branches": BRANCHES, "registrations": len(chosen),
        "build_s": round(built_s, 2),
        "demand_messages_per_registration": summary(messages),
        "subscriptions_per_registration": summary(subscriptions),
        "spill_per_registration": summary(spill),
        "ms_per_registration": {k: round(v * 1000, 3) for k, v in summary(seconds).items()},
        **memory(policy, leaves, chosen),
    }


def memory(policy: LinkPolicy, leaves: int, chosen: list[int]) -> dict:
    """Bytes the built network holds per leaf, and what one registration adds (over the first
    MEMORY_REGISTRATIONS of the sample: tracemalloc makes a mesh registration take a third of a second)."""
    tracemalloc.start()
    net = build(leaves, policy)
    built = tracemalloc.get_traced_memory()[0]
    measured = chosen[:MEMORY_REGISTRATIONS]
    for leaf in measured:
        register(net, leaf)
    added = tracemalloc.get_traced_memory()[0] - built
    tracemalloc.stop()
    return {"bytes_per_leaf_built": round(built / leaves), "bytes_per_registration": round(added / len(measured))}


def summary(values: list[float]) -> dict:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leaves", type=int, default=10_000)
    parser.add_argument("--sample", type=int, default=1_000, help="leaves that each register one consumer (tree)")
    parser.add_argument("--mesh-sample", type=int, default=100,
                        help="the same for the mesh, where each registration is ~1,000 demand messages")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    samples = {TREE: args.sample, MESH: args.mesh_sample}
    results = [run(shape, policy, args.leaves, samples[shape]) for shape, policy in SHAPES.items()]
    machine = {"python": platform.python_version(), "platform": platform.platform()}
    if args.json:
        print(json.dumps({"machine": machine, "results": results}, indent=2))
        return
    table = Table(title=f"Demand per consumer registration at a leaf: 1 root, {BRANCHES} branches, "
                        f"{args.leaves:,} leaves")
    table.add_column("")
    for r in results:
        table.add_column(r["shape"], justify="right")
    table.add_row("registrations", *(f"{r['registrations']:,}" for r in results))
    rows = [("demand messages (median, max)", "demand_messages_per_registration"),
            ("network subscriptions created (median, max)", "subscriptions_per_registration"),
            ("spill to peers (median, max)", "spill_per_registration"),
            ("ms per registration (median, max)", "ms_per_registration")]
    for label, key in rows:
        table.add_row(label, *(f"{r[key]['median']:g} / {r[key]['max']:g}" for r in results))
    table.add_row("bytes per leaf, built", *(f"{r['bytes_per_leaf_built']:,}" for r in results))
    table.add_row("bytes per registration", *(f"{r['bytes_per_registration']:,}" for r in results))
    table.add_row("build (s)", *(f"{r['build_s']}" for r in results))
    Console().print(table)
    print(f"Python {machine['python']}, {machine['platform']}")


if __name__ == "__main__":
    main()
