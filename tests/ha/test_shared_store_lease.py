"""A shared store on a real PostgreSQL, driven in process: a live that froze in
the middle of a transaction — a lease renewal, or a journal write holding the
epoch row — must not keep its backup out."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from meshmq.config.loader import load_config_text
from meshmq.config.models import BrokerConfig
from services.ha_coordinator.shared_store import SharedStoreLease
from meshmq.errors import Reason
from services.journal.store import JournalStore
from tests.integration.test_journal_epoch import stored

pytestmark = pytest.mark.integration


def node_config(pg_url: str, name: str, role: str) -> BrokerConfig:
    return load_config_text(
        f"name: {name}\njournal: {{url: '{pg_url}', jdbc-lock-renew-period: 250, jdbc-lock-expiration: 1500}}\n"
        f"ha-policy: {{shared-store: {{{role}: {{}}}}}}\n")


def lease(pg_url: str, name: str, role: str) -> SharedStoreLease:
    return SharedStoreLease(node_config(pg_url, name, role))


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
        grant = await asyncio.wait_for(backup.acquire(), 10)
        assert grant(0) == 2  # the live activated at 1: the lease's activation sequence is the floor
    finally:
        stuck.invalidate()
        stuck.close()
        await backup.close()
        await live.close()


async def test_a_live_frozen_inside_a_journal_write_does_not_keep_the_backup_from_activating(pg_url):
    config = node_config(pg_url, "live", "master")
    # The live's journal writer, as open_core configures it, activated at epoch 1.
    writer = JournalStore(pg_url, stuck_transaction_ms=config.journal.stuck_transaction_timeout)
    writer.open("live")
    writer.activate(1)
    # Frozen in the middle of a group commit: the epoch row read FOR SHARE (the
    # fence every write takes), the rest of the transaction never sent.
    stuck = writer.engine.connect()
    stuck.begin()
    stuck.exec_driver_sql(writer._sql["check_epoch"][0])
    backup = JournalStore(pg_url)  # the backup's reads and activation, on the same store
    backup.open("backup")
    try:
        # The activation updates the epoch row: it waits until PostgreSQL ends the
        # stuck session, half the lease's expiration later.
        assert await asyncio.wait_for(asyncio.to_thread(backup.activate, 2), 10) == 2
        # The resumed live's transaction is gone...
        with pytest.raises(DBAPIError, match="idle-in-transaction timeout"):
            stuck.exec_driver_sql("SELECT 1")
        (refused,) = writer.apply([stored(1, 1)])  # ...and its next write is fenced
        assert not refused.ok and refused.reason == Reason.FENCED.value
    finally:
        stuck.invalidate()
        stuck.close()
        writer.engine.dispose()
        backup.engine.dispose()
