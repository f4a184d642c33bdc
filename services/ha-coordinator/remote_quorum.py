"""A router's quorum through the HA coordinator service (`manager: {class-name:
coordinator}`): the same calls as EtcdQuorum, each a gRPC call to the first
coordinator instance in `connect-string` that answers. The lease the
coordinator grants stays alive through whichever instance is reachable, so a
coordinator instance may restart, or die, under a serving router: the router
stops serving only when none renewed its lease for session-ms, as with etcd.

The channels use the node's TLS (that of the acceptor other nodes reach it
at: a coordinator listening with TLS is dialled with TLS, trusting the
cluster's CA), and every call proves cluster membership only after the
coordinator proved its own: a listener posing as the coordinator learns
neither the cluster password nor a proof it could use elsewhere.
"""

from __future__ import annotations

import logging

import grpc

from meshmq.config.models import QuorumProperties
from meshmq.security.cluster_proof import ClusterProver
from meshmq.transport import open_channel
from meshmq.v1 import ha_coordinator_pb2 as hpb
from meshmq.v1 import ha_coordinator_pb2_grpc as hgrpc

from .etcd_quorum import keep_alive

log = logging.getLogger("meshmq.ha")


class CoordinatorUnavailable(RuntimeError):
    """No coordinator instance answered."""


class RemoteQuorum:
    def __init__(self, props: QuorumProperties, coordination_id: str, instance_id: str, prover: ClusterProver,
                 credentials: grpc.ChannelCredentials | None = None) -> None:
        self.props = props
        self.instance = instance_id
        self._prover = prover
        self._channels = [open_channel(endpoint, credentials=credentials) for endpoint in props.endpoints]
        self._stubs = [hgrpc.HaCoordinatorStub(channel) for channel in self._channels]
        self.description = f"quorum through the HA coordinator at {props.connect_string}"
        self.lease_id = 0
        self.refusal = ""  # why the last activate() was refused
        self._answering = ""  # the instance that answered last (a change is logged)
        self.set_coordination_id(coordination_id)

    def set_coordination_id(self, coordination_id: str) -> None:
        self.coordination_id = coordination_id
        self.live_key = f"/{self.props.namespace.strip('/')}/{coordination_id}/live".encode()

    def _key(self) -> hpb.QuorumKey:
        return hpb.QuorumKey(namespace=self.props.namespace, coordination_id=self.coordination_id,
                             instance=self.instance)

    async def _call(self, method: str, request):
        """`method` on the first instance that answers, in connect-string order, with
        `retries` more rounds `retries-ms` apart (the Curator properties' meaning)."""
        import asyncio

        problems = []
        for attempt in range(self.props.retries + 1):
            for stub, channel, endpoint in zip(self._stubs, self._channels, self.props.endpoints):
                timeout = self.props.connection_ms / 1000
                try:
                    metadata = await self._prover.metadata(channel, f"the HA coordinator at {endpoint}",
                                                           timeout_s=timeout)
                    reply = await getattr(stub, method)(request, metadata=metadata, timeout=timeout)
                except grpc.aio.AioRpcError as exc:
                    if exc.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                        raise CoordinatorUnavailable(f"the HA coordinator at {endpoint} refused {method}: "
                                                     f"{exc.code().name}: {exc.details()}") from None
                    problems.append(f"{endpoint}: {exc.details()}")
                    continue
                if endpoint != self._answering:
                    if self._answering:
                        log.info("%s: now answered by %s (%s)", self.description, endpoint, "; ".join(problems)
                                 or f"{self._answering} failed earlier")
                    self._answering = endpoint
                return reply
            if attempt < self.props.retries:
                await asyncio.sleep(self.props.retries_ms / 1000)
        raise CoordinatorUnavailable(f"no HA coordinator answered {method} ({'; '.join(problems[-len(self._stubs):])})")

    async def _state(self) -> hpb.QuorumState:
        return await self._call("GetQuorum", self._key())

    async def sequence(self) -> int:
        return (await self._state()).sequence

    async def live_connector(self) -> str:
        return (await self._state()).live_connector

    async def holder(self) -> str | None:
        return (await self._state()).holder or None

    async def activate(self, *, at_least: int = 0, replica_epoch: int | None = None, connector: str = "") -> int | None:
        request = hpb.QuorumActivateRequest(key=self._key(), at_least=at_least, connector=connector,
                                            session_ms=self.props.session_ms)
        if replica_epoch is not None:
            request.replica_epoch = replica_epoch
        reply = await self._call("Activate", request)
        if not reply.granted:
            self.refusal = reply.refusal
            return None
        self.lease_id = reply.lease_id
        log.info("%s: %s holds %s at activation sequence %d", self.description, self.instance,
                 self.live_key.decode(), reply.sequence)
        return reply.sequence

    async def mark_in_sync(self, replica_instance: str) -> bool:
        return (await self._call("SetInSync", hpb.SetInSyncRequest(key=self._key(),
                                                                   replica_instance=replica_instance))).done

    async def clear_in_sync(self) -> bool:
        return (await self._call("SetInSync", hpb.SetInSyncRequest(key=self._key()))).done

    async def refresh(self, lease_id: int) -> int:
        return (await self._call("KeepAlive", hpb.KeepAliveRequest(lease_id=lease_id))).ttl

    async def keep(self) -> None:
        await keep_alive(lambda: self.refresh(self.lease_id), (CoordinatorUnavailable,), self.props, self.description)

    async def release(self) -> None:
        if self.lease_id:
            try:
                await self._call("Release", hpb.ReleaseRequest(lease_id=self.lease_id))
            except CoordinatorUnavailable as exc:
                log.info("%s: could not release the lease (it lapses after session-ms): %s", self.description, exc)
            self.lease_id = 0

    async def close(self) -> None:
        for channel in self._channels:
            await channel.close()
