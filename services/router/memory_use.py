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
    # The disk alarm (disk_usage.py): while set, every address is full; PAGE and
    # BLOCK addresses block producers. `disk` is the node's DiskScan once it runs.
    disk_full = False
    disk_reason = ""
    disk = None

    def __init__(self, settings: Callable[[str], ResolvedAddressSettings], global_max_size: int,
                 blocking: bool) -> None:
        self._settings = settings
        # Bytes of messages every queue holds in memory, and the node's limit (global-max-size).
        self.bytes = 0
        self.global_max_size = global_max_size
        self.global_limit = paging.limit(global_max_size)
        # Some address may have address-full-policy BLOCK: sends must be looked at (producer_flow.py).
        self.blocking = blocking
        self._blocking_configured = blocking
        # What a batch for an address not created yet waits on during the disk alarm.
        self._new_address = Address("(a new address)", 0, True)
        # Blocked addresses and what to call when each has room again.
        self._waiting_for_room: dict[Address, list[Callable[[], None]]] = {}

    def full(self, addr: Address | None) -> bool:
        """Whether `addr` (None: an address not created yet) is full (paging.py);
        resolves the address's limits on first use."""
        if addr is None:
            return self.bytes >= self.global_limit or self.disk_full
        if addr.max_bytes < 0:
            self.resolve_limits(addr)
        return (
            self.disk_full
            or addr.memory_bytes >= addr.max_bytes
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
                # Not created yet: only the disk alarm blocks it (it holds nothing of its own).
                if self.disk_full and self._settings(name).address_full_policy not in paging.REFUSING:
                    return self._new_address
                continue
            if addr.max_bytes < 0:
                self.resolve_limits(addr)
            if self._blocks(addr):
                return addr
        return None

    def _blocks(self, addr: Address) -> bool:
        """Whether sends to `addr` wait: it is full with policy BLOCK, or the disk alarm holds
        every address that does not refuse (PAGE would write to the full disk)."""
        return (addr.blocks or (self.disk_full and not addr.refuses)) and self.full(addr)

    @property
    def memory_alarm(self) -> bool:
        """The node holds global-max-size of messages in memory: every address applies its policy."""
        return self.bytes >= self.global_limit

    def set_disk_full(self, full: bool, reason: str) -> None:
        """Raise or clear the disk alarm (disk_usage.py); clearing wakes the producers it blocked."""
        self.disk_full = full
        self.disk_reason = reason
        self.blocking = self._blocking_configured or full
        if not full and self._waiting_for_room:
            self._room_made()

    def full_reason(self, addr: Address | None, max_size_bytes: int, max_size_messages: int) -> str:
        """Why `addr` is full, in words (for a refusal)."""
        if self.disk_full:
            return self.disk_reason
        return (f"max-size-bytes {max_size_bytes}, max-size-messages {max_size_messages}, "
                f"global-max-size {self.global_max_size}")

    def wait_for_room(self, addr: Address, callback: Callable[[], None]) -> None:
        """Call `callback` (soon, from the event loop) once `addr` is no longer full."""
        waiters = self._waiting_for_room.get(addr)
        if waiters is None:
            waiters = self._waiting_for_room[addr] = []
            settings = self._settings(addr.name)
            if self.disk_full:
                log.info("blocking message production on address %s: %s", addr.name, self.disk_reason)
            else:
                log.info(
                    "blocking message production on address %s: %d bytes, %d messages in memory "
                    "(max-size-bytes %d, max-size-messages %d; node %d of global-max-size %d)",
                    addr.name, addr.memory_bytes, addr.memory_messages, settings.max_size_bytes,
                    settings.max_size_messages, self.bytes, self.global_max_size,
                )
        waiters.append(callback)

    def _room_made(self) -> None:
        """Memory was freed (or the disk alarm cleared) while some address blocks: wake the
        waiters of those that no longer block."""
        loop = asyncio.get_running_loop()
        for addr in [a for a in self._waiting_for_room if not self._blocks(a)]:
            log.info("unblocking message production on address %s", addr.name)
            for callback in self._waiting_for_room.pop(addr):
                loop.call_soon(callback)
