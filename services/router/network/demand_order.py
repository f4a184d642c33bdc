"""A request forwarded over a network link is taken only once the demand for
its reply queue is known here (bridgeTempDestinations' request/reply).

The requester's temporary queue on node A becomes demand on node B only after
A's local scan (a debounce, connectors.LOCAL_DEBOUNCE_S) and, over two
one-way connectors, on another stream than the request's: without an order a
responder on B could answer before B holds a network subscription for the
reply queue, and the reply would find nothing there.

So a node counts the demand it sends — its demand version, raised each time
it sends demand on any link, carried by every DemandUpdate — and before it
forwards a batch holding a message with a `reply_to`:

1. it runs a pending local scan at once (the reply queue's consumer becomes
   demand now, not after the debounce);
2. it makes sure every connected link on which it offers demand to the
   batch's target has been sent the current version (an update carrying only
   the version when nothing else went there since);
3. the batch carries that version (`ForwardBatch.bindings_version`).

The target takes the batch once every link on which that source offers it
demand has brought that version (`DemandVersions.caught_up`, applied after
the demand itself, so the reply queue's network subscription exists) — at
most `CATCH_UP_TIMEOUT_S`, and not at all when no link brings it demand from
that source (no reply could go back anyway). On a duplex link the demand and
the request share one stream written in order, so the wait ends at once;
along a chain (A-B-C) B relays A's demand to C before it takes the request,
and forwards it on with its own version, so each hop orders the next.

Batches without a `reply_to` carry no version and never wait; nothing here
runs for them.
"""

from __future__ import annotations

import asyncio

from ..cluster.bindings_order import CATCH_UP_TIMEOUT_S, wait_until_caught_up


class DemandVersions:
    """The demand version each source node's links have brought this node
    (per link: a node may offer demand here over several), and the requests
    waiting for one."""

    def __init__(self) -> None:
        self._seen: dict[str, dict[str, int]] = {}  # source node -> link id -> newest version
        self._changed: dict[str, asyncio.Event] = {}

    def seen(self, link_id: str, node_id: str, version: int) -> None:
        """`node_id`'s demand up to `version` was applied, as `link_id` brought it."""
        by_link = self._seen.setdefault(node_id, {})
        if version >= by_link.get(link_id, 0):
            by_link[link_id] = version
        self._wake(node_id)

    def lost(self, link_id: str, node_id: str) -> None:
        """`link_id` from `node_id` ended (or leads elsewhere now): no wait for its updates."""
        by_link = self._seen.get(node_id)
        if by_link is not None and by_link.pop(link_id, None) is not None:
            if not by_link:
                del self._seen[node_id]
            self._wake(node_id)

    def _wake(self, node_id: str) -> None:
        event = self._changed.pop(node_id, None)
        if event is not None:
            event.set()

    def _have(self, node_id: str, version: int) -> bool | None:
        """None: no link brings demand from `node_id`; else whether all have brought `version`."""
        by_link = self._seen.get(node_id)
        if not by_link:
            return None
        return min(by_link.values()) >= version

    async def caught_up(self, node_id: str, version: int, timeout: float = CATCH_UP_TIMEOUT_S) -> bool:
        """Until every link from `node_id` has brought demand version `version`;
        False when that did not happen within `timeout` or no link brings any."""
        return await wait_until_caught_up(lambda: self._have(node_id, version),
                                          lambda: self._changed.setdefault(node_id, asyncio.Event()), timeout)
