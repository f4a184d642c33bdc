"""`Announcer`: keeps one node in the topology for as long as it runs.

Separate from the transports: the same join, keep-alive, re-announce and
leave cycle runs over a `DiscoveryCore` hosted in the node's process or over
the discovery service's gRPC stream.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

from meshmq.aio import wait_for
from meshmq.v1 import discovery_pb2 as dpb

from .api import DiscoveryAPI, Membership
from .errors import DiscoveryError, DiscoveryUnavailableError
from .retry import Backoff
from .timing import BROADCAST_PERIOD_MS, INITIAL_WAIT_TIMEOUT_MS, REFRESH_TIMEOUT_MS, REQUEST_TIMEOUT_S

log = logging.getLogger("meshmq.discovery")


class Announcer:
    """Keeps one node in the topology for as long as it runs.

    `start()` joins (retrying with backoff for at most initial-wait-timeout
    while discovery is unreachable), then a keep-alive goes out every
    broadcast-period. While discovery is unreachable the keep-alives retry
    with backoff capped at broadcast-period, so the node is back within one
    broadcast-period of discovery's return; if etcd lost the lease meanwhile,
    the node is announced again. `stop()` leaves: the node is removed at once.
    A kill -9 stops the keep-alives: the node vanishes refresh-timeout after
    the last one.
    """

    def __init__(self, api: DiscoveryAPI, node: dpb.ClusterNode, *, broadcast_period_ms: int = BROADCAST_PERIOD_MS,
                 refresh_timeout_ms: int = REFRESH_TIMEOUT_MS,
                 initial_wait_timeout_ms: int = INITIAL_WAIT_TIMEOUT_MS) -> None:
        self.api = api
        self._node = dpb.ClusterNode()
        self._node.CopyFrom(node)
        if not self._node.instance_id:
            self._node.instance_id = uuid.uuid4().hex
        if not self._node.announced_at_ms:
            self._node.announced_at_ms = int(time.time() * 1000)
        self.broadcast_period_ms = broadcast_period_ms
        self.refresh_timeout_ms = refresh_timeout_ms
        self.initial_wait_timeout_ms = initial_wait_timeout_ms
        self.lease_ttl_ms = 0
        self._membership: Membership | None = None
        self._lock = asyncio.Lock()
        self._task: asyncio.Task | None = None
        self._lost: asyncio.Future | None = None

    @property
    def node(self) -> dpb.ClusterNode:
        return self._node

    def _join(self) -> dpb.AnnounceRequest.Join:
        return dpb.AnnounceRequest.Join(
            node=self._node, broadcast_period_ms=self.broadcast_period_ms, refresh_timeout_ms=self.refresh_timeout_ms
        )

    async def start(self) -> None:
        deadline = time.monotonic() + self.initial_wait_timeout_ms / 1000
        retry = Backoff(cap_s=self.broadcast_period_ms / 1000)
        while True:
            try:
                self._membership = await self.api.announce(self._join())
                break
            except DiscoveryUnavailableError as exc:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise DiscoveryUnavailableError(
                        f"cannot announce node {self._node.node_id}: {exc} (gave up after "
                        f"initial-wait-timeout, {self.initial_wait_timeout_ms} ms)"
                    ) from None
                await asyncio.sleep(min(retry.next(), remaining))
        self.lease_ttl_ms = self._membership.lease_ttl_ms
        self._lost = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._keep_alive_loop())
        log.info(
            "announced node %s (%s) at %s in cluster %s via %s: keep-alive every %d ms, lease %d ms",
            self._node.node_id, self._node.node_name, self._node.connector, self._node.cluster_name,
            self.api.description, self.broadcast_period_ms, self.lease_ttl_ms,
        )

    async def _keep_alive_loop(self) -> None:
        period = self.broadcast_period_ms / 1000
        retry = Backoff(cap_s=period)
        next_at = time.monotonic() + period
        while True:
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            try:
                async with self._lock:
                    await self._membership.keep_alive()
                retry.reset()
                next_at += period
                if next_at < time.monotonic():  # we were away: no burst of catch-up keep-alives
                    next_at = time.monotonic() + period
            except DiscoveryUnavailableError:
                next_at = time.monotonic() + retry.next()  # logged once per outage by the transport
            except DiscoveryError as exc:
                log.error("node %s lost its announcement for good: %s", self._node.node_id, exc)
                if not self._lost.done():
                    self._lost.set_exception(exc)
                return
            except Exception:
                log.exception("keep-alive of node %s failed", self._node.node_id)
                next_at = time.monotonic() + retry.next()

    async def update(self, **fields) -> None:
        """Change the announcement (e.g. backup_connector=..., role=...): watchers get NODE_UPDATED."""
        node = dpb.ClusterNode()
        node.CopyFrom(self._node)
        for name, value in fields.items():
            setattr(node, name, value)
        async with self._lock:
            await self._membership.update(node)
        self._node = node

    async def wait(self) -> None:
        """Returns after stop(); raises the error (e.g. NodeIdInUseError) if the
        announcement is lost for good; never returns otherwise."""
        await asyncio.shield(self._lost)

    async def stop(self) -> None:
        """Leave the topology now (graceful stop). If discovery is unreachable the
        node vanishes refresh-timeout after its last keep-alive instead."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        if self._membership is None:
            return
        membership, self._membership = self._membership, None
        try:
            async with self._lock:
                await wait_for(membership.leave(), REQUEST_TIMEOUT_S)
            log.info("node %s left cluster %s", self._node.node_id, self._node.cluster_name)
        except (DiscoveryError, TimeoutError) as exc:
            log.warning(
                "node %s could not leave (%s); it vanishes within refresh-timeout (%d ms)",
                self._node.node_id, exc, self.refresh_timeout_ms,
            )
        if self._lost is not None and not self._lost.done():
            self._lost.set_result(None)

    async def __aenter__(self) -> Announcer:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.stop()
