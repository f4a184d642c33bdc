"""The HA coordinator as a process of its own (`meshmq serve ha-coordinator`).

Replicating routers whose quorum manager is `class-name: coordinator` ask it
who may serve instead of reaching etcd themselves: it runs the same pluggable
quorum (etcd_quorum.py: the `live` lock under the router's session-ms lease,
the activation sequence that is each activation's epoch, the in-sync replica)
for every group, in the etcd of its own config (`ha-coordinator.etcd`). It
keeps nothing in memory, so several instances may serve one cluster and a
router's lease stays alive through whichever it reaches. Routers need no etcd
credentials; `ListQuorums` shows every group's state in one call.

Hosted inside a router process (`class-name: etcd`), the same code runs there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import grpc

from meshmq.config.models import BrokerConfig, QuorumProperties
from meshmq.discovery.errors import DiscoveryError, DiscoveryUnavailableError
from meshmq.discovery.etcd_backend import EtcdBackend
from meshmq.errors import BrokerError, Reason, abort_with
from meshmq.metrics import Families, serving
from meshmq.runtime import serve_until_signalled
from meshmq.security import cluster_identity
from meshmq.service_registry import Service
from meshmq.transport import add_servicer
from meshmq.v1 import ha_coordinator_pb2 as hpb
from meshmq.v1 import ha_coordinator_pb2_grpc as hgrpc

from .etcd_quorum import EtcdQuorum, list_quorums

log = logging.getLogger("meshmq.ha")

# A lease no router names a time to live for lasts Artemis's session-ms default.
_DEFAULT = QuorumProperties(connect_string="127.0.0.1:2379")


class HaCoordinatorServicer(hgrpc.HaCoordinatorServicer):
    def __init__(self, backend: EtcdBackend) -> None:
        self._backend = backend
        # For the metrics (fill_metrics): what this instance answered since it started.
        self.activations = {"granted": 0, "refused": 0}
        self.keep_alives = 0
        self.releases = 0
        # The last epoch (activation sequence) this instance granted, by (namespace, coordination id).
        self.epochs: dict[tuple[str, str], int] = {}

    def fill_metrics(self, fam: Families) -> None:
        """The HA coordinator's metrics (meshmq.metrics: run at scrape time, on this loop)."""
        for result, n in self.activations.items():
            fam.counter("meshmq_ha_activations_total", "Activation requests this instance answered, by result "
                        "(granted: the caller may serve, at a new epoch).", n, result=result)
        fam.counter("meshmq_ha_lease_keep_alives_total", "Lease keep-alives this instance passed to etcd.",
                    self.keep_alives)
        fam.counter("meshmq_ha_lease_releases_total", "Leases released through this instance.", self.releases)
        fam.declare_gauge("meshmq_ha_activation_epoch", "The last epoch (activation sequence) this instance "
                          "granted, per quorum group.", "namespace", "coordination_id")
        for (namespace, cid), epoch in sorted(self.epochs.items()):
            fam.gauge("meshmq_ha_activation_epoch", "", epoch, namespace=namespace, coordination_id=cid)

    def _quorum(self, key: hpb.QuorumKey, session_ms: int = 0) -> EtcdQuorum:
        if not key.namespace.strip("/") or not key.coordination_id or "/" in key.coordination_id:
            raise BrokerError(Reason.INVALID_REQUEST, "a quorum key needs a namespace and a coordination_id "
                                                      f"without '/' (got {key.namespace!r}, {key.coordination_id!r})")
        props = _DEFAULT.model_copy(update={"namespace": key.namespace,
                                            "session_ms": session_ms or _DEFAULT.session_ms})
        return EtcdQuorum(props, key.coordination_id, key.instance, backend=self._backend)

    async def _answer(self, context: grpc.aio.ServicerContext, call: Callable):
        try:
            return await call()
        except BrokerError as exc:
            await abort_with(context, exc)
        except DiscoveryUnavailableError as exc:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        except DiscoveryError as exc:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))

    async def GetQuorum(self, request: hpb.QuorumKey, context) -> hpb.QuorumState:
        async def call():
            q = self._quorum(request)
            return hpb.QuorumState(coordination_id=q.coordination_id, sequence=await q.sequence(),
                                   holder=await q.holder() or "", live_connector=await q.live_connector(),
                                   in_sync_replica=await q.in_sync_replica())
        return await self._answer(context, call)

    async def Activate(self, request: hpb.QuorumActivateRequest, context) -> hpb.QuorumActivateReply:
        async def call():
            if not request.key.instance:
                raise BrokerError(Reason.INVALID_REQUEST, "Activate needs the caller's instance id")
            q = self._quorum(request.key, request.session_ms)
            replica_epoch = request.replica_epoch if request.HasField("replica_epoch") else None
            sequence = await q.activate(at_least=request.at_least, replica_epoch=replica_epoch,
                                        connector=request.connector)
            if sequence is None:
                self.activations["refused"] += 1
                return hpb.QuorumActivateReply(granted=False, refusal=q.refusal)
            self.activations["granted"] += 1
            self.epochs[request.key.namespace, q.coordination_id] = sequence
            return hpb.QuorumActivateReply(granted=True, sequence=sequence, lease_id=q.lease_id)
        return await self._answer(context, call)

    async def SetInSync(self, request: hpb.SetInSyncRequest, context) -> hpb.SetInSyncReply:
        async def call():
            q = self._quorum(request.key)
            done = (await q.mark_in_sync(request.replica_instance) if request.replica_instance
                    else await q.clear_in_sync())
            return hpb.SetInSyncReply(done=done)
        return await self._answer(context, call)

    async def KeepAlive(self, request: hpb.KeepAliveRequest, context) -> hpb.KeepAliveReply:
        async def call():
            ttl = await self._backend.keeper.refresh(request.lease_id)
            self.keep_alives += 1
            return hpb.KeepAliveReply(ttl=ttl)
        return await self._answer(context, call)

    async def Release(self, request: hpb.ReleaseRequest, context) -> hpb.ReleaseReply:
        async def call():
            await self._backend.revoke_quietly(request.lease_id)
            self.releases += 1
            return hpb.ReleaseReply()
        return await self._answer(context, call)

    async def ListQuorums(self, request: hpb.ListQuorumsRequest, context) -> hpb.ListQuorumsReply:
        async def call():
            if not request.namespace.strip("/"):
                raise BrokerError(Reason.INVALID_REQUEST, "ListQuorums needs a namespace")
            found = await list_quorums(self._backend, request.namespace)
            return hpb.ListQuorumsReply(quorums=[
                hpb.QuorumState(coordination_id=cid, sequence=int(keys.get("activation-sequence") or 0),
                                holder=keys.get("live", ""), live_connector=keys.get("live-connector", ""),
                                in_sync_replica=keys.get("in-sync-replica", ""))
                for cid, keys in sorted(found.items())])
        return await self._answer(context, call)


async def run_ha_coordinator(
    config: BrokerConfig, *, ready_file: str | None = None, on_ready: Callable[[dict], None] | None = None
) -> None:
    """The HA coordinator on ha-coordinator.listen, keeping quorums in ha-coordinator.etcd."""
    cluster_identity.check_service_start(config, "ha-coordinator", log)
    settings = config.ha_coordinator
    backend = EtcdBackend(settings.etcd.endpoints, username=settings.etcd.username, password=settings.etcd.password)
    try:
        await backend.check(10)
        servicer = HaCoordinatorServicer(backend)
        async with serving(config.metrics, service="ha-coordinator", node=config.name) as metrics:
            metrics.put("ha-coordinator", servicer.fill_metrics)
            # Leases are not revoked at the stop: their routers are alive and keep them through another instance.
            await serve_until_signalled(
                settings.listen, "ha-coordinator",
                lambda server: add_servicer(server, servicer, hpb.DESCRIPTOR.services_by_name["HaCoordinator"]),
                cluster_identity.server_interceptors(config, "ha-coordinator"), {"backend": backend.description},
                ready_file=ready_file, on_ready=on_ready, grace_s=1, detail=backend.description, metrics=metrics)
    finally:
        await backend.close()

HA_COORDINATOR = Service(
    name="ha-coordinator",
    summary="The HA coordinator alone (pluggable quorum for replicating routers), on ha-coordinator.listen.",
    run=run_ha_coordinator,
    ready_line=lambda info: f"meshmq ha-coordinator listening on {', '.join(info['endpoints'])} ({info['backend']})",
)
