"""Request-reply over a temporary queue, as JMS's QueueRequestor does it.

`request()` subscribes a temporary queue to a fresh reply address (a UUID, as
Artemis names its temporary queues), sends the request with that address as
JMSReplyTo and a fresh JMSCorrelationID, and waits for the reply carrying the
same correlation id. The temporary queue lives on the requester's node and
belongs to its session; a responder anywhere in the cluster reaches it by
sending to the reply address (the requester's node offers the queue to the
others like any other). The queue is deleted when `request()` returns, so a
reply that comes after the timeout finds no queue and is dropped rather than
left for nobody.

One temporary queue per request costs a create and a close on the requester's
node; in exchange no reply can ever reach the wrong caller, and concurrent
requests on one session need no shared dispatcher.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any, Protocol

from meshmq.errors import InvalidRequestError
from meshmq.properties import PropertyValue

from .consumer import Consumer
from .message import ReceivedMessage
from .producer import Producer


class RequestSession(Protocol):
    """What request-reply needs of a session (session.py's Session)."""

    transacted: bool

    async def create_consumer(self, queue: str = "", *, address: str = "", **kwargs: Any) -> Consumer: ...

    async def reply_producer(self) -> Producer: ...


def new_reply_address() -> str:
    """A reply address no other request uses."""
    return str(uuid.uuid4())


async def request(session: RequestSession, address: str, body: bytes = b"", *, timeout: float = 30.0,
                  properties: Mapping[str, PropertyValue] | None = None, **send_options: Any) -> ReceivedMessage:
    """Send `body` to `address` and return the reply (already acknowledged).

    Raises TimeoutError naming the address when no reply came within `timeout`
    seconds. `send_options` are those of Producer.send_async (durable, priority,
    ttl, type...); reply_to and correlation_id are this call's own."""
    if session.transacted:
        raise InvalidRequestError(
            "request() needs a session that is not transacted: the request would not leave before the commit "
            "and its reply could never come"
        )
    if "reply_to" in send_options or "correlation_id" in send_options:
        raise ValueError("request() sets reply_to and correlation_id itself; send them with a producer instead")
    if timeout <= 0:
        raise ValueError(f"timeout must be more than 0 seconds, got {timeout}")
    reply_address = new_reply_address()
    correlation_id = str(uuid.uuid4())
    consumer = await session.create_consumer(address=reply_address)  # a temporary queue of this session
    try:
        producer = await session.reply_producer()
        deadline = time.monotonic() + timeout
        await producer.send(body, address=address, properties=properties, reply_to=reply_address,
                            correlation_id=correlation_id, **send_options)
        while (left := deadline - time.monotonic()) > 0:
            msg = await consumer.receive(left)
            if msg is None:
                break
            consumer.ack(msg)
            if msg.correlation_id == correlation_id:
                return msg
        raise TimeoutError(f"no reply to the request sent to {address!r} came within {timeout} s")
    finally:
        await consumer.close()


async def reply(session: RequestSession, request_msg: ReceivedMessage, body: bytes = b"", *,
                properties: Mapping[str, PropertyValue] | None = None, **send_options: Any) -> None:
    """Send `body` to the request's JMSReplyTo with its correlation id (its
    JMSCorrelationID if it has one, as JMS responders do, else its message id)."""
    if not request_msg.reply_to:
        raise ValueError(f"message {request_msg.message_id} on {request_msg.address!r} has no reply_to to answer")
    correlation_id = request_msg.correlation_id or f"ID:{request_msg.node_id}:{request_msg.message_id}"
    producer = await session.reply_producer()
    await producer.send(body, address=request_msg.reply_to, properties=properties, correlation_id=correlation_id,
                        **send_options)
