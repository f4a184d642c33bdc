"""A connection's temporary queue (JMS TemporaryQueue).

`Session.create_temporary_queue()` (or the connection's) makes one: an
anycast queue on an address of its own name (a UUID, as Artemis names its
temporary queues) that lives until `delete()` or until the connection
closes. Anyone may send to it by its name — it is what a reply-to usually
names — and any session of this connection, no other, may consume from it.

How that holds on a cluster, where a connection's sessions may be on
different nodes (docs/broker.md, "Temporary queues"):

* The queue is made on the node of a session the connection keeps for its
  temporary queues (its *anchor*), opened with the first one and closed with
  the connection. A router deletes a connection's temporary queues when the
  connection's last session on that node ends, so the anchor is what makes
  the queue last as long as the connection, and a client that crashes or
  loses its node leaves nothing behind.
* A session of the connection on another node that consumes it first asks
  its own node for the queue under the same name (CreateTemporaryQueue,
  answered `existed` where it is already there). The cluster then routes the
  queue's messages to the copy with consumers, and a copy without any hands
  its messages to one with consumers at once.
* After a failover each session that held it asks its new node for it again
  before its consumers are created there. It is not stored, so what waited
  in it on a failed node is gone, as for any non-durable queue.
"""

from __future__ import annotations

from typing import Protocol


class _Holder(Protocol):
    """What a temporary queue needs from a session that holds it (session.py)."""

    node_id: str

    def holds_open(self) -> bool: ...

    def refuse_if_consumed(self, queue: str) -> None: ...

    async def delete_temporary_queue(self, queue: str) -> None: ...

    def forget_temporary_queue(self, queue: str) -> None: ...


class _Holders(Protocol):
    """What a temporary queue needs from its connection (connection.py)."""

    def forget_temporary_queue(self, name: str) -> None: ...


class TemporaryQueue:
    def __init__(self, name: str, connection: _Holders) -> None:
        self.name = name
        self._connection = connection
        # The sessions that asked their node for it: each keeps it there while it is open.
        self.holders: set[_Holder] = set()
        self.deleted = False

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"TemporaryQueue({self.name!r}{', deleted' if self.deleted else ''})"

    async def delete(self) -> None:
        """Delete it on every node the connection holds it on (JMS
        TemporaryQueue.delete); what it holds goes too. Raises QueueInUseError
        while one of the connection's consumers is attached to it, as JMS
        asks; deleting it twice does nothing."""
        if self.deleted:
            return
        holders = sorted((s for s in self.holders if s.holds_open()), key=lambda s: s.node_id)
        for s in holders:
            s.refuse_if_consumed(self.name)
        done_on: set[str] = set()
        for s in holders:
            if s.node_id not in done_on:
                await s.delete_temporary_queue(self.name)
                done_on.add(s.node_id)
        self.deleted = True
        for s in list(self.holders):
            s.forget_temporary_queue(self.name)
        self.holders.clear()
        self._connection.forget_temporary_queue(self.name)
