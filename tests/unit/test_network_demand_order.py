"""The demand versions a forwarded request waits for (services/router/network/demand_order.py)."""

from __future__ import annotations

import asyncio

from services.router.network.demand_order import DemandVersions


async def test_a_request_waits_until_every_link_from_its_source_brought_the_version():
    v = DemandVersions()
    v.seen("l1", "A", 3)
    v.seen("l2", "A", 5)
    waiting = asyncio.create_task(v.caught_up("A", 5, timeout=5))
    await asyncio.sleep(0)
    assert not waiting.done()  # l1 has brought only 3
    v.seen("l1", "A", 5)
    assert await waiting is True


async def test_no_link_bringing_demand_means_no_wait():
    v = DemandVersions()
    assert await v.caught_up("A", 7, timeout=5) is False
    v.seen("l1", "A", 1)
    waiting = asyncio.create_task(v.caught_up("A", 7, timeout=5))
    await asyncio.sleep(0)
    v.lost("l1", "A")  # the link ended: nothing more can come over it
    assert await waiting is False


async def test_the_wait_is_bounded_and_versions_never_go_back():
    v = DemandVersions()
    v.seen("l1", "A", 4)
    v.seen("l1", "A", 2)  # an older update cannot undo a newer
    assert await v.caught_up("A", 4, timeout=5) is True
    assert await v.caught_up("A", 5, timeout=0.05) is False
