"""Pluggable quorum on etcd: who of a replicating live/backup pair may serve.

Artemis's pluggable quorum keeps, per coordination id, a distributed lock
and an activation sequence in ZooKeeper; meshmq keeps them in etcd (the
manager's `connect-string`), under `<namespace>/<coordination id>/`:

* `live`: held by the serving node, under an etcd lease of `session-ms`
  kept alive every `session-ms * session-percent / 100`. A node that cannot
  keep it alive stops serving; once it lapses, the key is gone.
  `live-connector`, under the same lease: where it serves (a stale primary
  copies the store back from there: failback).
* `activation-sequence`: the epoch of the newest activation. A node
  activates only at sequence + 1, in the same transaction that takes `live`.
* `in-sync-replica`: the instance id of the backup whose copy is complete
  and acknowledged up to every confirmed write. The live sets it once a
  backup's copy is complete, and deletes it — before it confirms anything
  the backup has not acknowledged — when the backup goes.

A backup may take over only if `live` is gone, `in-sync-replica` names it,
and the sequence is the epoch its copy was made at: one transaction checks
all three. A live that was cut off cannot delete `in-sync-replica` once its
own `live` key is gone (the delete is guarded by it) and halts instead, so
nothing is ever confirmed that its successor does not have.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable

from meshmq.config.models import QuorumProperties
from meshmq.discovery.errors import DiscoveryError
from meshmq.discovery.etcd_backend import EtcdBackend

log = logging.getLogger("meshmq.ha")


class QuorumLost(RuntimeError):
    """This node no longer holds `live`: it must stop serving."""


async def keep_alive(refresh: Callable[[], Awaitable[int]], failures: tuple[type[Exception], ...],
                     props: QuorumProperties, description: str) -> None:
    """Keep a lease alive every session-ms x session-percent; raises QuorumLost when it
    lapsed, or could not be renewed for session-ms (`refresh` raising one of `failures`)."""
    period = props.session_ms * props.session_percent / 100 / 1000
    last = time.monotonic()
    while True:
        await asyncio.sleep(period)
        sent = time.monotonic()
        try:
            ttl = await refresh()
        except failures as exc:
            if time.monotonic() - last >= props.session_ms / 1000:
                raise QuorumLost(f"{description}: the lease was not renewed for "
                                 f"{props.session_ms} ms (session-ms): {exc}") from None
            continue
        if ttl <= 0:
            raise QuorumLost(f"{description}: the lease lapsed: another node may serve now")
        last = sent


def activation_refusal(*, holder: str | None, sequence: int, in_sync: str, instance: str,
                       replica_epoch: int | None) -> str | None:
    """Why `instance` may not activate now, or None: it may (pluggable quorum's rule,
    pure). Nobody may hold `live`; a backup (`replica_epoch` set) also needs the
    in-sync mark to name it and its copy to be of the last activation's epoch.
    `EtcdQuorum.activate` checks it first for a reason, then enforces the same in
    one etcd transaction (what another node did in between cannot slip through)."""
    if holder:
        return f"{holder} holds the lock"
    if replica_epoch is not None:
        if replica_epoch != sequence:
            return (f"the copy is of epoch {replica_epoch} and the last activation was {sequence}: "
                    "a node served since, the copy is stale")
        if in_sync != instance:
            return f"the in-sync mark names {in_sync or 'no copy'}, not this one"
    return None


class EtcdQuorum:
    """One node's view of its coordination id in etcd: the router's own (`class-name:
    etcd`), or one call's in the HA coordinator, which shares one `backend` among all."""

    def __init__(self, props: QuorumProperties, coordination_id: str, instance_id: str, *,
                 backend: EtcdBackend | None = None) -> None:
        self.props = props
        self.instance = instance_id
        self._owns_backend = backend is None
        self._backend = backend or EtcdBackend(props.endpoints, key_prefix="/" + props.namespace.strip("/"),
                                               request_timeout_s=props.connection_ms / 1000)
        self.description = f"quorum {self._backend.description}"
        self.lease_id = 0
        self.refusal = ""  # why the last activate() was refused
        self.set_coordination_id(coordination_id)

    def set_coordination_id(self, coordination_id: str) -> None:
        base = f"{namespace_prefix(self.props.namespace)}/{coordination_id}"
        self.coordination_id = coordination_id
        self.live_key = f"{base}/live".encode()
        self.sequence_key = f"{base}/activation-sequence".encode()
        self.replica_key = f"{base}/in-sync-replica".encode()
        self.connector_key = f"{base}/live-connector".encode()

    async def _call(self, what: str, fn, *args, **kwargs):
        """An etcd call, retried `retries` times `retries-ms` apart."""
        for attempt in range(self.props.retries + 1):
            try:
                return await self._backend.call(what, fn, *args, **kwargs)
            except DiscoveryError:
                if attempt == self.props.retries:
                    raise
                await asyncio.sleep(self.props.retries_ms / 1000)

    async def _get(self, key: bytes) -> bytes | None:
        found = await self._call("get", self._backend.client.get, key)
        return found.value if found is not None else None

    async def sequence(self) -> int:
        raw = await self._get(self.sequence_key)
        return int(raw) if raw else 0

    async def live_connector(self) -> str:
        """Where the node holding `live` serves ("" = nobody, or not said)."""
        raw = await self._get(self.connector_key)
        return raw.decode() if raw else ""

    async def holder(self) -> str | None:
        raw = await self._get(self.live_key)
        return raw.decode() if raw else None

    async def in_sync_replica(self) -> str:
        raw = await self._get(self.replica_key)
        return raw.decode() if raw else ""

    async def _grant(self) -> int:
        ttl_s = max(1, math.ceil(self.props.session_ms / 1000))
        lease = await self._call("grant lease", self._backend.client.lease, ttl_s)
        return lease.id

    async def activate(self, *, at_least: int = 0, replica_epoch: int | None = None, connector: str = "") -> int | None:
        """Take `live` and raise the activation sequence, in one transaction.
        A backup passes `replica_epoch`: then it also needs `in-sync-replica` to
        name it and the sequence to be that epoch. Returns the new sequence, or
        None when the conditions do not hold (someone serves, or the copy is stale)."""
        t = self._backend.client.transactions
        current = await self.sequence()
        why = activation_refusal(holder=await self.holder(), sequence=current, instance=self.instance,
                                 in_sync=await self.in_sync_replica() if replica_epoch is not None else "",
                                 replica_epoch=replica_epoch)
        if why is not None:
            self.refusal = why
            return None
        new = max(current + 1, at_least)
        compare = [t.version(self.live_key) == 0, t.value(self.sequence_key) == str(current).encode()
                   if current else t.version(self.sequence_key) == 0]
        if replica_epoch is not None:
            compare.append(t.value(self.replica_key) == self.instance.encode())
        lease = await self._grant()
        ok, _ = await self._call("activate", self._backend.client.transaction, compare=compare, success=[
            t.put(self.live_key, self.instance.encode(), lease),
            t.put(self.connector_key, connector.encode(), lease),
            t.put(self.sequence_key, str(new).encode()),
            t.delete(self.replica_key),
        ], failure=[])
        if not ok:
            await self._backend.revoke_quietly(lease)
            self.refusal = "another node changed the quorum meanwhile"
            return None
        self.lease_id = lease
        log.info("%s: %s holds %s at activation sequence %d", self.description, self.instance,
                 self.live_key.decode(), new)
        return new

    async def _guarded(self, what: str, success: list) -> bool:
        """Run `success` only while this node holds `live`."""
        t = self._backend.client.transactions
        ok, _ = await self._call(what, self._backend.client.transaction,
                                 compare=[t.value(self.live_key) == self.instance.encode()],
                                 success=success, failure=[])
        return bool(ok)

    async def mark_in_sync(self, replica_instance: str) -> bool:
        t = self._backend.client.transactions
        return await self._guarded("mark replica in sync", [t.put(self.replica_key, replica_instance.encode())])

    async def clear_in_sync(self) -> bool:
        """Forget the backup (before confirming a write it has not acknowledged); False: `live` is not ours."""
        t = self._backend.client.transactions
        return await self._guarded("forget replica", [t.delete(self.replica_key)])

    async def keep(self) -> None:
        """Keep `live` alive; raises QuorumLost when it is gone or could not be
        renewed for session-ms."""
        await keep_alive(lambda: self.refresh(self.lease_id), (DiscoveryError,), self.props, self.description)

    async def refresh(self, lease_id: int) -> int:
        """Renew `lease_id` once; its remaining time to live (0: it lapsed)."""
        return await self._backend.keeper.refresh(lease_id)

    async def release(self) -> None:
        if self.lease_id:
            await self._backend.revoke_quietly(self.lease_id)
            self.lease_id = 0

    async def close(self) -> None:
        if self._owns_backend:
            await self._backend.close()


def namespace_prefix(namespace: str) -> str:
    """The etcd key prefix of a manager's `namespace`."""
    return "/" + namespace.strip("/")


async def list_quorums(backend: EtcdBackend, namespace: str) -> dict[str, dict[str, str]]:
    """Every coordination id under `namespace`: {id: {key name: value}} (live,
    live-connector, activation-sequence, in-sync-replica), as etcd holds them now."""
    prefix = namespace_prefix(namespace) + "/"
    listing = await backend.call("list quorums", backend.client.get_prefix, prefix.encode())
    found: dict[str, dict[str, str]] = {}
    for kv in listing:
        coordination_id, _, name = kv.key.decode(errors="replace")[len(prefix):].rpartition("/")
        if coordination_id:
            found.setdefault(coordination_id, {})[name] = kv.value.decode(errors="replace")
    return found
