"""Where the console's topology graph draws each node: lives on a circle,
each backup beside its live, bridges as lines between lives. Pure layout,
so the template only draws what this returns."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .views import ClusterView, NodeView

WIDTH, HEIGHT = 640, 420
RADIUS = 150


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
    # "bridge" (solid when connected), "bridge-down", or "backup" (dashed, a live to its backup)
    kind: str
    label: str


def layout(view: ClusterView) -> tuple[list[Dot], list[Line]]:
    lives = [n for n in view.nodes if n.role != "backup" and not n.live]
    backups = [n for n in view.nodes if n not in lives]
    cx, cy = WIDTH / 2, HEIGHT / 2
    dots: dict[str, Dot] = {}
    for i, node in enumerate(lives):
        angle = -math.pi / 2 + 2 * math.pi * i / max(1, len(lives))
        r = 0 if len(lives) == 1 else RADIUS
        dots[node.name] = Dot(node, round(cx + r * math.cos(angle), 1), round(cy + r * math.sin(angle), 1), False)
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
    for br in view.bridges:
        a, z = dots.get(br.node), dots.get(br.target)
        if a is not None and z is not None:
            lines.append(Line(a.x, a.y, z.x, z.y, "bridge" if br.state == "connected" else "bridge-down",
                              f"{br.node} → {br.target}: {br.state}, {br.forwarded} forwarded"))
    return list(dots.values()), lines


def _near(d: Dot, anchor: Dot) -> bool:
    return math.hypot(d.x - anchor.x, d.y - anchor.y) < 160
