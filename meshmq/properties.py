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


def scheduling_properties(props: Mapping[str, PropertyValue], delivery_time: int, delivery_delay: int
                          ) -> tuple[dict[str, PropertyValue], int, int]:
    """Artemis's scheduling properties as the message's `delivery_time` and
    `delivery_delay` fields (an argument already given wins): the rest of
    `props`, the time and the delay. The router reads the fields, not the
    property map, so a message that is not scheduled costs it nothing."""
    rest = dict(props)
    for name in (SCHED_DELIVERY, SCHED_DELAY):
        value = rest.pop(name, None)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"property {name} must be an int (milliseconds), got {value!r}")
        if name == SCHED_DELIVERY:
            delivery_time = delivery_time or value
        else:
            delivery_delay = delivery_delay or value
    return rest, delivery_time, delivery_delay


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
