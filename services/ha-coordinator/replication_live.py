"""Replication by streamed writes, the live's side (ha-policy replication primary).

`ReplicatingJournal` stands between the router and its journal (it is the
`JournalAPI` the router is given) and serves `Replication.Attach` to one
backup at a time:

1. The backup says hello. The live holds new writes back, waits for the ones
   in flight to commit, copies its SQLite store as it is then (one read of the
   file, bounded by `initial-replication-sync-timeout`) and lets the writes
   go again: the copy is exactly the writes before the pause, and every write
   after it is streamed, numbered, in order.
2. From the copy on, a write is confirmed to the router (and so to a
   producer) only once the local commit is done *and* the backup has
   acknowledged it: the backup has it on disk. Once the backup has
   acknowledged the copy, the live marks it in sync in the quorum (etcd):
   from then on it may take over.
3. When the backup goes (stream closed, or no acknowledgement for a write
   within the ack timeout), the live — before it confirms the first write
   the backup lacks, or takes another backup — makes that copy ineligible
   (unmarks it in etcd, or declares it stale to the lives for classic votes)
   and halts if it cannot, because then it is not the live any more. A live
   that stops confirms nothing more, so its backup's copy stays good: a
   normal stop lets the backup take over with it.
4. Failback (classic replication): a replica may ask the live to step down
   once in sync (the original live taking its place back); a slave with
   allow-failback does (`on_failback`).

The journal's store is the node's own SQLite file (checked at config load).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc

from meshmq.aio import wait_for
from meshmq.errors import BrokerError, Reason, abort_with
from meshmq.journal_client import JournalAPI
from meshmq.transport import read_hello
from meshmq.v1 import journal_pb2 as jpb
from meshmq.v1 import replication_pb2 as rpb
from meshmq.v1 import replication_pb2_grpc as rgrpc

log = logging.getLogger("meshmq.ha")

SNAPSHOT_CHUNK = 1 << 20


class _Replica:
    """The attached backup: what was sent to it and not acknowledged yet."""

    def __init__(self, hello: rpb.ReplicaHello, clock: Callable[[], float] = time.monotonic) -> None:
        self.hello = hello
        self._clock = clock
        self.copy_id = uuid.uuid4().hex  # this copy of the store (classic votes refuse a stale one)
        self.out: asyncio.Queue[rpb.PrimaryMessage | None] = asyncio.Queue()
        self.sequence = 0  # the last write sent
        self.waiting: dict[int, asyncio.Future[bool]] = {}  # sequence -> acknowledged (True) or lost (False)
        # Since when (monotonic s) something waits with no acknowledgement: the first
        # write sent while nothing waited, or the last acknowledgement.
        self.waiting_since = 0.0
        self.in_sync = False
        self.copy_sent = False  # every chunk of the copy written to the stream
        self.lost = False

    def send(self, req: jpb.AppendRequest) -> asyncio.Future[bool]:
        if not self.waiting:
            self.waiting_since = self._clock()
        self.sequence += 1
        fut = asyncio.get_running_loop().create_future()
        self.waiting[self.sequence] = fut
        self.out.put_nowait(rpb.PrimaryMessage(append=rpb.ReplicatedAppend(sequence=self.sequence, request=req)))
        return fut

    def acknowledged(self, sequence: int) -> None:
        for seq in [s for s in self.waiting if s <= sequence]:
            fut = self.waiting.pop(seq)
            if not fut.done():
                fut.set_result(True)
        self.waiting_since = self._clock()

    def overdue(self, timeout_s: float) -> bool:
        """Something has waited `timeout_s` with no acknowledgement at all: the
        backup is gone (or too slow to follow). Measured from when the wait
        began, not from the backup's last message: after a quiet spell, a
        write sent just now is not overdue."""
        return bool(self.waiting) and self._clock() - self.waiting_since >= timeout_s

    def drop(self) -> None:
        self.lost = True
        for fut in self.waiting.values():
            if not fut.done():
                fut.set_result(False)
        self.waiting.clear()
        self.out.put_nowait(None)


class ReplicatingJournal(rgrpc.ReplicationServicer):
    def __init__(self, inner: JournalAPI, sqlite_path: Path, *, node_name: str, group_name: str | None,
                 sync_timeout_ms: int, ack_timeout_s: float,
                 mark_in_sync: Callable[[str], Awaitable[bool]], forget_replica: Callable[[str], Awaitable[bool]],
                 coordination_id: Callable[[], str], on_fenced: Callable[[str], None],
                 pairing_refusal: Callable[[str, str, str, str], str | None],
                 on_failback: Callable[[str], None] | None = None) -> None:
        self.inner = inner
        self.description = inner.description
        self._path = sqlite_path
        self._node_name = node_name
        self._group = group_name or ""
        self._sync_timeout = sync_timeout_ms / 1000
        self._ack_timeout = ack_timeout_s
        self._mark_in_sync = mark_in_sync
        self._forget_replica = forget_replica
        self._coordination_id = coordination_id
        self._on_fenced = on_fenced
        self._on_failback = on_failback
        # Whether this live takes a backup (the group-name rule: backup_pairing.py).
        self._pairing_refusal = pairing_refusal
        self._stepping_down = False
        # The copy of the last in-sync backup that went: made ineligible before a write it lacks is confirmed.
        self._lost_copy: str | None = None
        self.node_id = ""
        self._replica: _Replica | None = None
        self._paused: list[tuple[jpb.AppendRequest, asyncio.Future]] | None = None
        self._in_flight: set[asyncio.Future] = set()
        self._forgetting: asyncio.Task | None = None
        # Set when the node stops: a write waiting for the quorum's notice is then answered unconfirmed.
        self._stopping = asyncio.Event()
        self._attaching = False  # a backup's copy is being taken: another backup waits its turn
        # Where the in-sync backup will serve ("" = none): the live names it to clients.
        self.backup_connector = ""
        self.backup_changed = asyncio.Event()

    # ------------------------------------------------------------ JournalAPI

    async def open(self, req: jpb.OpenRequest) -> jpb.OpenResponse:
        resp = await self.inner.open(req)
        self.node_id = resp.node_id
        return resp

    async def activate(self, req: jpb.ActivateRequest) -> jpb.ActivateResponse:
        return await self.inner.activate(req)

    def load(self, req: jpb.LoadRequest):
        return self.inner.load(req)

    async def read_large(self, req):
        return await self.inner.read_large(req)

    async def read_page(self, req):
        return await self.inner.read_page(req)

    def stop_confirming(self) -> None:
        """The node is stopping (JournalAPI): writes waiting for the lost backup's
        copy to be made ineligible are answered unconfirmed, so the stop does not
        wait for lives that may be stopping too (a whole cluster shut down)."""
        self._stopping.set()
        self.inner.stop_confirming()

    async def close(self) -> None:
        if self._replica is not None:
            self._replica.drop()
        await self.inner.close()

    def append(self, req: jpb.AppendRequest) -> asyncio.Future[jpb.AppendResponse]:
        out: asyncio.Future[jpb.AppendResponse] = asyncio.get_running_loop().create_future()
        if self._paused is not None:  # a copy for a backup is being taken: after it
            self._paused.append((req, out))
        else:
            self._submit(req, out)
        return out

    def _submit(self, req: jpb.AppendRequest, out: asyncio.Future) -> None:
        local = self.inner.append(req)
        self._in_flight.add(local)
        local.add_done_callback(self._in_flight.discard)
        replica = self._replica
        acked = replica.send(req) if replica is not None and not replica.lost else None
        asyncio.ensure_future(self._complete(local, acked, out))

    async def _complete(self, local: asyncio.Future, acked: asyncio.Future[bool] | None,
                        out: asyncio.Future) -> None:
        resp = await local
        if resp.ok:
            # Confirmed only if the backup has it, or once the backup it went
            # without is unmarked in the quorum (so that it never takes over
            # without this write); not the live any more, nothing is confirmed.
            have = await acked if acked is not None else None
            # Stepping down for failback, nothing is confirmed to a client any more once the
            # replica's stream is gone (the server has stopped): its copy stays eligible.
            forgetting = self._start_forgetting() if have is not True and not self._stepping_down else None
            forgotten = None if forgetting is None else await self._unless_stopping(forgetting)
            if forgotten is False:
                resp = jpb.AppendResponse(request_id=resp.request_id, ok=False, reason=Reason.FENCED.value,
                                          message="this node is not the live any more: its quorum lock is gone")
            elif forgetting is not None and forgotten is None:
                resp = jpb.AppendResponse(request_id=resp.request_id, ok=False, reason=Reason.NOT_ACTIVE.value,
                                          message="not confirmed: the node stopped before enough lives held its "
                                                  "lost backup's copy stale (the write stays in its store)")
        if not out.done():
            out.set_result(resp)

    async def _unless_stopping(self, forgetting: asyncio.Future[bool]) -> bool | None:
        """`forgetting`'s outcome, or None once the node stops first."""
        if not forgetting.done():
            stopping = asyncio.ensure_future(self._stopping.wait())
            try:
                await asyncio.wait((forgetting, stopping), return_when=asyncio.FIRST_COMPLETED)
            finally:
                stopping.cancel()
        return forgetting.result() if forgetting.done() else None

    def _start_forgetting(self) -> asyncio.Future[bool] | None:
        """Make the lost backup's copy ineligible, once (None: no backup was lost)."""
        if self._forgetting is None and self._lost_copy is not None:
            self._forgetting = asyncio.ensure_future(self._forget(self._lost_copy))
        return self._forgetting

    async def _forget(self, copy_id: str) -> bool:
        try:
            ok = await self._forget_replica(copy_id)
        except Exception as exc:
            log.error("replication: could not unmark the backup in the quorum (%s); stopping", exc)
            ok = False
        if not ok:
            self._on_fenced("the quorum lock is gone: another node may be the live")
        return ok

    # ------------------------------------------------------------ the backup's stream

    async def Attach(self, request_iterator, context: grpc.aio.ServicerContext):
        # A copy of the store holds every message: the router admitted only a caller with the
        # cluster credential (ClusterIdentityCheck, services/router/server.py).
        opened = await read_hello(request_iterator, context, "a backup's stream")
        if opened is None:
            return
        it, hello = opened
        if self._attaching:
            busy = "another backup, copying the store now"
        elif self._replica is not None and not self._replica.lost:
            busy = self._replica.hello.node_name
        else:
            busy = ""
        why = self._pairing_refusal(self._node_name, self._group, hello.group_name, busy)
        if why is not None:
            # NOT_ACTIVE: the backup tries the next live (a group mismatch never changes, busy may).
            await abort_with(context, BrokerError(Reason.NOT_ACTIVE if busy else Reason.INVALID_REQUEST, why))
            return
        self._attaching = True  # until the copy is taken: a second backup is refused meanwhile
        try:
            forgetting = self._start_forgetting()
            if forgetting is not None and not await asyncio.shield(forgetting):
                await abort_with(context, BrokerError(Reason.NOT_ACTIVE, f"node {self._node_name} is not the "
                                                      "live any more"))
                return
            # The former backup's copy is ineligible (or there was none): writes wait for the new one only.
            self._forgetting = None
            self._lost_copy = None
            replica = _Replica(hello)
            await context.write(rpb.PrimaryMessage(welcome=rpb.PrimaryWelcome(
                node_id=self.node_id, node_name=self._node_name, coordination_id=self._coordination_id(),
                copy_id=replica.copy_id)))
            snapshot, epoch = await self._copy(replica)
        except (TimeoutError, asyncio.TimeoutError):
            log.error("replication: copying the store for %s took longer than initial-replication-sync-timeout "
                      "(%.0f s); the backup is not attached", hello.node_name, self._sync_timeout)
            await abort_with(context, BrokerError(Reason.NOT_ACTIVE, "the copy took longer than "
                                                  "initial-replication-sync-timeout"))
            return
        finally:
            self._attaching = False
        log.info("replication: %s attached; copied the store (%d bytes, epoch %d)", hello.node_name,
                 len(snapshot), epoch)
        reader = asyncio.create_task(self._read_acks(it, replica))
        try:
            for i in range(0, max(len(snapshot), 1), SNAPSHOT_CHUNK):
                last = i + SNAPSHOT_CHUNK >= len(snapshot)
                # From the last chunk on, the backup may hold the whole copy (a broken write may still arrive).
                replica.copy_sent = replica.copy_sent or last
                await context.write(rpb.PrimaryMessage(snapshot=rpb.SnapshotChunk(
                    data=snapshot[i:i + SNAPSHOT_CHUNK], last=last, epoch=epoch if last else 0)))
            del snapshot
            while True:
                try:
                    msg = await wait_for(replica.out.get(), self._ack_timeout / 2)
                except (TimeoutError, asyncio.TimeoutError):
                    msg = rpb.PrimaryMessage(ping=rpb.ReplicationPing())
                if msg is None:
                    break
                await context.write(msg)
        except Exception as exc:
            log.warning("replication: the stream to %s broke: %s", hello.node_name, exc)
        finally:
            reader.cancel()
            self._lose(replica, "its stream ended")

    async def _copy(self, replica: _Replica) -> tuple[bytes, int]:
        """The store as it is between two writes; writes after it go to `replica`."""
        self._paused = []
        try:
            if self._in_flight:
                await wait_for(asyncio.gather(*self._in_flight, return_exceptions=True), self._sync_timeout)
            snapshot, epoch = await wait_for(asyncio.to_thread(_read_store, self._path), self._sync_timeout)
            self._replica = replica
        finally:
            paused, self._paused = self._paused, None
            for req, out in paused:
                self._submit(req, out)
        return snapshot, epoch

    async def _read_acks(self, it, replica: _Replica) -> None:
        # Reads go through a queue: a read cancelled by a timeout would end the stream.
        inbox: asyncio.Queue = asyncio.Queue()

        async def pump() -> None:
            try:
                async for msg in it:
                    inbox.put_nowait(msg)
                inbox.put_nowait(StopAsyncIteration())
            except Exception as exc:
                inbox.put_nowait(exc)

        pumping = asyncio.create_task(pump())
        try:
            while True:
                try:
                    msg = await wait_for(inbox.get(), self._ack_timeout / 4)
                except (TimeoutError, asyncio.TimeoutError):
                    if replica.overdue(self._ack_timeout):
                        self._lose(replica, f"no acknowledgement for {self._ack_timeout:.1f} s")
                        return
                    continue
                if isinstance(msg, StopAsyncIteration):
                    self._lose(replica, "it closed its stream")
                    return
                if isinstance(msg, Exception):
                    self._lose(replica, f"its stream broke ({msg})")
                    return
                kind = msg.WhichOneof("kind")
                if kind == "failback":
                    self._failback_asked(replica)
                    continue
                if kind != "ack":
                    continue
                if msg.ack.sequence == 0 and not replica.in_sync:
                    replica.in_sync = await self._mark_in_sync(replica.hello.instance_id)
                    if not replica.in_sync:
                        self._on_fenced("the quorum lock is gone: another node may be the live")
                        self._lose(replica, "this node is not the live any more")
                        return
                    log.info("replication: %s is in sync (it may take over from now on)", replica.hello.node_name)
                    self.backup_connector = replica.hello.connector
                    self.backup_changed.set()
                replica.acknowledged(msg.ack.sequence)
        except Exception as exc:
            self._lose(replica, f"its stream broke ({exc})")
        finally:
            pumping.cancel()

    def _lose(self, replica: _Replica, why: str) -> None:
        if replica.lost:
            return
        log.warning("replication: backup %s lost: %s; this node goes on alone", replica.hello.node_name, why)
        replica.drop()
        if self._replica is replica:
            self._replica = None
        if replica.in_sync:
            self.backup_connector = ""
            self.backup_changed.set()
        if replica.copy_sent:
            # The backup may hold the whole copy (in sync or about to say so): the
            # first write it lacks waits for this before it is confirmed (_complete).
            self._lost_copy = replica.copy_id

    def _failback_asked(self, replica: _Replica) -> None:
        if not replica.in_sync:
            log.warning("replication: %s asked for failback before its copy was in sync; ignored",
                        replica.hello.node_name)
        elif self._on_failback is None:
            log.warning("replication: %s asked for failback (it is the original live); this node does not "
                        "allow failback (allow-failback false, or it is the master) and goes on serving",
                        replica.hello.node_name)
        else:
            log.warning("replication: %s, in sync, asked for failback: stepping down so that it serves again",
                        replica.hello.node_name)
            self._stepping_down = True
            self._on_failback(replica.hello.node_name)


def _read_store(path: Path) -> tuple[bytes, int]:
    """The whole SQLite store as one consistent copy (its epoch with it)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        con.execute("BEGIN")
        (epoch,) = con.execute("SELECT value FROM node_state WHERE key = 'epoch'").fetchone()
        data = con.serialize()
        con.execute("COMMIT")
        return data, int(epoch)
    finally:
        con.close()
