"""Where a message goes: the routing decision, as a pure function.

`decide(msg, address, settings, ...)` looks at the message's address and
routing type, the address's bindings and its address settings, and says what
must happen — nothing more: it changes nothing and does no I/O. The send
pipeline (`SendPipeline.route`, send_pipeline.py) carries the decision out:
it creates the address or the auto-created queue the decision asks for, or
redirects an unroutable message to the dead-letter address, and decides
again; those are separate steps (`Broker.ensure_address`, `Broker.create_queue`, `dead_letter.redirect_unroutable`).

A binding is anything a message can be routed to: a local queue, or a queue
on another node behind a cluster bridge (services/router/cluster/bindings.py).
It has a name, a routing type and `accepts(msg)` (its filter).

Semantics, as Artemis: multicast queues each get a copy when their filter
accepts; exactly one anycast queue gets it, round robin over the anycast
queues whose filter accepts; a message with a routing type goes only to
queues of that type; an address missing (or missing the routing type) is
auto-created when auto-create-addresses allows; an anycast address without
queues gets one when auto-create-queues allows; a message nobody takes goes
to the dead-letter address when send-to-dla-on-no-route is set.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from meshmq.config.address_settings import ResolvedAddressSettings
from meshmq.errors import BrokerError, Reason
from meshmq.v1 import messages_pb2 as mpb

ANYCAST, MULTICAST = mpb.ANYCAST, mpb.MULTICAST
# An address's routing types as a bit set.
RT_BIT = {ANYCAST: 1, MULTICAST: 2}
# On a forwarded copy: the bindings on the other side it goes to (ROUTE_SEP between them), which the
# source chose when balancing (cluster/bridge.py sends them as ForwardMessage.route_to).
ROUTE_TO = "_MQ_ROUTE_TO"
ROUTE_SEP = "\x1e"
# A route key of a tree link's copy meant for one node's topic subscriptions only: TO_NODE + its node
# id. Each node on the way passes it on toward that node; there it is routed to the address as usual
# (a moved leaf's topic messages, on their way from its old branch: network/link.py).
TO_NODE = "\x1d"
RT_BY_NAME = {"ANYCAST": ANYCAST, "MULTICAST": MULTICAST}


def routing_type_name(rt: int) -> str:
    """ANYCAST or MULTICAST ("" for none), as `_AMQ_ORIG_ROUTING_TYPE` carries it."""
    return next((name for name, value in RT_BY_NAME.items() if value == rt), "")


def routing_type_names(bits: int) -> str:
    """An address's routing-type bit set as text ("ANYCAST+MULTICAST")."""
    return "+".join(name for name, rt in RT_BY_NAME.items() if bits & RT_BIT[rt]) or "none"


class Routable(Protocol):
    """What routing reads of a message (ServerMessage has it)."""

    address: str
    routing_type: int  # 0 = whatever the address has

    def lookup(self, name: str): ...


class Binding(Protocol):
    name: str
    routing_type: int

    def accepts(self, msg: Routable) -> bool: ...


class Bindings(Protocol):
    """An address as routing sees it (services/router/addresses.py `Address`)."""

    name: str
    routing_types: int
    auto_created: bool

    def split(self) -> tuple[Sequence[Binding], Sequence[Binding]]:
        """(multicast bindings, anycast bindings)."""
        ...


@dataclass(slots=True)
class RoutingDecision:
    # The bindings that get the message (empty: it is routed nowhere).
    targets: list = field(default_factory=list)
    # An anycast binding was picked with the address's round-robin position: advance it.
    advance_round_robin: bool = False
    # Create the address, or add this routing type to it, then decide again.
    create_address: int = 0
    # Auto-create this anycast queue on the address, then decide again.
    create_queue: str = ""
    # Nothing takes the message: send it to this address instead, then decide again.
    dead_letter_address: str = ""

    @property
    def final(self) -> bool:
        return not (self.create_address or self.create_queue or self.dead_letter_address)


def decide(
    msg: Routable,
    address: Bindings | None,
    settings: ResolvedAddressSettings,
    round_robin: int = 0,
    taken: Container[str] = (),
) -> RoutingDecision:
    """The routing decision for one message (pure; see the module docstring).

    `address` is the message's address as it stands (None: it does not
    exist), `settings` its address settings, `round_robin` the address's
    round-robin position, `taken` the queue names in use (an auto-created
    anycast queue is named after its address unless that name is taken).
    Called for every message: keep it cheap (positional arguments from the
    hot path, no allocation but the decision). Raises ADDRESS_NOT_FOUND when the address would have to
    be created and auto-create-addresses is false for it.
    """
    rt = msg.routing_type
    if address is None or (rt and not address.routing_types & RT_BIT[rt]):
        if address is None and not settings.auto_create_addresses:
            raise BrokerError(
                Reason.ADDRESS_NOT_FOUND,
                f"address {msg.address!r} does not exist and auto-create-addresses is false for it",
            )
        return RoutingDecision(create_address=rt or RT_BY_NAME[settings.default_address_routing_type])
    multicast, anycast = address.split()
    targets = [b for b in multicast if b.accepts(msg)] if rt != ANYCAST and multicast else []
    advance = False
    if rt != MULTICAST and address.routing_types & RT_BIT[ANYCAST]:
        if not anycast and settings.auto_create_queues:
            name = address.name if address.name not in taken else f"{address.name}.anycast"
            return RoutingDecision(create_queue=name)
        if len(anycast) == 1:
            if anycast[0].accepts(msg):
                targets.append(anycast[0])
        elif anycast:
            matching = [b for b in anycast if b.accepts(msg)]
            if matching:
                targets.append(matching[round_robin % len(matching)])
                advance = True
    if not targets and settings.send_to_dla_on_no_route and settings.dead_letter_address not in (None, msg.address):
        return RoutingDecision(dead_letter_address=settings.dead_letter_address)
    return RoutingDecision(targets, advance)
