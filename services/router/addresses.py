"""Addresses as the router holds them, and the checks on names and filters.

An `Address` is the routing view of one address: its routing types and the
queues bound to it — its own, and those of the wildcard addresses that match
it (wildcard_routing.py) — split by routing type (cached until the queues
change, because routing reads the split for every message).
"""

from __future__ import annotations

import re

from meshmq.errors import BrokerError, Reason
from meshmq.message_limits import MAX_NAME_LENGTH
from meshmq.routing_names import INTERNAL_PREFIX

from .cluster.bindings import NO_GROUPS
from .queue import Queue
from .routing import ANYCAST, MULTICAST, RT_BIT
from meshmq.selector import Selector, SelectorError, compile_selector

_BAD_NAME = re.compile(r"[\x00-\x1f\x7f]")


def check_name(kind: str, name: str) -> str:
    """Reject names that cannot be stored or shown safely."""
    if not name:
        raise BrokerError(Reason.INVALID_REQUEST, f"{kind} name is empty")
    if len(name) > MAX_NAME_LENGTH:
        raise BrokerError(Reason.INVALID_REQUEST, f"{kind} name is longer than {MAX_NAME_LENGTH} characters")
    if _BAD_NAME.search(name):
        raise BrokerError(Reason.INVALID_REQUEST, f"{kind} name {name!r} contains control characters")
    return name


def not_internal(kind: str, name: str) -> str:
    """Refuse a client's use of the router's own addresses and queues (``$.meshmq.``:
    store-and-forward queues hold other nodes' messages)."""
    if name.startswith(INTERNAL_PREFIX):
        raise BrokerError(Reason.INVALID_REQUEST, f"{kind} {name!r} is internal to the router ({INTERNAL_PREFIX}...)")
    return name


def compile_filter(text: str) -> Selector | None:
    """A selector for a non-empty filter string; INVALID_SELECTOR with the position otherwise."""
    if not text:
        return None
    if "\x00" in text:
        raise BrokerError(Reason.INVALID_SELECTOR, "filter contains a NUL character")
    try:
        return compile_selector(text)
    except SelectorError as exc:
        raise BrokerError(Reason.INVALID_SELECTOR, str(exc)) from None


class Address:
    __slots__ = ("name", "routing_types", "queues", "auto_created", "round_robin", "_split",
                 "memory_bytes", "memory_messages", "messages_dropped", "messages_routed", "messages_unrouted", "max_bytes", "max_messages", "blocks", "refuses", "paging", "sole",
                 "remote", "cluster_round_robin", "wildcard", "bound", "shares")

    def __init__(self, name: str, routing_types: int, auto_created: bool) -> None:
        self.name = name
        self.routing_types = routing_types  # bit set: 1 anycast, 2 multicast
        self.queues: dict[str, Queue] = {}
        self.auto_created = auto_created
        # Position of the anycast round robin (routing.decide picks with it).
        self.round_robin = 0
        self._split: tuple[tuple[Queue, ...], tuple[Queue, ...]] | None = None
        # Its only queue when it has one and that queue has no filter: every
        # message of that queue's routing type (or none) goes there, and the
        # router skips the routing decision (SendPipeline.route).
        self.sole: Queue | None = None
        # What its queues hold in memory (paging.py) and what DROP dropped.
        self.memory_bytes = 0
        self.memory_messages = 0
        self.messages_dropped = 0
        # Messages sent to it that reached some queue, and those that reached none (Artemis's
        # RoutedMessageCount / UnRoutedMessageCount; DROP's drops are unrouted too).
        self.messages_routed = 0
        self.messages_unrouted = 0
        # max-size-bytes and max-size-messages from its address settings
        # (paging.limit: no limit is a huge number, so "full" is one comparison);
        # -1 until the broker resolves them, which makes the first check take
        # the slow path that does.
        self.max_bytes = -1
        self.max_messages = -1
        # Its address-full-policy is BLOCK, or FAIL or DROP (resolved with the limits).
        self.blocks = False
        self.refuses = False
        # Some queue of the address may have paged messages: new messages must
        # look (SendPipeline.stage). Cleared once a look finds none.
        self.paging = True
        # Cluster connections: queue name -> that queue's members on other
        # nodes (cluster/bindings.py keeps it), and each group's round-robin position.
        self.remote = NO_GROUPS
        self.cluster_round_robin: dict[str, int] = {}
        # Wildcard routing (wildcard_routing.py): this is a wildcard address (news.#), whose
        # queues are bound to the concrete addresses it matches; or the queues of wildcard
        # addresses bound to this one. Either way (`shares`) the queues a message goes
        # to can belong to different addresses (SendPipeline.stage counts each on its own).
        self.wildcard = False
        self.bound: tuple[Queue, ...] = ()
        self.shares = False

    def has(self, rt: int) -> bool:
        return bool(self.routing_types & RT_BIT[rt])

    def add_queue(self, q: Queue) -> None:
        self.queues[q.name] = q
        q.home = self
        self._queues_changed()

    def remove_queue(self, name: str) -> None:
        self.queues.pop(name, None)
        self._queues_changed()

    def _queues_changed(self) -> None:
        self._split = None
        only = next(iter(self.queues.values())) if len(self.queues) == 1 else None
        self.sole = only if only is not None and only.selector is None and not self.remote and not self.bound else None
        self.shares = self.wildcard or bool(self.bound)

    def mark_wildcard(self) -> None:
        self.wildcard = True
        self._queues_changed()

    def set_bound(self, queues: tuple[Queue, ...]) -> None:
        if queues != self.bound:
            self.bound = queues
            self._queues_changed()

    def set_remote(self, groups) -> None:
        self.remote = groups
        self._queues_changed()

    def split(self) -> tuple[tuple[Queue, ...], tuple[Queue, ...]]:
        """(multicast queues, anycast queues), cached until the queues change."""
        if self._split is None:
            qs = (*self.queues.values(), *self.bound) if self.bound else self.queues.values()
            self._split = (
                tuple(q for q in qs if q.routing_type == MULTICAST),
                tuple(q for q in qs if q.routing_type == ANYCAST),
            )
        return self._split
