"""Where the console's topology graph draws each node: lives on a circle,
each backup beside its live, links as lines between lives. When the links
are tree-connector links the lives are drawn as a tree instead: the root on
top, each branch below its parent, the leaves at the bottom. Pure layout,
so the template only draws what this returns."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from meshmq.link_kinds import CHILD, DIALED, NETWORK, PARENT, TREE

from .views import BridgeView, ClusterView, NodeView

WIDTH, HEIGHT = 640, 420
RADIUS = 150
MARGIN = 50  # from the top and bottom edge to the first and last level of a tree


@dataclass(frozen=True)
class Dot:
    node: NodeView
    x: float
    y: float
    backup: bool


@dataclass(frozen=True)
class Line:
    x1: float
    y1: float
    x2: float
    y2: float
    # "bridge" (a cluster bridge, solid), "network" (dashed) or "tree" (a tree
    # link, parent to child), each with "-down" while not connected; or "backup"
    # (dotted, a live to its backup)
    kind: str
    label: str
    # One-way: messages flow from (x1, y1) to (x2, y2) only (a network
    # connector without duplex, from the node that defines it).
    arrow: bool = False


def ring_positions(names: list[str]) -> dict[str, tuple[float, float]]:
    """`names` on a circle around the centre, the first on top (one alone: the centre)."""
    cx, cy = WIDTH / 2, HEIGHT / 2
    r = 0 if len(names) == 1 else RADIUS
    out = {}
    for i, name in enumerate(names):
        angle = -math.pi / 2 + 2 * math.pi * i / max(1, len(names))
        out[name] = (round(cx + r * math.cos(angle), 1), round(cy + r * math.sin(angle), 1))
    return out


def tree_parents(links: Iterable[BridgeView]) -> dict[str, str]:
    """child -> parent from tree links, as either end reports them (the
    child's link has role "parent", the parent's role "child")."""
    parents: dict[str, str] = {}
    for link in links:
        if link.kind != TREE:
            continue
        if link.role == PARENT:
            parents[link.node] = link.target
        elif link.role == CHILD:
            parents.setdefault(link.target, link.node)
    return parents


def tree_positions(names: list[str], parents: dict[str, str]) -> dict[str, tuple[float, float]]:
    """`names` as a tree by `parents` (child -> parent): a node without a
    parent among `names` is a root, on the top level; each child one level
    below its parent; the leaves spread evenly across the width, in the order
    of `names`, and each parent centred over its children."""
    known = set(names)
    children: dict[str, list[str]] = {n: [] for n in names}
    for name in names:
        parent = parents.get(name)
        if parent in known and parent != name:
            children[parent].append(name)
    roots = [n for n in names if parents.get(n) not in known or parents.get(n) == n]
    level: dict[str, int] = {}
    order: list[str] = []  # depth first, so each subtree's leaves sit side by side

    def visit(name: str, depth: int) -> None:
        if name in level:  # a cycle in what the nodes reported: drawn once
            return
        level[name] = depth
        order.append(name)
        for child in children[name]:
            visit(child, depth + 1)
    for root in roots:
        visit(root, 0)
    for name in names:  # only in a cycle: on top, like a root
        visit(name, 0)
    leaves = [n for n in order if not any(level[c] == level[n] + 1 for c in children[n])]
    step = WIDTH / max(1, len(leaves))
    x = {leaf: round(step * (i + 0.5), 1) for i, leaf in enumerate(leaves)}
    for name in sorted(order, key=lambda n: -level[n]):  # deepest first: children placed before parents
        if name not in x:
            below = [x[c] for c in children[name] if level[c] == level[name] + 1]
            x[name] = round(sum(below) / len(below), 1)
    depth = max(level.values(), default=0)
    gap = (HEIGHT - 2 * MARGIN) / max(1, depth)
    return {n: (x[n], round(MARGIN + gap * level[n], 1)) for n in names}


def link_lines(links: Iterable[BridgeView], dots: dict[str, Dot]) -> list[Line]:
    """One line per link: a cluster bridge each way as reported; a network or
    tree link once, though both its ends report it (the dialing end's record
    preferred), a tree link drawn from the parent down to the child."""
    seen: set[tuple] = set()
    lines: list[Line] = []
    ordered = sorted(links, key=lambda link: link.direction != DIALED)  # dialed records first
    for link in ordered:
        a, z = dots.get(link.node), dots.get(link.target)
        if a is None or z is None:
            continue
        state = f"{link.state}, {link.forwarded} forwarded"
        if link.kind in (NETWORK, TREE):
            key = (link.kind, link.cluster_connection, frozenset((link.node, link.target)))
            if key in seen:
                continue
            seen.add(key)
        if link.kind == TREE:
            parent, child = (z, a) if link.role == PARENT else (a, z)
            lines.append(Line(parent.x, parent.y, child.x, child.y, _kind(TREE, link.state),
                              f"{parent.node.name} → {child.node.name} (tree): {state}"))
        elif link.kind == NETWORK:
            # a one-way connector carries messages from the node that dialed it
            src, dst = (a, z) if link.direction == DIALED else (z, a)
            lines.append(Line(src.x, src.y, dst.x, dst.y, _kind(NETWORK, link.state),
                              f"{src.node.name} {'↔' if link.duplex else '→'} {dst.node.name} "
                              f"(network connector {link.cluster_connection}): {state}", arrow=not link.duplex))
        else:
            lines.append(Line(a.x, a.y, z.x, z.y, _kind("bridge", link.state),
                              f"{link.node} → {link.target}: {state}"))
    return lines


def _kind(kind: str, state: str) -> str:
    return kind if state == "connected" else f"{kind}-down"


def layout(view: ClusterView) -> tuple[list[Dot], list[Line]]:
    lives = [n for n in view.nodes if n.role != "backup" and not n.live]
    backups = [n for n in view.nodes if n not in lives]
    cx, cy = WIDTH / 2, HEIGHT / 2
    names = [n.name for n in lives]
    parents = tree_parents(view.bridges)
    places = tree_positions(names, parents) if parents else ring_positions(names)
    dots: dict[str, Dot] = {node.name: Dot(node, *places[node.name], False) for node in lives}
    lines: list[Line] = []
    groups = {g.live: g for g in view.ha_groups}
    unplaced = []
    for b in backups:
        live = next((name for name, g in groups.items() if b.name in g.backups), None)
        if live is None or live not in dots:
            unplaced.append(b)
            continue
        anchor = dots[live]
        k = sum(1 for d in dots.values() if d.backup and _near(d, anchor))
        dx, dy = anchor.x - cx, anchor.y - cy
        norm = math.hypot(dx, dy) or 1.0
        x = anchor.x + 70 * dx / norm + 40 * k
        y = anchor.y + 70 * dy / norm + (70 if norm == 1.0 else 0)
        dots[b.name] = Dot(b, round(x, 1), round(y, 1), True)
        lines.append(Line(anchor.x, anchor.y, dots[b.name].x, dots[b.name].y, "backup",
                          "in sync" if groups[live].in_sync else "not in sync"))
    for i, b in enumerate(unplaced):
        dots[b.name] = Dot(b, 60 + 90 * i, HEIGHT - 30, True)
    lines.extend(link_lines(view.bridges, dots))
    return list(dots.values()), lines


def _near(d: Dot, anchor: Dot) -> bool:
    return math.hypot(d.x - anchor.x, d.y - anchor.y) < 160
