"""The console's topology layout (services/gateway/topology_svg.py): a tree
of tree-connector links is drawn as a tree — the root on top, each child
below its parent, siblings side by side — and network links apart from
cluster bridges, one line per link with an arrow when it is one-way."""

from __future__ import annotations

from services.gateway.topology_svg import HEIGHT, WIDTH, layout, tree_positions
from services.gateway.views import BridgeView, ClusterView, NodeView

# 1 root, 2 branches, 4 leaves, in an order that is not the tree's.
PARENTS = {"b1": "root", "b2": "root", "l1": "b1", "l2": "b1", "l3": "b2", "l4": "b2"}
NAMES = ["l3", "b1", "root", "l1", "b2", "l4", "l2"]


def _link(node: str, target: str, kind: str, **extra) -> BridgeView:
    return BridgeView(node=node, target=target, kind=kind, cluster_connection=extra.pop("cc", kind), endpoint="",
                      state=extra.pop("state", "connected"), routed=0, forwarded=0, batches=0, confirmed=0,
                      pending=0, retries=0, **extra)


def _view(names: list[str], links: list[BridgeView]) -> ClusterView:
    return ClusterView(nodes=[NodeView(name=n, connector="", up=True) for n in names], bridges=links, ha_groups=[])


def test_each_child_is_one_level_below_its_parent_and_the_root_on_top():
    at = tree_positions(NAMES, PARENTS)
    assert at["root"][1] == min(y for _, y in at.values())
    for child, parent in PARENTS.items():
        assert at[child][1] > at[parent][1], child
    assert at["b1"][1] == at["b2"][1] and len({at[leaf][1] for leaf in ("l1", "l2", "l3", "l4")}) == 1
    # the leaves spread over the width, each branch centred over its own leaves
    assert at["b1"][0] == (at["l1"][0] + at["l2"][0]) / 2 and at["b2"][0] == (at["l3"][0] + at["l4"][0]) / 2
    assert sorted(x for x, _ in (at[leaf] for leaf in ("l1", "l2", "l3", "l4"))) == [80.0, 240.0, 400.0, 560.0]
    assert all(0 < x < WIDTH and 0 < y < HEIGHT for x, y in at.values())


def test_the_tree_layout_is_taken_from_what_either_end_of_a_tree_link_reports():
    # the leaves report their parent, the root reports its children, the branches both
    links = [_link(child, parent, "tree", role="parent", direction="out") for child, parent in PARENTS.items()]
    links += [_link("root", "b1", "tree", role="child", direction="in"),
              _link("root", "b2", "tree", role="child", direction="in")]
    dots, lines = layout(_view(NAMES, links))
    y = {d.node.name: d.y for d in dots}
    assert all(y[child] > y[parent] for child, parent in PARENTS.items())
    # one line per tree link, drawn from the parent down to its child
    assert len(lines) == len(PARENTS) and {line.kind for line in lines} == {"tree"}
    assert all(line.y1 < line.y2 and not line.arrow for line in lines)


def test_network_links_are_drawn_apart_from_bridges_once_each_with_an_arrow_when_one_way():
    links = [
        _link("A", "B", "cluster", cc="cc"), _link("B", "A", "cluster", cc="cc"),
        # a one-way connector defined on A: A dialed it, B accepted it; both report it
        _link("A", "C", "network", cc="to-c", direction="out", role="peer"),
        _link("C", "A", "network", cc="to-c", direction="in", role="peer"),
        # a duplex connector defined on C, down
        _link("B", "C", "network", cc="dx", direction="in", duplex=True, role="peer", state="retrying"),
    ]
    dots, lines = layout(_view(["A", "B", "C"], links))
    at = {d.node.name: (d.x, d.y) for d in dots}
    assert sorted(line.kind for line in lines) == ["bridge", "bridge", "network", "network-down"]
    one_way = next(line for line in lines if line.kind == "network")
    assert ((one_way.x1, one_way.y1), (one_way.x2, one_way.y2), one_way.arrow) == (at["A"], at["C"], True)
    duplex = next(line for line in lines if line.kind == "network-down")
    assert ((duplex.x1, duplex.y1), (duplex.x2, duplex.y2), duplex.arrow) == (at["C"], at["B"], False)
    # no tree links: the usual ring, the first node on top
    assert at["A"][1] < at["B"][1] and at["A"][1] < at["C"][1]
