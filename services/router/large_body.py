"""The large-body transfer: one body in, in chunks straight into the journal,
and one body out, read from the journal a window at a time — whatever carries
the chunks (a client session, a cluster link).

Neither direction holds a whole body in memory. Receiving waits for the
journal every few chunks, which holds the caller's stream, so HTTP/2 flow
control paces the sender: the router never holds more than a few chunks of a
large body. Sending reads `READ_CHUNKS` chunks at a time and hands each to the
caller's `write`, which waits for room however its stream does.

With persistence-enabled: false nothing may be written to the journal, so
the body is held in memory (`ServerMessage.chunks`) and sent from there; it
counts towards the address's and the node's memory like any message.

What the transfer needs of the broker is `BodyStore`, a Protocol, so that
this module, and every carrier built on it, stays below the broker in the
import graph.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from meshmq.journal_client import JournalAPI
from meshmq.v1 import journal_pb2 as jpb

from .message import ServerMessage

# Chunks received between waits for the journal.
COMMIT_EVERY_CHUNKS = 4
# Chunks read from the journal at a time when sending a body out.
READ_CHUNKS = 4


class BodyStore(Protocol):
    """Where large bodies are kept: the broker's journal batch, or memory."""

    persistence_enabled: bool
    journal: JournalAPI

    def batch(self) -> jpb.AppendRequest:
        """The journal batch being filled this loop turn."""

    def stored(self) -> Awaitable[jpb.AppendResponse]:
        """Resolves once everything added to the batch so far is committed."""


def drop_body(store: BodyStore, msg: ServerMessage) -> None:
    """A large message's body is no longer needed: its stored chunks go
    (in memory, when persistence is disabled, they simply go with it)."""
    if msg.chunks is None and store.persistence_enabled:
        store.batch().delete_large_messages.append(msg.id)
    msg.chunks = None


def copy_body(store: BodyStore, src: ServerMessage, copy: ServerMessage) -> None:
    """`copy` (a forwarded, dead-lettered or expired message) gets `src`'s body."""
    if src.chunks is not None:
        copy.chunks = src.chunks  # never changed once received: shared
    else:
        store.batch().copy_large_messages.add(from_message_id=src.id, to_message_id=copy.id)


class BodyReceiver:
    """One large body on its way in, chunk by chunk, for `msg` (a message
    already given its id): into the journal, or into `msg.chunks` when
    persistence is disabled."""

    def __init__(self, store: BodyStore, msg: ServerMessage) -> None:
        self.store = store
        self.msg = msg
        self.seq = 0
        self.received = 0
        if not store.persistence_enabled:
            msg.chunks = []

    async def add(self, data: bytes, last: bool) -> jpb.AppendResponse | None:
        """Store one chunk. Every `COMMIT_EVERY_CHUNKS` chunks, and at the
        last, wait for the journal (this is what paces the sender); its
        answer when it refused the commit, None otherwise."""
        msg = self.msg
        in_memory = msg.chunks is not None
        if in_memory:
            msg.chunks.append(data)
        else:
            self.store.batch().add_large_chunks.add(message_id=msg.id, seq=self.seq, data=data)
        self.seq += 1
        self.received += len(data)
        if not in_memory and (self.seq % COMMIT_EVERY_CHUNKS == 0 or last):
            resp = await self.store.stored()
            if not resp.ok:
                return resp
        return None

    def wrong_size(self) -> str | None:
        """Once the last chunk is in: why the body does not match the size its
        header announced, or None when it does."""
        announced = self.msg.proto.body_size
        if self.received != announced:
            return f"large message body was {self.received} bytes, header said {announced}"
        return None

    def drop(self) -> None:
        """The body will not be routed: what was stored of it goes."""
        drop_body(self.store, self.msg)


# Sends one chunk (`last`: it ends the body) and says whether to go on: False
# when the receiver went away.
WriteChunk = Callable[[bytes, bool], Awaitable[bool]]


async def send_body(store: BodyStore, msg: ServerMessage, write: WriteChunk) -> None:
    """Send a large message's body, a window of chunks at a time, until it
    is all written or `write` says to stop. RuntimeError when the store is
    missing chunks."""
    total, sent, seq = msg.proto.body_size, 0, 0
    while sent < total:
        chunks = await _read_chunks(store, msg, seq)
        if not chunks:
            raise RuntimeError(f"large message {msg.id} is missing chunks from {seq}")
        for ch in chunks:
            sent += len(ch.data)
            seq = ch.seq + 1
            if not await write(ch.data, sent >= total):
                return


async def send_bytes(body: bytes, piece_size: int, write: WriteChunk) -> None:
    """Send an ordinary message's body as a large one's (a link sends a message
    over its min-large-message-size so): in pieces of `piece_size`, an empty
    body as one empty last chunk."""
    pieces = [body[i:i + piece_size] for i in range(0, len(body), piece_size)] or [b""]
    for i, data in enumerate(pieces):
        if not await write(data, i == len(pieces) - 1):
            return


async def _read_chunks(store: BodyStore, msg: ServerMessage, seq: int) -> list[jpb.LargeMessageChunk]:
    """The next `READ_CHUNKS` chunks of a body from `seq`: from memory, or from the journal."""
    if msg.chunks is not None:
        return [jpb.LargeMessageChunk(seq=i, data=data)
                for i, data in enumerate(msg.chunks[seq:seq + READ_CHUNKS], start=seq)]
    return await store.journal.read_large(
        jpb.ReadLargeMessageRequest(message_id=msg.id, from_seq=seq, max_chunks=READ_CHUNKS)
    )
