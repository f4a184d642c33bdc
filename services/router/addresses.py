"""Addresses as the router holds them, and the checks on names and filters.

An `Address` is the routing view of one address: its routing types and the
queues bound to it, split by routing type (cached until the queues change,
because routing reads the split for every message).
"""

from __future__ import annotations

import re

from meshmq.errors import BrokerError, Reason
from meshmq.message_limits import MAX_NAME_LENGTH

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
                 "memory_bytes", "memory_messages", "messages_dropped", "limits")

    def __init__(self, name: str, routing_types: int, auto_created: bool) -> None:
        self.name = name
        self.routing_types = routing_types  # bit set: 1 anycast, 2 multicast
        self.queues: dict[str, Queue] = {}
        self.auto_created = auto_created
        # Position of the anycast round robin (routing.decide picks with it).
        self.round_robin = 0
        self._split: tuple[tuple[Queue, ...], tuple[Queue, ...]] | None = None
        # What its queues hold in memory (paging.py) and what DROP dropped.
        self.memory_bytes = 0
        self.memory_messages = 0
        self.messages_dropped = 0
        # (max-size-bytes, max-size-messages) from its address settings, resolved on first use.
        self.limits: tuple[int, int] | None = None

    def has(self, rt: int) -> bool:
        return bool(self.routing_types & RT_BIT[rt])

    def add_queue(self, q: Queue) -> None:
        self.queues[q.name] = q
        q.home = self
        self._split = None

    def remove_queue(self, name: str) -> None:
        self.queues.pop(name, None)
        self._split = None

    def split(self) -> tuple[tuple[Queue, ...], tuple[Queue, ...]]:
        """(multicast queues, anycast queues), cached until the queues change."""
        if self._split is None:
            qs = self.queues.values()
            self._split = (
                tuple(q for q in qs if q.routing_type == MULTICAST),
                tuple(q for q in qs if q.routing_type == ANYCAST),
            )
        return self._split
