"""The console draws a tree of tree connectors as a tree: a gateway in front
of real routers (a root, two branches, a leaf under each) serves the tree's
links over REST and the topology graph with the root on top, each branch
below it and each leaf below its branch, every link a tree link from parent
down to child."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.fixtures.nodes import ServiceProcess, eventually

from .network import start_tree, wait_linked

pytestmark = pytest.mark.integration

TREE = {"root": None, "b1": "root", "b2": "root", "l1": "b1", "l2": "b2"}
DOT = re.compile(r'<g class="node (\w+) live" data-node="([^"]+)">\s*<circle cx="([\d.]+)" cy="([\d.]+)"')
LINE = re.compile(r'<line class="([\w-]+)" x1="([\d.]+)" y1="([\d.]+)" x2="([\d.]+)" y2="([\d.]+)"')


def gateway_yaml(routers: dict[str, ServiceProcess]) -> str:
    """A gateway showing `routers` (static connectors, by name), in dev mode (admin/admin: the routers run
    without security)."""
    connectors = "\n".join(f"  {name}: {proc.endpoint}" for name, proc in routers.items())
    return f"""
name: gateway
connectors:
{connectors}
gateway:
  listen: {{host: 127.0.0.1, port: 0}}
  static-connectors: [{", ".join(routers)}]
  dev-mode: true
"""


def console_login(base: str) -> httpx.Client:
    browser = httpx.Client(base_url=base, timeout=30)
    token = re.search(r'name="csrf_token" value="([^"]+)"', browser.get("/login").text).group(1)
    r = browser.post("/login", data={"username": "admin", "password": "admin", "csrf_token": token, "next": "/"})
    assert r.status_code == 303 and r.headers["location"] == "/", r.text
    return browser


async def test_the_console_draws_a_tree_with_the_root_on_top_and_the_leaves_at_the_bottom(nodes, tmp_path):
    net, _ = start_tree(nodes, TREE)
    for name, count in (("root", 2), ("b1", 2), ("b2", 2), ("l1", 1), ("l2", 1)):
        await wait_linked(net[name], count)
    gateway = ServiceProcess(tmp_path, "gateway", "gateway", gateway_yaml(net))
    nodes.started.append(gateway)
    gateway.start()

    browser = console_login(gateway.endpoint)
    try:
        # REST: each tree link as both its ends hold it, the child's with role "parent".
        cluster = browser.get("/api/v1/cluster").json()
        parents = {b["node"]: b["target"] for b in cluster["bridges"] if b["kind"] == "tree" and b["role"] == "parent"}
        assert parents == {child: parent for child, parent in TREE.items() if parent}
        assert {b["state"] for b in cluster["bridges"]} == {"connected"}

        def drawn() -> tuple[dict, list] | None:
            svg = browser.get("/console/fragments/topology").text
            dots = {name: (float(x), float(y)) for state, name, x, y in DOT.findall(svg) if state == "up"}
            lines = [(kind, *map(float, xy)) for kind, *xy in LINE.findall(svg)]
            return (dots, lines) if len(dots) == len(TREE) else None
        dots, lines = await eventually(drawn, 20, "the graph to show the five nodes up")
    finally:
        browser.close()

    y = {name: dots[name][1] for name in TREE}
    assert y["root"] < y["b1"] == y["b2"] < y["l1"] == y["l2"], y
    # Each leaf under its own branch (on the same side of the root), the branches on either side of it.
    assert dots["b1"][0] < dots["root"][0] < dots["b2"][0]
    assert dots["l1"][0] == dots["b1"][0] and dots["l2"][0] == dots["b2"][0]
    # One tree line per link, drawn from the parent down to the child; nothing else.
    expected = sorted(("tree", *dots[parent], *dots[child]) for child, parent in TREE.items() if parent)
    assert sorted(lines) == expected
