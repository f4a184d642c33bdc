"""OfferedVersions (services/router/cluster/bindings_order.py): a forwarded
request waits for its source's bindings snapshot, and only as long as it must."""

from __future__ import annotations

import asyncio

from services.router.cluster.bindings_order import OfferedVersions


async def test_caught_up_at_once_when_the_snapshot_is_new_enough():
    v = OfferedVersions()
    v.seen("A", 7)
    assert await v.caught_up("A", 7, timeout=0.01)
    assert await v.caught_up("A", 3, timeout=0.01)


async def test_waits_for_the_snapshot_that_brings_the_version():
    v = OfferedVersions()
    v.seen("A", 1)
    waiting = asyncio.create_task(v.caught_up("A", 3, timeout=5))
    await asyncio.sleep(0)
    v.seen("A", 2)
    await asyncio.sleep(0)
    assert not waiting.done()
    v.seen("A", 3)
    assert await waiting


async def test_gives_up_after_the_timeout_or_without_a_link():
    v = OfferedVersions()
    assert not await v.caught_up("A", 1, timeout=5)  # no link to A: nothing to wait for
    v.seen("A", 1)
    assert not await v.caught_up("A", 2, timeout=0.05)
    waiting = asyncio.create_task(v.caught_up("A", 2, timeout=5))
    await asyncio.sleep(0)
    v.lost("A")  # the link ended: the batch is taken as before
    assert not await waiting


async def test_a_new_link_starts_again_from_its_first_snapshot():
    v = OfferedVersions()
    v.seen("A", 50)
    v.seen("A", 2)  # A restarted: its counter began again
    assert not await v.caught_up("A", 3, timeout=0.01)
    assert await v.caught_up("A", 2, timeout=0.01)
