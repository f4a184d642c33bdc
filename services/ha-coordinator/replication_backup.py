"""Replication by streamed writes, the backup's side (ha-policy replication backup).

A backup serves nothing. It attaches to a live (its cluster connection's
static connectors, in order), installs the copy of the live's store the live
sends as its own SQLite journal (the one it had is kept as
`oldreplica.N`, at most `max-saved-replicated-journals-size` of them), then
applies every write the live streams, in order, and acknowledges each once
it is committed: the live confirms nothing the backup does not have.

When the stream ends, the backup asks the quorum to let it take over
(`try_activate`): that succeeds only once the live's lock has lapsed, if the
live had marked this backup in sync and nothing was activated since. Until
then it tries the lives again. A backup whose copy is not complete never
activates on its own data.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc

from meshmq.aio import wait_for
from meshmq.activation import StaleCopy
from meshmq.config.defaults import HA_MAX_SAVED_REPLICATED_JOURNALS_SIZE
from meshmq.config.models import BrokerConfig
from meshmq.v1 import replication_pb2 as rpb
from meshmq.v1 import replication_pb2_grpc as rgrpc

log = logging.getLogger("meshmq.ha")


class ReplicaRunner:
    def __init__(self, config: BrokerConfig, *, identity, instance_id: str, connector: Callable[[], str],
                 ack_timeout_s: float, try_activate: Callable[[str, str, int, str], Awaitable[int | None]],
                 open_store: Callable[[Path, str], object], lives: list[str] | None = None,
                 failback: bool = False) -> None:
        """`identity`: how this node opens calls to a live (the router's link identity:
        TLS and the cluster credential); `open_store(path, node_id)`: the journal store on
        the installed copy, applying writes and checkpointing its WAL (both given by
        services/embedded.py, from the router and the journal).
        `lives`: where to copy from (default: the cluster connection's lives);
        `failback`: the original live copying its store back from the node that took
        it over, which it asks to step down once in sync."""
        rep = config.ha_policy.replication
        role = rep.backup_role or rep.live_role
        self.config = config
        self.instance_id = instance_id
        self._group = role.group_name or ""
        self._keep = getattr(role, "max_saved_replicated_journals_size", HA_MAX_SAVED_REPLICATED_JOURNALS_SIZE)
        self._lives = config.replication_lives if lives is None else lives
        self._failback = failback
        self._identity = identity
        self._connector = connector
        self._ack_timeout = ack_timeout_s
        self._try_activate = try_activate
        self._open_store = open_store
        self._path = config.journal_file()
        # The live being replicated, and the copy: (coordination id, epoch, copy id) once installed.
        self.live = ""
        self._copy: tuple[str, int, str] | None = None

    async def run(self) -> int:
        """Replicate until this backup may take over; the epoch floor it activates at."""
        retry = min(1.0, self._ack_timeout)
        while True:
            for endpoint in self._lives:
                await self._replicate_from(endpoint)
                floor = await self._take_over()
                if floor is not None:
                    return floor
            await asyncio.sleep(retry)

    async def _take_over(self) -> int | None:
        if self._copy is None:
            return None
        coordination_id, epoch, copy_id = self._copy
        try:
            floor = await self._try_activate(coordination_id, self.instance_id, epoch, copy_id)
        except StaleCopy:
            self._copy = None
            return None
        except Exception as exc:
            log.warning("replication: cannot ask the quorum whether to take over (%s)", exc)
            return None
        if floor is not None:
            log.info("replication: taking over from %s at epoch %d", self.live or "the live", floor)
        return floor

    async def _replicate_from(self, endpoint: str) -> None:
        channel = self._identity.open(endpoint)
        try:
            call = rgrpc.ReplicationStub(channel).Attach(metadata=await self._identity.metadata(channel, endpoint))
            await call.write(rpb.ReplicaMessage(hello=rpb.ReplicaHello(
                node_name=self.config.name, instance_id=self.instance_id, group_name=self._group,
                connector=self._connector())))
            first = await wait_for(call.read(), self._ack_timeout * 4)
            if first is grpc.aio.EOF or first.WhichOneof("kind") != "welcome":
                return
            welcome = first.welcome
            self.live = endpoint
            # A new copy begins: the live unmarked the former one before welcoming us, so it may not serve.
            self._copy = None
            log.info("replication: attached to %s (node %s); copying its store", endpoint, welcome.node_id)
            await self._follow(call, welcome)
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.UNIMPLEMENTED:
                log.debug("replication: %s replicates to no backup", endpoint)
            elif exc.code() != grpc.StatusCode.UNAVAILABLE:
                log.warning("replication: %s refused this backup: %s", endpoint, exc.details())
        except (TimeoutError, asyncio.TimeoutError):
            log.warning("replication: %s went silent", endpoint)
        except Exception as exc:
            log.warning("replication: the stream from %s broke: %s", endpoint, exc)
        finally:
            await channel.close()

    async def _follow(self, call, welcome: rpb.PrimaryWelcome) -> None:
        chunks: list[bytes] = []
        store = None
        pending: asyncio.Queue[rpb.ReplicatedAppend | None] = asyncio.Queue()
        applier: asyncio.Task | None = None
        # Reads go through a queue: a read cancelled by a timeout would end the stream.
        inbox: asyncio.Queue = asyncio.Queue()

        async def pump() -> None:
            try:
                while (item := await call.read()) is not grpc.aio.EOF:
                    inbox.put_nowait(item)
                inbox.put_nowait(grpc.aio.EOF)
            except Exception as exc:
                inbox.put_nowait(exc)

        pumping = asyncio.create_task(pump())
        try:
            while True:
                msg = await wait_for(inbox.get(), self._ack_timeout)  # the live pings when idle
                if isinstance(msg, Exception):
                    raise msg
                if msg is grpc.aio.EOF:
                    log.warning("replication: the live closed the stream")
                    return
                kind = msg.WhichOneof("kind")
                if kind == "snapshot":
                    chunks.append(msg.snapshot.data)
                    if msg.snapshot.last:
                        store = await asyncio.to_thread(self._install, b"".join(chunks), welcome.node_id)
                        chunks = []
                        self._copy = (welcome.coordination_id, msg.snapshot.epoch, welcome.copy_id)
                        await call.write(rpb.ReplicaMessage(ack=rpb.ReplicaAck(sequence=0)))
                        log.info("replication: copy installed (epoch %d); following the live's writes",
                                 msg.snapshot.epoch)
                        if self._failback:
                            log.info("replication: failback: asking %s to step down", self.live)
                            await call.write(rpb.ReplicaMessage(failback=rpb.ReplicaFailback()))
                        applier = asyncio.create_task(self._apply(store, pending, call))
                elif kind == "append":
                    pending.put_nowait(msg.append)
                if applier is not None and applier.done():
                    applier.result()  # a write that could not be applied ends the stream
        finally:
            pumping.cancel()
            if applier is not None:
                # Let the write being applied finish (a thread cannot be cancelled) before the store closes.
                pending.put_nowait(None)
                try:
                    await applier
                except Exception:
                    pass
            if store is not None:
                await asyncio.to_thread(store.close)

    async def _apply(self, store, pending: asyncio.Queue, call) -> None:
        """Apply the streamed writes in order, as many as have arrived in one
        transaction, and acknowledge them once committed."""
        while True:
            first = await pending.get()
            if first is None:  # the stream ended
                return
            batch = [first]
            while not pending.empty():
                nxt = pending.get_nowait()
                if nxt is None:
                    pending.put_nowait(None)
                    break
                batch.append(nxt)
            responses = await asyncio.to_thread(store.apply, [a.request for a in batch])
            refused = [r for r in responses if not r.ok]
            if refused:
                self._copy = None  # a copy that missed a write must never serve
                raise RuntimeError(f"a replicated write was refused ({refused[0].reason}: {refused[0].message}); "
                                   "the copy is dropped and taken again")
            await call.write(rpb.ReplicaMessage(ack=rpb.ReplicaAck(sequence=batch[-1].sequence)))

    def _install(self, data: bytes, node_id: str):
        """The copy becomes this node's journal; the former one is kept as oldreplica.N."""
        self._save_former()
        tmp = self._path.with_suffix(".copy")
        tmp.write_bytes(data)
        tmp.replace(self._path)
        return self._open_store(self._path, node_id)

    def _save_former(self) -> None:
        files = [p for p in (self._path, self._path.with_name(self._path.name + "-wal"),
                             self._path.with_name(self._path.name + "-shm")) if p.exists()]
        if not files:
            return
        directory = self._path.parent
        numbers = sorted(int(p.name.split(".")[1]) for p in directory.glob("oldreplica.*")
                         if p.name.split(".")[1].isdigit())
        if self._keep != 0:
            target = directory / f"oldreplica.{(numbers[-1] + 1) if numbers else 1}"
            target.mkdir()
            for f in files:
                shutil.move(str(f), target / f.name)
            numbers.append(int(target.name.split(".")[1]))
        else:
            for f in files:
                f.unlink()
        if self._keep >= 0:
            for n in numbers[:max(0, len(numbers) - self._keep)]:
                shutil.rmtree(directory / f"oldreplica.{n}", ignore_errors=True)
