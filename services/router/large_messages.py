"""A client session's large message on its way in: its header checked and
accepted like any send, then its body taken by the large-body transfer
(large_body.py), then routed by the session.

What the session hands out is an `UploadDone`: the message and its duplicate
claim to route, or why it was dropped (its stored chunks and its duplicate
id then already gone). Bodies going out to a consumer are sent by
`large_body.send_body` (session.py).

The broker is reached through `UploadBroker`, a Protocol, so this module does
not import broker.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from meshmq.errors import BrokerError, Reason
from meshmq.message_limits import MAX_LARGE_BODY_BYTES
from meshmq.v1 import messages_pb2 as mpb

from .access import Access
from .duplicates import DuplicateClaim, DuplicateDetection
from .large_body import BodyReceiver, BodyStore, drop_body
from .message import ServerMessage
from .requests import LargeBodyChunk


class UploadBroker(BodyStore, Protocol):
    """What an upload needs of the broker besides a place for the body."""

    duplicates: DuplicateDetection

    def accept(self, m: mpb.Message, default_address: str, user: str) -> tuple[ServerMessage, DuplicateClaim | None]:
        """Validate and stamp a client message and claim its duplicate id."""


@dataclass
class LargeUpload:
    """One large message on its way in. `msg` (and `body`) is None when its
    header was refused: the chunks that follow are read and dropped."""

    producer_id: int
    batch_id: int
    msg: ServerMessage | None
    claim: DuplicateClaim | None
    body: BodyReceiver | None = None


@dataclass
class UploadDone:
    """A finished upload: the message to route (error None), or why it was dropped."""

    upload: LargeUpload
    error: BrokerError | None = None


class LargeMessageReceiver:
    """Receives the large message being sent on one session (one at a time)."""

    def __init__(self, broker: UploadBroker) -> None:
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
            msg, claim = self.broker.sender.accept(default_address, user, access, m, large=True)
        except BrokerError:
            self.current = LargeUpload(producer_id, batch_id, None, None)  # swallow its chunks
            raise
        self.current = LargeUpload(producer_id, batch_id, msg, claim, BodyReceiver(self.broker, msg))

    async def receive(self, chunk: LargeBodyChunk) -> UploadDone | None:
        """Store one chunk; the outcome once the last chunk is in, None before."""
        up = self.current
        if up is None or up.producer_id != chunk.producer_id or up.batch_id != chunk.batch_id:
            raise BrokerError(Reason.INVALID_REQUEST, "large-message chunk without a large message header")
        if up.body is None:  # the header was refused; drop the body
            if chunk.last:
                self.current = None
            return None
        refused = await up.body.add(chunk.data, chunk.last)
        if refused is not None:
            return self.abort(up, BrokerError(Reason(refused.reason), refused.message))
        if not chunk.last:
            return None
        self.current = None
        wrong_size = up.body.wrong_size()
        if wrong_size is not None:
            return self.abort(up, BrokerError(Reason.INVALID_REQUEST, wrong_size))
        return UploadDone(up)

    def abort(self, up: LargeUpload, err: BrokerError) -> UploadDone:
        """Drop an upload (refused by the journal, a wrong size, or not routable): its chunks and duplicate id go."""
        self.current = None
        if up.claim is not None:
            self.broker.duplicates.release([up.claim], delete_rows=True)
        drop_body(self.broker, up.msg)
        return UploadDone(up, err)

    def discard(self) -> None:
        """The session closed mid-upload: the stored chunks go."""
        if self.current is not None and self.current.body is not None:
            self.current.body.drop()
        self.current = None
