"""Who may use a temporary queue: the session that created it (JMS, Artemis).

A temporary queue is the queue of a temporary (non-durable, unnamed)
subscription. It belongs to the session that made it — meshmq's client
connection has no identity on the wire (each session is its own stream,
authenticated on its own), so the session is the unit a queue can belong
to — and it is deleted when that session's last consumer on it leaves.

* Consuming: only the owning session, whatever the caller's roles and
  whether or not security is enabled. Anyone else (another user, or the same
  user on another connection) gets PERMISSION_DENIED naming the queue. The
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

from meshmq.errors import BrokerError, Reason
from meshmq.security.authorization import MANAGEMENT_ADDRESS


@dataclass(frozen=True, slots=True)
class Owner:
    """The session that created a temporary queue, and its user ("" with security off)."""

    session_id: str
    user: str


def consume_refusal(queue: str, owner: Owner | None, session_id: str, user: str) -> BrokerError | None:
    """Why `session_id` (of `user`) may not consume from `queue`, or None when it may.

    A queue without an owner is not temporary: security-settings alone decide."""
    if owner is None or owner.session_id == session_id:
        return None
    who = f"user {user!r}" if user else "this session"
    return BrokerError(
        Reason.PERMISSION_DENIED,
        f"{who} may not consume from queue {queue!r}: it is a temporary queue, and only the session that "
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
