"""Paging: what an address does when it is full (Artemis's address-full-policy).

An address is full when the messages its queues hold in memory reach
`max-size-bytes` or `max-size-messages`, or the whole node's reach
`global-max-size`. Then, by its policy:

* PAGE (the default): new messages are stored for each queue in the
  journal's `paged_messages` and not kept in memory; each queue reads them
  back in message-id order, a page (`page-size-bytes`) at a time, as it
  drains. While a queue has paged messages, every new message for it is
  paged too — whether or not the address is still full — so the queue stays
  FIFO. Recovery does not load paged messages.
* FAIL: the send is refused with ADDRESS_FULL.
* DROP: the message is dropped and counted on the address.

Messages moved to a dead-letter or expiry address are paged there when it is
full, whatever its policy: a message is never dropped for being moved.

What counts as memory: each queue's copy of a message, from when it joins the
queue until it is acknowledged (or otherwise released), by its encoded size.
Differences from Artemis, on purpose: a multicast message counts once per
queue (Artemis counts the shared message once), and a paged message is
stored once per queue; a paged non-durable message is stored like a durable
one and so survives a restart; large messages are never paged (only their
header is in memory; the body is in the journal already); messages in the
page expire when they are read back, not by the expiry reaper.
"""

from __future__ import annotations

from meshmq.config.address_settings import ResolvedAddressSettings

PAGE, FAIL, DROP = "PAGE", "FAIL", "DROP"
# Most messages read back in one page, whatever page-size-bytes allows.
MAX_PAGE_MESSAGES = 10_000


def address_full(memory_bytes: int, memory_messages: int, max_size_bytes: int, max_size_messages: int,
                 node_bytes: int, global_max_size: int) -> bool:
    """Whether an address is full: its own limits (-1: none), or the node's (pure).
    Called for every routed message: plain ints, cheapest test first."""
    return (
        0 <= global_max_size <= node_bytes
        or 0 <= max_size_bytes <= memory_bytes
        or 0 <= max_size_messages <= memory_messages
    )


def limits(settings: ResolvedAddressSettings) -> tuple[int, int]:
    """(max-size-bytes, max-size-messages) of an address's settings."""
    return settings.max_size_bytes, settings.max_size_messages


def should_read_page(waiting: int, paged_messages: int, paged_bytes: int, page_size_bytes: int) -> bool:
    """Read the next page when what waits in memory is under half a page (pure)."""
    if paged_messages <= 0:
        return False
    average = max(1, paged_bytes // paged_messages)
    return waiting * average < page_size_bytes // 2
