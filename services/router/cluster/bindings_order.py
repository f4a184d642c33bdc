"""A forwarded request is taken only once its reply queue is known here.

A node offers its bindings on the links other nodes open to it, and forwards
its messages on the links it opens itself: two streams, with no order between
them. A requester's temporary queue, created on node A just before its
request, could therefore be unknown on node B when the request arrives there
and the responder on B answers it at once: the reply would find no binding
on B and be dropped.

So every bindings snapshot a node offers carries its bindings version (a
counter raised at each change, `Broker.bindings_version`), and a forwarded
batch holding a message with a `reply_to` carries the version its source had
when it sent it. Before taking such a batch, the receiving node waits until
the snapshot it has from that source is at least that new — at most
`CATCH_UP_TIMEOUT_S`, and not at all when it has no live link to the source
(no snapshot can come; the batch is taken as before). Batches of messages
without `reply_to` never wait, and never carry a version — except those to a
temporary queue on the receiving node: when a node's copy of a connection's
temporary queue goes (client_connections.py), it hands its messages to the
other copies, and the receiver must know that copy is gone before its
redistribution could send them straight back to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from meshmq.aio import wait_for

# How long a forwarded request may wait for its source's bindings: a snapshot
# follows a change within the offer debounce (link_service.py), so this bounds
# only a link that is failing.
CATCH_UP_TIMEOUT_S = 2.0


class OfferedVersions:
    """The newest bindings version each source node has offered this node (over
    the links this node opened to it), and the batches waiting for one."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}
        self._changed: dict[str, asyncio.Event] = {}

    def seen(self, node_id: str, version: int) -> None:
        """A snapshot from `node_id` at `version` was applied (a new link starts again from its first)."""
        self._seen[node_id] = version
        event = self._changed.pop(node_id, None)
        if event is not None:
            event.set()

    def lost(self, node_id: str) -> None:
        """The link to `node_id` ended: nothing waits for its snapshots any more."""
        self._seen.pop(node_id, None)
        event = self._changed.pop(node_id, None)
        if event is not None:
            event.set()

    async def caught_up(self, node_id: str, version: int, timeout: float = CATCH_UP_TIMEOUT_S) -> bool:
        """Until the snapshot from `node_id` is at least `version`; False when it
        was not within `timeout` or there is no link to it."""

        def have() -> bool | None:
            seen = self._seen.get(node_id)
            return None if seen is None else seen >= version

        return await wait_until_caught_up(have, lambda: self._changed.setdefault(node_id, asyncio.Event()), timeout)


async def wait_until_caught_up(have: Callable[[], bool | None], changed: Callable[[], asyncio.Event],
                               timeout: float) -> bool:
    """Wait until `have()` is True (False: not yet; None: nothing can bring it,
    give up at once), waking on the event `changed()` hands out; False when the
    `timeout` passed first. Shared by the bindings (here) and the network
    links' demand (network/demand_order.py)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        state = have()
        if state:
            return True
        left = deadline - loop.time()
        if state is None or left <= 0:
            return False
        try:
            await wait_for(changed().wait(), left)
        except TimeoutError:
            return False
