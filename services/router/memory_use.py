"""The bytes of messages the router holds in memory, per address and for the
node, and the producers waiting for an address to have room again.

Sending adds to these counts (send_pipeline.py stages a message), delivery
takes from them (delivery.py lets a reference go), and both ask whether an
address is full: the counts live here, below both, so neither has to reach
into the other. What "full" means, and what each address-full-policy does, is
paging.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from meshmq.config.address_settings import ResolvedAddressSettings
from meshmq.v1 import messages_pb2 as mpb

from . import paging
from .addresses import Address
from .message import Ref

log = logging.getLogger("meshmq.router")


class MemoryUse:
    def __init__(self, settings: Callable[[str], ResolvedAddressSettings], global_max_size: int,
                 blocking: bool) -> None:
        self._settings = settings
        # Bytes of messages every queue holds in memory, and the node's limit (global-max-size).
        self.bytes = 0
        self.global_max_size = global_max_size
        self.global_limit = paging.limit(global_max_size)
        # Some address may have address-full-policy BLOCK: sends must be looked at (producer_flow.py).
        self.blocking = blocking
        # Blocked addresses and what to call when each has room again.
        self._waiting_for_room: dict[Address, list[Callable[[], None]]] = {}

    def full(self, addr: Address | None) -> bool:
        """Whether `addr` (None: an address not created yet) is full (paging.py);
        resolves the address's limits on first use."""
        if addr is None:
            return self.bytes >= self.global_limit
        if addr.max_bytes < 0:
            self.resolve_limits(addr)
        return (
            addr.memory_bytes >= addr.max_bytes
            or addr.memory_messages >= addr.max_messages
            or self.bytes >= self.global_limit
        )

    def resolve_limits(self, addr: Address) -> None:
        settings = self._settings(addr.name)
        addr.max_bytes = paging.limit(settings.max_size_bytes)
        addr.max_messages = paging.limit(settings.max_size_messages)
        addr.blocks = settings.address_full_policy == paging.BLOCK
        addr.refuses = settings.address_full_policy in paging.REFUSING

    def hold(self, ref: Ref) -> None:
        """A queue's copy of a message is now in memory (paging.py counts these)."""
        size = ref.msg.size + paging.MESSAGE_OVERHEAD_BYTES
        self.bytes += size
        addr = ref.queue.home
        if addr is not None:
            addr.memory_bytes += size
            addr.memory_messages += 1

    def free(self, ref: Ref) -> None:
        size = ref.msg.size + paging.MESSAGE_OVERHEAD_BYTES
        self.bytes -= size
        addr = ref.queue.home
        if addr is not None:
            addr.memory_bytes -= size
            addr.memory_messages -= 1
        if self._waiting_for_room:
            self._room_made()

    def blocked_address(self, messages: Sequence[mpb.Message], default_address: str,
                        addresses: dict[str, Address]) -> Address | None:
        """The first address of `messages` that is full with policy BLOCK: the
        batch must wait for room (producer_flow.py). None when it may go."""
        last = None
        for m in messages:
            name = m.address or default_address
            if name == last:
                continue
            last = name
            addr = addresses.get(name)
            if addr is None:
                continue
            if addr.max_bytes < 0:
                self.resolve_limits(addr)
            if addr.blocks and self.full(addr):
                return addr
        return None

    def wait_for_room(self, addr: Address, callback: Callable[[], None]) -> None:
        """Call `callback` (soon, from the event loop) once `addr` is no longer full."""
        waiters = self._waiting_for_room.get(addr)
        if waiters is None:
            waiters = self._waiting_for_room[addr] = []
            settings = self._settings(addr.name)
            log.info(
                "blocking message production on address %s: %d bytes, %d messages in memory "
                "(max-size-bytes %d, max-size-messages %d; node %d of global-max-size %d)",
                addr.name, addr.memory_bytes, addr.memory_messages, settings.max_size_bytes,
                settings.max_size_messages, self.bytes, self.global_max_size,
            )
        waiters.append(callback)

    def _room_made(self) -> None:
        """Memory was freed while some address blocks: wake the waiters of those with room."""
        loop = asyncio.get_running_loop()
        for addr in [a for a in self._waiting_for_room if not self.full(a)]:
            log.info("unblocking message production on address %s", addr.name)
            for callback in self._waiting_for_room.pop(addr):
                loop.call_soon(callback)
