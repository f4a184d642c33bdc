"""Client session requests as the router's own types, converted once at the edge.

The gRPC servicer turns each `SessionRequest` into one of these commands and
the session works only with them, so nothing inside the router depends on the
wire format's oneof layout. Message payloads (`meshmq.v1.Message`) are kept as
they arrived: they are what the journal stores and what consumers receive, and
rebuilding them would cost a copy per message on the hot path.

Values a command cannot mean anything with (a window size of -5, routing
type 77, no credit at all) are refused here with `InvalidCommand`: reason
INVALID_REQUEST, naming the value and the producer or consumer it was for,
answered as a SessionError. The session goes on; only an undecodable frame
(meshmq/transport.py) or a first request that is not `open` ends it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from meshmq.config.defaults import MAX_WINDOW_SIZE
from meshmq.errors import BrokerError, Reason
from meshmq.v1 import broker_pb2 as bpb
from meshmq.v1 import messages_pb2 as mpb

# The routing types a consumer may name for a queue it creates (0: the default, anycast).
_ROUTING_TYPES = frozenset(mpb.RoutingType.values())


class InvalidCommand(BrokerError):
    """A request the session refuses (INVALID_REQUEST), answered with the
    producer or consumer id it named so the client's pending call fails with it."""

    def __init__(self, message: str, *, producer_id: int = 0, consumer_id: int = 0) -> None:
        super().__init__(Reason.INVALID_REQUEST, message)
        self.producer_id = producer_id
        self.consumer_id = consumer_id


def _check_window(what: str, size: int, zero: str, **ids: int) -> None:
    """A window size is -1 (no limit), 0 (`zero`) or 1..MAX_WINDOW_SIZE bytes."""
    if not -1 <= size <= MAX_WINDOW_SIZE:
        raise InvalidCommand(f"{what} window_size {size} is out of range: -1 (no limit), 0 ({zero}) or "
                             f"1..{MAX_WINDOW_SIZE} bytes", **ids)


@dataclass(frozen=True, slots=True)
class OpenSession:
    client_id: str
    transacted: bool
    protocol_version: int  # the client's (1: one that sent none)
    connection_id: str = ""  # the client connection it belongs to ("": one of its own)


@dataclass(frozen=True, slots=True)
class CreateProducer:
    producer_id: int
    address: str
    window_size: int = 0  # producer credits announced by the client (0: none)


@dataclass(frozen=True, slots=True)
class CloseProducer:
    producer_id: int


@dataclass(frozen=True, slots=True)
class SendMessages:
    producer_id: int
    batch_id: int
    messages: Sequence[mpb.Message]


@dataclass(frozen=True, slots=True)
class LargeBodyChunk:
    """One piece of a large message's body, after its header was sent alone in a batch."""

    producer_id: int
    batch_id: int
    data: bytes
    last: bool


@dataclass(frozen=True, slots=True)
class CreateConsumer:
    consumer_id: int
    queue: str
    address: str
    subscription: str
    filter: str
    window_size: int
    routing_type: int
    # A named subscription (subscriptions.py): shared by several consumers; durable (the default).
    shared: bool = False
    durable: bool = True
    # With `queue`: a new temporary queue of the session (JMS createTemporaryQueue).
    temporary: bool = False


@dataclass(frozen=True, slots=True)
class CloseConsumer:
    consumer_id: int
    # Deliveries after this one were never handed to the application (None: unknown, all count).
    last_handed: int | None = None
    # Moving to another node: keep the handed ones for their acks (until the session ends).
    keep_handed: bool = False
    # Protocol 4: answer ConsumerClosed once it is done (the client's close blocks on it).
    answer: bool = False


@dataclass(frozen=True, slots=True)
class GrantCredits:
    consumer_id: int
    credits: int


@dataclass(frozen=True, slots=True)
class Acknowledge:
    consumer_id: int
    delivery_ids: Sequence[int]


@dataclass(frozen=True, slots=True)
class Reject:
    """Deliveries handed back unacknowledged (the client's nack)."""

    consumer_id: int
    delivery_ids: Sequence[int]


@dataclass(frozen=True, slots=True)
class Commit:
    request_id: int


@dataclass(frozen=True, slots=True)
class Rollback:
    request_id: int
    # consumer id -> the last delivery handed to the application.
    handed: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Unsubscribe:
    request_id: int
    subscription: str


@dataclass(frozen=True, slots=True)
class CreateTemporaryQueue:
    request_id: int
    queue: str  # "": the router names it


@dataclass(frozen=True, slots=True)
class DeleteTemporaryQueue:
    request_id: int
    queue: str


SessionCommand = (
    CreateProducer | CloseProducer | SendMessages | LargeBodyChunk | CreateConsumer | CloseConsumer
    | GrantCredits | Acknowledge | Reject | Commit | Rollback | Unsubscribe | CreateTemporaryQueue
    | DeleteTemporaryQueue
)

# A connection id is the client's own random id (a UUID in the SDKs); anything longer is a mistake.
MAX_CONNECTION_ID = 128


def _convert(req: bpb.SessionRequest, kind: str):
    if kind == "send":
        s = req.send
        return SendMessages(s.producer_id, s.batch_id, s.messages)
    if kind == "ack":
        return Acknowledge(req.ack.consumer_id, req.ack.delivery_ids)
    if kind == "flow":
        f = req.flow
        if f.credits < 1:
            raise InvalidCommand(f"flow for consumer {f.consumer_id}: credits {f.credits} must be a positive "
                                 "number of bytes", consumer_id=f.consumer_id)
        return GrantCredits(f.consumer_id, f.credits)
    if kind == "large_chunk":
        c = req.large_chunk
        return LargeBodyChunk(c.producer_id, c.batch_id, c.data, c.last)
    if kind == "nack":
        return Reject(req.nack.consumer_id, req.nack.delivery_ids)
    if kind == "create_producer":
        p = req.create_producer
        _check_window(f"producer {p.producer_id}:", p.window_size, "not given: 1 MiB", producer_id=p.producer_id)
        return CreateProducer(p.producer_id, p.address, p.window_size)
    if kind == "create_consumer":
        c = req.create_consumer
        _check_window(f"consumer {c.consumer_id}:", c.window_size, "no buffering", consumer_id=c.consumer_id)
        if c.routing_type not in _ROUTING_TYPES:
            raise InvalidCommand(f"consumer {c.consumer_id}: unknown routing type {c.routing_type} (ANYCAST 1, "
                                 "MULTICAST 2, or 0 for anycast)", consumer_id=c.consumer_id)
        return CreateConsumer(c.consumer_id, c.queue, c.address, c.subscription, c.filter, c.window_size, c.routing_type,
                              c.shared, c.durable if c.HasField("durable") else True, c.temporary)
    if kind == "close_consumer":
        c = req.close_consumer
        last_handed = c.last_handed_delivery_id if c.HasField("last_handed_delivery_id") else None
        return CloseConsumer(c.consumer_id, last_handed, c.keep_handed, c.answer)
    if kind == "close_producer":
        return CloseProducer(req.close_producer.producer_id)
    if kind == "commit":
        return Commit(req.commit.request_id)
    if kind == "rollback":
        r = req.rollback
        return Rollback(r.request_id, {h.consumer_id: h.last_handed_delivery_id for h in r.handed})
    if kind == "unsubscribe":
        return Unsubscribe(req.unsubscribe.request_id, req.unsubscribe.subscription)
    if kind == "create_temporary_queue":
        return CreateTemporaryQueue(req.create_temporary_queue.request_id, req.create_temporary_queue.queue)
    if kind == "delete_temporary_queue":
        return DeleteTemporaryQueue(req.delete_temporary_queue.request_id, req.delete_temporary_queue.queue)
    if kind == "open":
        raise BrokerError(Reason.INVALID_REQUEST, "`open` sent twice: a session is opened once, by its first request")
    raise BrokerError(Reason.INVALID_REQUEST, f"unexpected request {kind or '(empty)'} on an open session")


def session_command(req: bpb.SessionRequest) -> SessionCommand:
    """The command a request carries; INVALID_REQUEST for an empty or misplaced one."""
    return _convert(req, req.WhichOneof("kind"))


def open_session(req: bpb.SessionRequest) -> OpenSession:
    """The first request of a session, which must be `open`."""
    if req.WhichOneof("kind") != "open":
        raise BrokerError(Reason.INVALID_REQUEST, "the first request of a session must be `open`")
    o = req.open
    cid = o.connection_id
    if len(cid) > MAX_CONNECTION_ID or not cid.isprintable():
        raise BrokerError(Reason.INVALID_REQUEST, f"open: connection_id {cid[:40]!r}{'…' if len(cid) > 40 else ''} is not a connection id: at most "
                                                  f"{MAX_CONNECTION_ID} printable characters (the SDKs send a UUID)")
    return OpenSession(o.client_id, o.transacted, o.protocol_version or 1, cid)
