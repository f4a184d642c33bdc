"""What one message may carry: the documented limits, checked by the router
on every message it accepts, before anything reaches the journal.

Why these exist: a value the store cannot hold (a duplicate id longer than
its column, a NUL byte in a text column on PostgreSQL) would fail the
journal's commit, and a failed commit halts the node — one client must never
be able to do that. The header limits bound what one message costs in memory
however its properties are shaped. docs/broker.md lists them; a message over
a limit is refused alone with reason INVALID_REQUEST naming the limit.
"""

from __future__ import annotations

from meshmq.v1 import messages_pb2 as mpb

# Addresses, queue and subscription names (a SQL column of this many characters).
MAX_NAME_LENGTH = 255
# A duplicate id (stored in a column of this many characters).
MAX_DUPLICATE_ID_LENGTH = 255
MAX_PROPERTIES = 1024
MAX_PROPERTY_NAME_LENGTH = 255
# One property value (string or bytes), encoded.
MAX_PROPERTY_VALUE_BYTES = 256 * 1024
# Everything but the body, encoded: properties, address, ids.
MAX_HEADER_BYTES = 1024 * 1024
# What a large message's header may announce as its body (body_size): far beyond any store a node
# journals to, so only a lie meets it, and it is refused at the header instead of being waited for.
MAX_LARGE_BODY_BYTES = 2**40


def message_problem(m: mpb.Message, encoded_size: int, dup: str) -> str | None:
    """The first limit `m` breaks, as a sentence naming it; None if within all.

    `encoded_size` is `m.ByteSize()` and `dup` is `m.duplicate_id`, which the
    caller has read anyway (each protobuf field read is a call into upb).
    Cheap for the common message: the per-property checks run only when the
    header is big enough to hold a property over a limit.
    """
    if dup:
        if len(dup) > MAX_DUPLICATE_ID_LENGTH:
            return f"duplicate id is {len(dup)} characters; the limit is {MAX_DUPLICATE_ID_LENGTH}"
        if "\x00" in dup:
            return "duplicate id contains a NUL character"
    header = encoded_size - len(m.body)
    if header > MAX_HEADER_BYTES:
        return f"message header (properties, address, ids) is {header} bytes; the limit is {MAX_HEADER_BYTES}"
    if header <= MAX_PROPERTY_NAME_LENGTH:
        return None
    props = m.properties
    if len(props) > MAX_PROPERTIES:
        return f"message has {len(props)} properties; the limit is {MAX_PROPERTIES}"
    for name, value in props.items():
        if len(name) > MAX_PROPERTY_NAME_LENGTH:
            return f"property name {name[:40]!r}... is {len(name)} characters; the limit is {MAX_PROPERTY_NAME_LENGTH}"
        if value.ByteSize() > MAX_PROPERTY_VALUE_BYTES:
            return f"property {name!r} is {value.ByteSize()} bytes; the limit is {MAX_PROPERTY_VALUE_BYTES}"
    return None
