"""The broker path a message carries across a network of brokers, and the
filter that keeps a network subscription from sending it round in circles.

Each network link that forwards a message adds its node to the message's
path (`_MQ_NETWORK_PATH`, ",id1,id2,") and counts the hop
(`_MQ_NETWORK_HOPS`), as ActiveMQ's brokerPath does. A network subscription
for peer P takes a message only if P is not on its path (it never goes back
where it has been: the seed's self-avoiding paths) and, on a network
connector, only while it has crossed fewer than `messageTTL` links. Both are
ordinary selector terms, so a subscription's whole filter is one selector,
shown as it is by management.
"""

from __future__ import annotations

from meshmq.v1 import messages_pb2 as mpb

PATH = "_MQ_NETWORK_PATH"
HOPS = "_MQ_NETWORK_HOPS"


def stamp(message: mpb.Message, node_id: str) -> None:
    """`message` leaves `node_id` over a network link: on its path, one hop more."""
    props = message.properties
    path = props[PATH].string_value if PATH in props else ","
    props[PATH].string_value = f"{path}{node_id},"
    props[HOPS].int_value = (props[HOPS].int_value if HOPS in props else 0) + 1


def path_of(lookup) -> list[str]:
    """The node ids a message crossed, in order (`lookup` as selectors read a message)."""
    path = lookup(PATH)
    return [p for p in path.split(",") if p] if isinstance(path, str) else []


def not_been_to(peer: str) -> str:
    """The selector term: the message has not been to `peer`."""
    return f"({PATH} IS NULL OR {PATH} NOT LIKE '%,{peer},%')"


def forwarding_filter(selector: str, peer: str, message_ttl: int | None) -> str:
    """The whole filter of a network subscription for `peer`: the demand's
    `selector`, the message never been to `peer`, and (a network connector:
    `message_ttl` set) fewer hops than messageTTL so far."""
    terms = [f"({selector})"] if selector else []
    terms.append(not_been_to(peer))
    if message_ttl is not None:
        terms.append(f"({HOPS} IS NULL OR {HOPS} < {message_ttl})")
    return " AND ".join(terms)
