"""Client connections on this node, as far as temporary queues need them.

A JMS temporary queue (createTemporaryQueue) belongs to the *connection*
that made it: any session of that connection may consume from it, no one
else may, and it lives until it is deleted or the connection closes. On the
wire a connection is not a thing of its own — each session is its own gRPC
stream, authenticated on its own — so the client names it: every session it
opens carries the connection's id (OpenSession.connection_id, a random UUID
the SDK makes once per connection and keeps across failover).

This node keeps, per (user, connection id), the connection's sessions open
here and the temporary queues it made here. A connection's temporary queues
on this node go when its last session here ends: the SDKs keep one session
of a connection that has temporary queues open on their node for as long as
the connection lives, so for the client this is "until the connection
closes", and a client that crashed or lost its node leaves nothing behind.
A session without a connection id is a connection of its own.

Owned by BrokerServicer (server.py), which opens and ends sessions; nothing
here is on the message path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger("meshmq.router.connections")


@dataclass(eq=False, slots=True)
class ClientConnection:
    """One client connection's sessions and temporary queues on this node."""

    connection_id: str  # the client's id ("" for a session's connection of its own)
    user: str
    sessions: set[str] = field(default_factory=set)
    temporary_queues: set[str] = field(default_factory=set)


class ClientConnections:
    def __init__(self, delete_temporary_queue: Callable[[str, ClientConnection], None]) -> None:
        # (user, connection id or "", session id or "") -> the connection; a user cannot
        # join another user's connection, nor a session's connection of its own.
        self._open: dict[tuple[str, str, str], ClientConnection] = {}
        self._delete = delete_temporary_queue

    def join(self, session_id: str, user: str, connection_id: str) -> ClientConnection:
        """The connection a new session belongs to (its own when it names none)."""
        key = (user, connection_id, "" if connection_id else session_id)
        conn = self._open.get(key)
        if conn is None:
            conn = self._open[key] = ClientConnection(connection_id, user)
        conn.sessions.add(session_id)
        return conn

    def leave(self, session_id: str, conn: ClientConnection) -> None:
        """A session ended; the connection's last one here takes its temporary queues with it."""
        conn.sessions.discard(session_id)
        if conn.sessions:
            return
        self._open.pop((conn.user, conn.connection_id, "" if conn.connection_id else session_id), None)
        for name in sorted(conn.temporary_queues):
            try:
                self._delete(name, conn)
            except Exception:  # noqa: BLE001 - one queue failing must not keep the others
                log.exception("deleting temporary queue %s of connection %s", name, conn.connection_id)
        conn.temporary_queues.clear()

    def __len__(self) -> int:
        return len(self._open)
