"""ha-policy replication (pluggable quorum on etcd): when a primary or a
backup may serve (the `meshmq.activation.Activation` of a replicating node).

* A **primary** serves once it holds the quorum's `live` key for its
  coordination id (default: its node id), and only with the newest journal:
  if the activation sequence is past its store's epoch, a backup served
  since, and its copy is stale: it copies the store from the node serving
  it (`live-connector`), as that node's backup, and asks it to step down
  once in sync — a backup with `allow-failback` does, and the primary takes
  over (failback); one without goes on serving, with the primary as its backup.
* A **backup** serves once its replica runner (replication_backup.py,
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
from collections.abc import Awaitable, Callable

from meshmq.activation import FAILED_BACK, LEASE_LOST, EpochGrant, granted_from
from meshmq.config.models import BrokerConfig
from meshmq.security.cluster_identity import cluster_prover, node_channel_credentials

from .etcd_quorum import EtcdQuorum, QuorumLost
from .replicating_activation import ReplicatingActivation
from .remote_quorum import RemoteQuorum

log = logging.getLogger("meshmq.ha")


class PluggableActivation(ReplicatingActivation):
    def __init__(self, config: BrokerConfig, local_store: Callable[[], tuple[str, int]]) -> None:
        """`local_store()`: this node's id and its store's epoch (services/embedded.py reads them from the journal's store)."""
        super().__init__()
        rep = config.ha_policy.replication
        assert rep is not None
        self.config = config
        self.primary = rep.primary
        self.instance = f"{config.name}/{uuid.uuid4()}"
        props = rep.manager.properties
        coordination_id = rep.primary.coordination_id if rep.primary and rep.primary.coordination_id else ""
        if rep.manager.class_name == "coordinator":  # the HA coordinator service decides (service.py)
            self.quorum = RemoteQuorum(props, coordination_id, self.instance, cluster_prover(config),
                                       node_channel_credentials(config))
        else:
            self.quorum = EtcdQuorum(props, coordination_id, self.instance)
        self.description = self.quorum.description
        self.passive_start = rep.backup is not None
        # How long a silent stream counts as alive: a renewal period of the quorum lease.
        self.ack_timeout_s = max(0.2, props.session_ms * props.session_percent / 100 / 1000)
        self._local_store = local_store
        self._keeper: asyncio.Task | None = None
        # A stale primary copying the store back (runner.py's replica runner), and a
        # serving backup asked to step down for it.
        self.failback: Callable[[str], Awaitable[int]] | None = None
        self._step_down = asyncio.Event()

    # ------------------------------------------------------------ Activation

    async def acquire(self) -> EpochGrant:
        """Grants an epoch no lower than the quorum's new activation sequence."""
        if self.primary is None:
            floor = await self._replicate()
        else:
            floor = await self._activate_primary()
        self._keeper = asyncio.create_task(self.quorum.keep())
        return granted_from(floor)

    async def _activate_primary(self) -> int:
        node_id, epoch = await asyncio.to_thread(self._local_store)
        if not self.quorum.coordination_id:
            self.quorum.set_coordination_id(node_id)
        said = ""
        while True:
            try:
                sequence = await self.quorum.sequence()
                if sequence > epoch:
                    at = await self.quorum.live_connector()
                    if at and self.failback is not None:
                        log.warning("%s: this node's journal (epoch %d) is older than the last activation (%d): "
                                    "failing back — copying the store from %s, which serves it", self.description,
                                    epoch, sequence, at)
                        return await self.failback(at)
                    why = (f"this node's journal (epoch {epoch}) is older than the last activation "
                           f"({sequence}): a backup served since and nobody serves now; this copy must not "
                           "serve — it waits for the node that served last")
                else:
                    floor = await self.quorum.activate(at_least=epoch + 1, connector=self.connector)
                    if floor is not None:
                        return floor
                    why = f"not activating ({self.quorum.refusal}); waiting"
            except Exception as exc:
                why = f"cannot reach the quorum ({exc}); retrying"
            if why != said:
                log.warning("%s: %s", self.description, why)
                said = why
            await asyncio.sleep(self.ack_timeout_s)

    async def try_take_over(self, coordination_id: str, instance: str, epoch: int, copy_id: str) -> int | None:
        """For the backup's runner: take over if the quorum allows it (the
        in-sync-replica key names the copy's instance; `copy_id` is classic's)."""
        self.quorum.set_coordination_id(coordination_id)
        return await self.quorum.activate(replica_epoch=epoch, connector=self.connector)

    async def held(self) -> str:
        assert self._keeper is not None
        stepping_down = asyncio.create_task(self._step_down.wait())
        try:
            await asyncio.wait([self._keeper, stepping_down], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stepping_down.cancel()
        if self._step_down.is_set():
            return FAILED_BACK
        try:
            self._keeper.result()
        except QuorumLost as exc:
            log.error("%s; stopping", exc)
        return LEASE_LOST

    def step_down(self, asked_by: str) -> None:
        """A serving backup's hook: the primary, back and in sync, asks for its store (allow-failback)."""
        self._step_down.set()

    async def mark_in_sync(self, replica_instance: str) -> bool:
        """The live's hook: its backup's copy is complete (it may take over)."""
        return await self.quorum.mark_in_sync(replica_instance)

    async def forget_copy(self, copy_id: str) -> bool:
        """The live's hook, before it confirms alone: its backup may not take over."""
        return await self.quorum.clear_in_sync()

    async def release(self, *, failover: bool, failback: bool = False) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
            self._keeper = None
        await self.quorum.release()  # an in-sync backup takes over now

    async def close(self) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
        await self.quorum.close()

