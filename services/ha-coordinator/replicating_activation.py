"""What every replicating node's activation shares, whichever quorum decides
(pluggable on etcd: pluggable_activation.py; classic votes: classic.py): the
hooks runner.py fills in from the two sides of replication (replication_live.py,
replication_backup.py), and what the node tells
clients about its live and its backup."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable


class ReplicatingActivation:
    def __init__(self) -> None:
        self.replicate: Callable[[], Awaitable[int]] | None = None  # the backup's replica runner
        self.live_endpoint: Callable[[], str] = lambda: ""
        self.backup_connector: Callable[[], str] = lambda: ""
        self.backup_changed: asyncio.Event | None = None
        self.connector = ""

    def live(self) -> str:
        return self.live_endpoint()

    def listening_at(self, endpoint: str) -> None:
        self.connector = endpoint

    async def backups(self) -> AsyncIterator[str]:
        told = None
        while True:
            now = self.backup_connector()
            if now != told:
                told = now
                yield now
            if self.backup_changed is None:
                await asyncio.Event().wait()
            self.backup_changed.clear()
            await self.backup_changed.wait()

    async def _replicate(self) -> int:
        """A backup: replicate until the quorum lets it take over; the epoch floor it activates at."""
        assert self.replicate is not None
        return await self.replicate()
