"""Who may use a temporary queue: the connection or the session that created it (JMS, Artemis).

Two kinds of queue are temporary and owned:

* A **connection's temporary queue** (CreateTemporaryQueue, JMS
  createTemporaryQueue): it belongs to the client connection that made it
  (client_connections.py) and lives until it is deleted or the connection's
  last session on this node ends; any session of that connection may
  consume from it.
* A **session's temporary queue**: the queue of a temporary (non-durable,
  unnamed) subscription, or of a consumer created with `temporary`. It
  belongs to the session that made it and is deleted when that session's
  last consumer on it leaves.

* Consuming: only the owning connection's sessions (a session's queue: only
  that session), whatever the caller's roles and whether or not security is
  enabled. Anyone else (another user, or the same user on another
  connection) gets PERMISSION_DENIED naming the queue. The
  check runs on the event loop in the same step that attaches the consumer,
  so no consumer can slip in between the check and the attach.
* Sending is not restricted here: a message goes to an address, and replies
  to a temporary subscription's address must keep working (security-settings
  still decide who may send there). Moving messages into one is a send too.
* Management of one queue (browse, purge, pause, resume, move or retry its
  messages, delete it), when authorization is active: its owning user with
  the usual permission, or a user with `manage` on the management address
  (an operator cleaning up); other users are refused, `view`-only listing
  stays as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from meshmq.errors import BrokerError, Reason
from meshmq.security.authorization import MANAGEMENT_ADDRESS

if TYPE_CHECKING:
    from .client_connections import ClientConnection


@dataclass(frozen=True, slots=True)
class Owner:
    """The session that created a temporary queue, its user ("" with security
    off), and the connection it belongs to when it is a connection's queue."""

    session_id: str
    user: str
    connection: ClientConnection | None = None


def consume_refusal(queue: str, owner: Owner | None, session_id: str, user: str,
                    connection: ClientConnection | None) -> BrokerError | None:
    """Why `session_id` (of `user`, on `connection`) may not consume from `queue`,
    or None when it may.

    A queue without an owner is not temporary: security-settings alone decide."""
    if owner is None:
        return None
    if owner.connection is not None:
        if owner.connection is connection:
            return None
        creator = "connection"
    elif owner.session_id == session_id:
        return None
    else:
        creator = "session"
    who = f"user {user!r}" if user else "this session"
    return BrokerError(
        Reason.PERMISSION_DENIED,
        f"{who} may not consume from queue {queue!r}: it is a temporary queue, and only the {creator} that "
        "created it may consume from it",
    )


def management_refusal(queue: str, owner: Owner | None, user: str, operator: bool) -> BrokerError | None:
    """Why `user` may not manage one `queue` (browse, purge, pause, move or retry its
    messages, delete it), or None when it may (its usual permission aside).

    `operator`: the user has `manage` on the management address."""
    if owner is None or owner.user == user or operator:
        return None
    return BrokerError(
        Reason.PERMISSION_DENIED,
        f"user {user!r} may not manage queue {queue!r}: it is a temporary queue of another user; only that "
        f"user, or a role with manage on {MANAGEMENT_ADDRESS!r}, may browse, change or delete it",
    )
