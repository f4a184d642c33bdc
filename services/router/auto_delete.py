"""Auto-deletion of auto-created queues and addresses, with Artemis's delays.

Address settings, as Artemis names them:

* `auto-delete-queues` (true): an auto-created queue is deleted when its last
  consumer leaves, once it has been without consumers for
  `auto-delete-queues-delay` ms (0: at once) and holds at most
  `auto-delete-queues-message-count` messages (0: only an empty one; -1:
  whatever it holds, which goes with it). A consumer attaching within the
  delay keeps the queue. A temporary queue goes at once, whatever the settings.
* `auto-delete-addresses` (true): an auto-created address is deleted once it
  has been without queues for `auto-delete-addresses-delay` ms (0: at once).
  A queue created on it within the delay keeps it.

Artemis checks both with a periodic reaper (`address-queue-scan-period`); here
each wait is one timer on the event loop, armed when the queue loses its last
consumer (the address its last queue) and checked again when it fires: a delay
is then measured from that moment, not rounded up to a scan.

An auto-created address that never had a queue (a send to a topic nobody
subscribes to, a late reply to a requester that left) loses no queue, so
nothing would arm its timer: it is armed when a message to it was routed
nowhere, for `address-queue-scan-period` (30 s) or the delay, whichever is
longer — at most one timer per address, so a topic published to without
subscribers is dropped and made again at most once a period, not once per
message (each is a journal row). `should_delete_queue`
is the decision, pure; `AutoDelete` owns the timers.

A pending timer is not stored: a node restarting within a delay keeps the
queue (or address) until a consumer comes and leaves again, as Artemis's
reaper, which counts from a consumer's removal, does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger("meshmq.router.auto_delete")


def should_delete_queue(*, temporary: bool, auto_created: bool, auto_delete_queues: bool,
                        message_count: int, max_message_count: int, busy: bool) -> bool:
    """Whether a queue without consumers is deleted now (the delay aside).

    `message_count` counts what it holds (waiting, paged, delivering,
    scheduled); `busy`: messages are on their way into it (staged, not yet
    stored), which a deletion would strand: it waits for the next chance.
    """
    if temporary:
        return True
    if not (auto_created and auto_delete_queues) or busy:
        return False
    return max_message_count < 0 or message_count <= max_message_count


class _Queue(Protocol):
    name: str
    address: str
    deleted: bool
    deleting: bool
    consumers: list


class _Address(Protocol):
    name: str
    queues: dict


class AutoDelete:
    """The pending auto-deletions of one node's queues and addresses.

    `check_queue` is asked when a queue lost its last consumer; `delete_queue`
    and `delete_address` are the broker's, called with the decision taken.
    """

    def __init__(
        self,
        settings: Callable[[str], object],
        queue_deletable: Callable[[_Queue], bool],
        delete_queue: Callable[[_Queue], None],
        delete_address: Callable[[_Address], None],
        current_address: Callable[[str], _Address | None],
        scan_period_ms: int = 30_000,
    ) -> None:
        self._settings = settings
        self._scan_period_ms = scan_period_ms
        self._deletable = queue_deletable
        self._delete_queue = delete_queue
        self._delete_address = delete_address
        self._current_address = current_address
        self._queue_timers: dict[str, tuple[_Queue, asyncio.TimerHandle]] = {}
        self._address_timers: dict[str, tuple[_Address, asyncio.TimerHandle]] = {}

    @property
    def pending(self) -> int:
        """Timers armed (queues and addresses waiting for their delay)."""
        return len(self._queue_timers) + len(self._address_timers)

    # ------------------------------------------------------------ queues

    def queue_unused(self, q: _Queue, *, temporary: bool) -> None:
        """`q` has no consumers now: delete it, at once or after its delay."""
        if q.deleted or q.deleting or q.consumers or not self._deletable(q):
            return
        delay = 0 if temporary else self._settings(q.address).auto_delete_queues_delay
        if delay <= 0:
            self._delete_queue(q)
            return
        self._cancel_queue(q.name)
        handle = asyncio.get_running_loop().call_later(delay / 1000, self._queue_due, q)
        self._queue_timers[q.name] = (q, handle)

    def queue_used(self, q: _Queue) -> None:
        """A consumer attached to `q`: a pending deletion is off."""
        if self._queue_timers:
            self._cancel_queue(q.name)

    def _queue_due(self, q: _Queue) -> None:
        entry = self._queue_timers.get(q.name)
        if entry is None or entry[0] is not q:
            return
        del self._queue_timers[q.name]
        if q.deleted or q.deleting or q.consumers or not self._deletable(q):
            return
        log.info("auto-deleting queue %s on %s: without consumers for its auto-delete-queues-delay", q.name, q.address)
        self._delete_queue(q)

    def _cancel_queue(self, name: str) -> None:
        entry = self._queue_timers.pop(name, None)
        if entry is not None:
            entry[1].cancel()

    # ------------------------------------------------------------ addresses

    def address_unused(self, addr: _Address) -> None:
        """Auto-created `addr` lost its last queue (auto-delete-addresses is on
        for it): delete it, at once or after auto-delete-addresses-delay."""
        delay = self._settings(addr.name).auto_delete_addresses_delay
        if delay <= 0:
            self._delete_address(addr)
            return
        self._cancel_address(addr.name)
        handle = asyncio.get_running_loop().call_later(delay / 1000, self._address_due, addr)
        self._address_timers[addr.name] = (addr, handle)

    def address_unrouted(self, addr: _Address) -> None:
        """Auto-created `addr`, without queues, just routed a message nowhere
        (auto-delete-addresses is on for it): delete it after the longer of
        address-queue-scan-period and auto-delete-addresses-delay, unless a
        queue comes meanwhile or a deletion is already pending."""
        if self._scan_period_ms < 0 or addr.name in self._address_timers:
            return
        delay = max(self._scan_period_ms, self._settings(addr.name).auto_delete_addresses_delay)
        handle = asyncio.get_running_loop().call_later(delay / 1000, self._address_due, addr)
        self._address_timers[addr.name] = (addr, handle)

    def _address_due(self, addr: _Address) -> None:
        entry = self._address_timers.get(addr.name)
        if entry is None or entry[0] is not addr:
            return
        del self._address_timers[addr.name]
        if self._current_address(addr.name) is not addr or addr.queues:
            return  # deleted meanwhile, or a queue came: it stays
        log.info("auto-deleting address %s: without queues for its auto-delete-addresses-delay", addr.name)
        self._delete_address(addr)

    def _cancel_address(self, name: str) -> None:
        entry = self._address_timers.pop(name, None)
        if entry is not None:
            entry[1].cancel()

    # ------------------------------------------------------------ end

    def close(self) -> None:
        """Cancel every pending deletion (the node stops)."""
        for _, handle in (*self._queue_timers.values(), *self._address_timers.values()):
            handle.cancel()
        self._queue_timers.clear()
        self._address_timers.clear()
