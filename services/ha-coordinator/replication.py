"""ha-policy replication (pluggable quorum on etcd): when a primary or a
backup may serve (the `meshmq.activation.Activation` of a replicating node).

* A **primary** serves once it holds the quorum's `live` key for its
  coordination id (default: its node id), and only with the newest journal:
  if the activation sequence is past its store's epoch, a backup served
  since, and this node waits (its copy is stale; start it as a backup).
* A **backup** serves once its replica runner (services/router/replica.py,
  given as `replicate`) has a complete copy and the quorum lets it take over
  (etcd_quorum.py says when).

While serving, the `live` key's lease is kept alive; when it is lost the
node stops serving (LEASE_LOST: exit 3). A normal stop revokes the lease, so
an in-sync backup takes over at once.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

from meshmq.activation import LEASE_LOST
from meshmq.config.models import BrokerConfig

from .etcd_quorum import EtcdQuorum, QuorumLost

log = logging.getLogger("meshmq.ha")


class ReplicationActivation:
    def __init__(self, config: BrokerConfig, local_store: Callable[[], tuple[str, int]]) -> None:
        """`local_store()`: this node's id and its store's epoch (services/embedded.py reads them)."""
        rep = config.ha_policy.replication
        assert rep is not None
        self.config = config
        self.primary = rep.primary
        self.instance = f"{config.name}/{uuid.uuid4()}"
        props = rep.manager.properties
        self.quorum = EtcdQuorum(props, rep.primary.coordination_id if rep.primary and rep.primary.coordination_id
                                 else "", self.instance)
        self.description = self.quorum.description
        self.passive_start = rep.backup is not None
        # How long a silent stream counts as alive: a renewal period of the quorum lease.
        self.ack_timeout_s = max(0.2, props.session_ms * props.session_percent / 100 / 1000)
        self.replicate: Callable[[], Awaitable[int]] | None = None  # the backup's replica runner
        self.live_endpoint: Callable[[], str] = lambda: ""
        self.backup_connector: Callable[[], str] = lambda: ""
        self.backup_changed: asyncio.Event | None = None
        self.connector = ""
        self._local_store = local_store
        self._keeper: asyncio.Task | None = None

    # ------------------------------------------------------------ Activation

    async def acquire(self) -> int:
        if self.primary is None:
            assert self.replicate is not None
            floor = await self.replicate()
        else:
            floor = await self._activate_primary()
        self._keeper = asyncio.create_task(self.quorum.keep())
        return floor

    async def _activate_primary(self) -> int:
        node_id, epoch = await asyncio.to_thread(self._local_store)
        if not self.quorum.coordination_id:
            self.quorum.set_coordination_id(node_id)
        said = ""
        while True:
            try:
                sequence = await self.quorum.sequence()
                if sequence > epoch:
                    why = (f"this node's journal (epoch {epoch}) is older than the last activation "
                           f"({sequence}): a backup served since; this copy must not serve — start the node as a "
                           "backup to copy the live's store")
                else:
                    floor = await self.quorum.activate(at_least=epoch + 1)
                    if floor is not None:
                        return floor
                    why = f"another node holds {self.quorum.live_key.decode()}; waiting"
            except Exception as exc:
                why = f"cannot reach the quorum ({exc}); retrying"
            if why != said:
                log.warning("%s: %s", self.description, why)
                said = why
            await asyncio.sleep(self.ack_timeout_s)

    async def try_take_over(self, coordination_id: str, instance: str, epoch: int) -> int | None:
        """For the backup's runner: take over if the quorum allows it."""
        self.quorum.set_coordination_id(coordination_id)
        return await self.quorum.activate(replica_epoch=epoch)

    async def held(self) -> str:
        assert self._keeper is not None
        try:
            await asyncio.shield(self._keeper)
        except QuorumLost as exc:
            log.error("%s; stopping", exc)
        return LEASE_LOST

    async def release(self, *, failover: bool, failback: bool = False) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
            self._keeper = None
        await self.quorum.release()  # an in-sync backup takes over now

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

    async def close(self) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
        await self.quorum.close()

