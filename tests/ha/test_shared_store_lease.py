"""The shared store's lease row on a real PostgreSQL, driven in process: a live
that froze in the middle of a renewal must not keep its backup out."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text

from meshmq.config.loader import load_config_text
from services.ha_coordinator.shared_store import SharedStoreLease

pytestmark = pytest.mark.integration


def lease(pg_url: str, name: str, role: str) -> SharedStoreLease:
    return SharedStoreLease(load_config_text(
        f"name: {name}\njournal: {{url: '{pg_url}', jdbc-lock-renew-period: 250, jdbc-lock-expiration: 1500}}\n"
        f"ha-policy: {{shared-store: {{{role}: {{}}}}}}\n"))


async def test_a_live_frozen_between_its_renewals_update_and_commit_does_not_keep_the_backup_out(pg_url):
    live = lease(pg_url, "live", "master")
    await asyncio.wait_for(live.acquire(), 10)
    await live._stop_keeping()  # frozen: no more renewals...
    # ...in the middle of one, on its own connection: the row updated (locked), the COMMIT never sent.
    stuck = live._engine.connect()
    stuck.begin()
    stuck.execute(text("UPDATE meshmq_ha_lease SET expires_at = expires_at WHERE name = 'live'"))
    backup = lease(pg_url, "backup", "slave")
    try:
        # PostgreSQL ends the stuck session after half the expiration; then the lease has lapsed.
        epoch = await asyncio.wait_for(backup.acquire(), 10)
        assert epoch == 2  # the live activated at 1
    finally:
        stuck.invalidate()
        stuck.close()
        await backup.close()
        await live.close()
