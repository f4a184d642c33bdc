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
* BLOCK: producers sending to it are held until it has room again
  (producer_flow.py); a message that still arrives while it is full (the
  rest of a batch already accepted, a transaction's commit) is paged.
* FAIL: the send is refused with ADDRESS_FULL.
* DROP: the message is dropped and counted on the address.

Messages moved to a dead-letter or expiry address are paged there when it is
full, whatever its policy: a message is never dropped for being moved.

What counts as memory: each queue's copy of a message, from when it joins the
queue until it is acknowledged (or otherwise released), by its encoded size
plus MESSAGE_OVERHEAD_BYTES, what holding it costs beyond that: its
`ServerMessage` and `Ref`, the upb message object and its arena's bookkeeping,
its property map. Counting only the encoded size made a limit mean about half
of the memory it cost (a 1 KB message held ~2.1 KB), so global-max-size
would not bound what it names. Measured with 200,000 messages parsed from
SendBatch requests as the router receives them (RSS per message: 990 bytes
for an empty body, encoded 62; 2,062 bytes for 1 KB, encoded 1,089;
11,760 bytes for 10 KB, encoded 10,065).
Differences from Artemis, on purpose: a multicast message counts once per
queue (Artemis counts the shared message once), and a paged message is
stored once per queue; a paged non-durable message is stored like a durable
one and so survives a restart; large messages are never paged (only their
header is in memory; the body is in the journal already); messages in the
page expire when they are read back, not by the expiry reaper.
"""

from __future__ import annotations

PAGE, BLOCK, FAIL, DROP = "PAGE", "BLOCK", "FAIL", "DROP"
# The policies under which route() refuses or drops a message for a full address.
REFUSING = frozenset({FAIL, DROP})
# Most messages read back in one page, whatever page-size-bytes allows.
MAX_PAGE_MESSAGES = 10_000


# What a message held in memory costs besides its encoded size (module docstring), per queue copy.
MESSAGE_OVERHEAD_BYTES = 1000


# What "no limit" (-1) becomes, so that a full check is a plain comparison.
NO_LIMIT = 1 << 62


def limit(value: int) -> int:
    """A configured size limit (-1: none) as a bound to compare with."""
    return value if value >= 0 else NO_LIMIT


def should_read_page(waiting: int, paged_messages: int, paged_bytes: int, page_size_bytes: int) -> bool:
    """Read the next page when what waits in memory is under half a page (pure)."""
    if paged_messages <= 0:
        return False
    average = max(1, paged_bytes // paged_messages)
    return waiting * average < page_size_bytes // 2
