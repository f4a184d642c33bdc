"""Large messages, both ways: bodies received in chunks straight into the
journal, and bodies streamed to a consumer from the journal.

Neither direction holds a whole body in memory. Receiving waits for the
journal every few chunks, which holds the session's stream, so HTTP/2 flow
control paces the producer: the router never holds more than a few chunks of
a large body. Streaming reads a window of chunks at a time and waits while
the session's outgoing buffer is full.

With persistence-enabled: false nothing may be written to the journal, so
the body is held in memory (`ServerMessage.chunks`) and streamed from there;
it counts towards the address's and the node's memory like any message.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from meshmq.errors import BrokerError, Reason
from meshmq.message_limits import MAX_LARGE_BODY_BYTES
from meshmq.security.authorization import Permission
from meshmq.v1 import journal_pb2 as jpb
from meshmq.v1 import messages_pb2 as mpb

from .access import Access
from .broker import Broker
from .duplicates import DuplicateClaim
from .message import Ref, ServerMessage
from .requests import LargeBodyChunk

log = logging.getLogger("meshmq.router.large")

# Chunks received between waits for the journal.
COMMIT_EVERY_CHUNKS = 4
# Chunks read from the journal at a time when streaming a body out.
READ_CHUNKS = 4


@dataclass
class LargeUpload:
    """One large message on its way in. `msg` is None when its header was
    refused: the chunks that follow are read and dropped."""

    producer_id: int
    batch_id: int
    msg: ServerMessage | None
    claim: DuplicateClaim | None
    seq: int = 0
    received: int = 0


@dataclass
class UploadDone:
    """A finished upload: the message to route (error None), or why it was dropped."""

    upload: LargeUpload
    error: BrokerError | None = None


class LargeMessageReceiver:
    """Receives the large message being sent on one session (one at a time)."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.current: LargeUpload | None = None

    def begin(self, producer_id: int, batch_id: int, m: mpb.Message, default_address: str, user: str,
              access: Access | None = None) -> None:
        """Take a large message's header; BrokerError if it is refused, by the
        broker or by `access` (its chunks are then dropped)."""
        if self.current is not None:
            raise BrokerError(Reason.INVALID_REQUEST, "a large message is already being sent on this session")
        try:
            if m.body_size > MAX_LARGE_BODY_BYTES:  # refused now, not after waiting for chunks that never come
                raise BrokerError(Reason.INVALID_REQUEST, f"large message announces a body of {m.body_size} bytes; "
                                                          f"the limit is {MAX_LARGE_BODY_BYTES}")
            if access is not None:
                access.check(Permission.SEND, m.address or default_address)
            msg, claim = self.broker.accept(m, default_address, user)
        except BrokerError:
            self.current = LargeUpload(producer_id, batch_id, None, None)  # swallow its chunks
            raise
        if not self.broker.persistence_enabled:
            msg.chunks = []
        self.current = LargeUpload(producer_id, batch_id, msg, claim)

    async def receive(self, chunk: LargeBodyChunk) -> UploadDone | None:
        """Store one chunk; the outcome once the last chunk is in, None before."""
        up = self.current
        if up is None or up.producer_id != chunk.producer_id or up.batch_id != chunk.batch_id:
            raise BrokerError(Reason.INVALID_REQUEST, "large-message chunk without a large message header")
        if up.msg is None:  # the header was refused; drop the body
            if chunk.last:
                self.current = None
            return None
        broker = self.broker
        in_memory = up.msg.chunks is not None
        if in_memory:
            up.msg.chunks.append(chunk.data)
        else:
            broker.batch().add_large_chunks.add(message_id=up.msg.id, seq=up.seq, data=chunk.data)
        up.seq += 1
        up.received += len(chunk.data)
        if not in_memory and (up.seq % COMMIT_EVERY_CHUNKS == 0 or chunk.last):
            resp = await broker.stored()
            if not resp.ok:
                return self.abort(up, BrokerError(Reason(resp.reason), resp.message))
        if not chunk.last:
            return None
        self.current = None
        if up.received != up.msg.proto.body_size:
            return self.abort(
                up,
                BrokerError(
                    Reason.INVALID_REQUEST,
                    f"large message body was {up.received} bytes, header said {up.msg.proto.body_size}",
                ),
            )
        return UploadDone(up)

    def abort(self, up: LargeUpload, err: BrokerError) -> UploadDone:
        """Drop an upload (refused by the journal, a wrong size, or not routable): its chunks and duplicate id go."""
        self.current = None
        if up.claim is not None:
            self.broker.duplicates.release([up.claim], delete_rows=True)
        self.broker.drop_large_body(up.msg)
        return UploadDone(up, err)

    def discard(self) -> None:
        """The session closed mid-upload: the stored chunks go."""
        if self.current is not None and self.current.msg is not None:
            self.broker.drop_large_body(self.current.msg)
        self.current = None


async def stream_body(
    broker: Broker, ref: Ref, writable: asyncio.Event, is_closed: Callable[[], bool],
    send_chunk: Callable[[bytes, bool], None],
) -> None:
    """Send a large message's body from the journal, a window at a time, while
    the receiver has room (`writable`) and is open."""
    msg = ref.msg
    total, sent, seq = msg.proto.body_size, 0, 0
    while sent < total and not is_closed():
        chunks = await _read_chunks(broker, msg, seq)
        if not chunks:
            raise RuntimeError(f"large message {msg.id} is missing chunks from {seq}")
        for ch in chunks:
            await writable.wait()
            if is_closed():
                return
            sent += len(ch.data)
            seq = ch.seq + 1
            send_chunk(ch.data, sent >= total)


async def _read_chunks(broker: Broker, msg: ServerMessage, seq: int) -> list[jpb.LargeMessageChunk]:
    """The next few chunks of a body from `seq`: from memory, or from the journal."""
    if msg.chunks is not None:
        return [jpb.LargeMessageChunk(seq=i, data=data)
                for i, data in enumerate(msg.chunks[seq:seq + READ_CHUNKS], start=seq)]
    return await broker.journal.read_large(
        jpb.ReadLargeMessageRequest(message_id=msg.id, from_seq=seq, max_chunks=READ_CHUNKS)
    )
