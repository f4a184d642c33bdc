"""Which member of a queue group gets a message: the four modes of Artemis's
`message-load-balancing`, as a pure function.

A queue group is the queues of one name on one address across the cluster:
this node's own (if it has one) and the remote bindings other nodes offered.
Anycast: the group gets each message once. Multicast: each group (one
subscription name) gets one copy, however many nodes hold that subscription.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, TypeVar

from meshmq.v1 import messages_pb2 as mpb

OFF, STRICT, ON_DEMAND, OFF_WITH_REDISTRIBUTION = "OFF", "STRICT", "ON_DEMAND", "OFF_WITH_REDISTRIBUTION"
ANYCAST, MULTICAST = mpb.ANYCAST, mpb.MULTICAST
# In an address's group positions: the round robin over its anycast groups (no queue is named "").
ANYCAST_GROUPS = ""


class Member(Protocol):
    def accepts(self, msg) -> bool:
        """The queue's own filter takes the message."""

    def has_consumer_for(self, msg) -> bool:
        """Some consumer of the queue (with its filter) would take the message."""


def choose(
    mode: str, local: Member | None, remote: Sequence[Member], msg, position: int,
) -> tuple[Member | None, bool]:
    """(the member that gets `msg`, whether the group's round-robin position
    advanced). `local` is this node's queue of the group (None: it has none,
    or its filter refused the message), `remote` the group's remote members in
    a fixed order (by node name), `position` the group's round-robin position.

    * OFF, OFF_WITH_REDISTRIBUTION: never forwarded; local or nobody.
    * STRICT: round robin over every member whose queue filter accepts.
    * ON_DEMAND: round robin over the members with a consumer that would take
      it; when none has one, the local queue keeps it; a group with no local
      queue (a subscription held only elsewhere) sends it round robin over its
      accepting members rather than lose it.
    """
    if mode in (OFF, OFF_WITH_REDISTRIBUTION):
        return local, False
    accepting = [m for m in remote if m.accepts(msg)]
    if not accepting:
        return local, False
    members = [local, *accepting] if local is not None else accepting
    if mode == ON_DEMAND:
        ready = [m for m in members if m.has_consumer_for(msg)]
        if ready:
            members = ready
        elif local is not None:
            return local, False
    return members[position % len(members)], True



class Grouped(Protocol):
    routing_type: int


M = TypeVar("M", bound=Grouped)


def remote_only(groups: Mapping[str, Sequence[M]], routing_type: int, pick: Callable[[str, Sequence[M]], M | None],
                positions: dict[str, int]) -> list[M]:
    """The members that get a message sent to an address this node does not
    have, whose queue groups are all on other nodes (a requester's reply
    address): one member of each multicast group (unless the message is
    anycast), and of one anycast group (unless it is multicast) — the next,
    round robin over the anycast groups (`positions[ANYCAST_GROUPS]`), whose
    `pick` takes it. `pick(name, members)` is the member of a group that gets
    it (`choose` with no local member, or a grouping decision); None: none.
    Empty: nobody takes it."""
    chosen: list[M] = []
    anycast: list[str] = []
    for name, members in groups.items():
        if members[0].routing_type == MULTICAST:
            if routing_type != ANYCAST and (member := pick(name, members)) is not None:
                chosen.append(member)
        elif routing_type != MULTICAST:
            anycast.append(name)
    start = positions.get(ANYCAST_GROUPS, 0)
    for i in range(len(anycast)):
        name = anycast[(start + i) % len(anycast)]
        member = pick(name, groups[name])
        if member is not None:
            chosen.append(member)
            positions[ANYCAST_GROUPS] = start + i + 1
            break
    return chosen
