"""Typed message properties: Python values <-> the `Value` protobuf.

Shared by the SDK (setting properties) and the router (evaluating selectors),
so both sides agree on what an int, a float or bytes is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Union

from meshmq.v1 import messages_pb2 as mpb

PropertyValue = Union[str, int, float, bool, bytes]

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# Scheduled delivery (Artemis's names): not delivered before this time, ms
# since the epoch; or this many ms after the router accepts the message.
SCHED_DELIVERY = "_AMQ_SCHED_DELIVERY"
SCHED_DELAY = "_AMQ_SCHED_DELAY"


# Message groups (Artemis's core names, then JMS's): the group, and the
# message's place in it (-1 closes the group).
GROUP_ID_PROPERTIES = ("_AMQ_GROUP_ID", "JMSXGroupID")
GROUP_SEQ_PROPERTIES = ("_AMQ_GROUP_SEQUENCE", "JMSXGroupSeq")

# Artemis's header properties that are message fields here: the SDK sends a
# property given under one of these names as the field (an argument already
# given wins), so the router reads integers and strings, never a message's
# property map on the hot path. Selectors still name them (the router looks
# up the field).
HEADER_PROPERTIES: dict[str, tuple[str, type]] = {
    SCHED_DELIVERY: ("delivery_time", int),
    SCHED_DELAY: ("delivery_delay", int),
    **{name: ("group_id", str) for name in GROUP_ID_PROPERTIES},
    **{name: ("group_seq", int) for name in GROUP_SEQ_PROPERTIES},
}


def header_properties(props: Mapping[str, PropertyValue], fields: dict[str, PropertyValue]
                      ) -> dict[str, PropertyValue]:
    """Move Artemis's header properties in `props` into `fields` (the
    message's fields by name; one already set there wins); returns the
    remaining properties. A value of the wrong type raises ValueError
    naming the property."""
    rest = dict(props)
    for name, (field, kind) in HEADER_PROPERTIES.items():
        if name not in rest:
            continue
        value = rest.pop(name)
        if isinstance(value, bool) or not isinstance(value, kind):
            raise ValueError(f"property {name} must be {'an int' if kind is int else 'a string'}, got {value!r}")
        if not fields.get(field):
            fields[field] = value
    return rest


def set_properties(target, props: Mapping[str, PropertyValue]) -> None:
    """Copy a mapping of Python values into a `map<string, Value>` field."""
    for key, value in props.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"property names must be non-empty strings, got {key!r}")
        v = target[key]
        # bool first: it is an int subclass in Python but its own type on the wire.
        if isinstance(value, bool):
            v.bool_value = value
        elif isinstance(value, int):
            if not INT64_MIN <= value <= INT64_MAX:
                raise ValueError(f"property {key!r}: int {value} does not fit in 64 bits")
            v.int_value = value
        elif isinstance(value, float):
            v.float_value = value
        elif isinstance(value, str):
            v.string_value = value
        elif isinstance(value, (bytes, bytearray, memoryview)):
            v.bytes_value = bytes(value)
        else:
            raise TypeError(
                f"property {key!r}: unsupported type {type(value).__name__} (use str, int, float, bool or bytes)"
            )


def value_of(v: mpb.Value) -> PropertyValue | None:
    kind = v.WhichOneof("kind")
    return None if kind is None else getattr(v, kind)


def properties_dict(props) -> dict[str, PropertyValue]:
    """A `map<string, Value>` field as a plain dict."""
    return {k: value_of(v) for k, v in props.items()}
