"""A node of a network stopping, on real router processes: it ends the
links it accepted at once, so its gRPC server stops without waiting out the
grace period for them, and the dialing peer sees the link close and retries."""

from __future__ import annotations

import asyncio
import re

import pytest

from tests.fixtures.nodes import eventually

from .network import link_states, start_network, wait_linked

pytestmark = pytest.mark.integration

# The router's server stop grace (services/router/server.py): streams still open then are cancelled.
GRACE_S = 2.0
STOPPED = re.compile(r"gRPC server stopped in ([0-9.]+)s")


async def test_the_accepting_node_ends_its_links_when_it_stops(nodes):
    net = start_network(nodes, {"A": {"to-b": "B"}, "B": {}})
    await wait_linked(net["A"], 1)
    assert await asyncio.to_thread(net["B"].stop) == 0
    # Timed inside B (the process's own start-up and exit under a loaded machine are not the point):
    # a link left open would hold the server for the whole grace.
    [took] = [float(m.group(1)) for m in STOPPED.finditer(net["B"].log_path.read_text())]
    assert took < GRACE_S / 2, f"B's server waited {took}s for streams to end"

    async def retrying() -> bool:
        return [link.state for link in await link_states(net["A"])] == ["retrying"]
    await eventually(retrying, 10, "A's link to retry")
