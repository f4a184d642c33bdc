"""What one authenticated caller may do on this router (Artemis security-settings).

`Access` binds the node's `Authorizer` (meshmq/security/authorization.py) to
the user of one session or management call. The router asks it at the edge,
where the user is known: a session's sends, consumers and the queues and
addresses they create; each management method. A refusal is the
Authorizer's PERMISSION_DENIED, naming the user, the permission and the
address, and it is logged (rate-limited: a client must not flood the log).

Which permission each action needs:

* send (every message, by its address): `send`; sending to an address that
  does not exist yet also needs `create-address` (auto-create), and to one
  without a queue, when a queue is auto-created, `create-durable-queue`.
* a consumer on a queue: `consume` on the queue's address; a queue created
  for it: `create-durable-queue` (a durable subscription, an auto-created
  queue) or `create-non-durable-queue` (a temporary subscription), plus
  `create-address` if its address does not exist.
* management (ManagementServicer, services/router/management.py):
  - listing addresses, queues and consumers, and the cluster state: `view`
    on the management address (`activemq.management`, as in Artemis);
    `manage` there implies `view`;
  - creating and deleting a queue: `create-…`/`delete-…-queue` on its address;
  - creating an address: `create-address` on it; deleting one:
    `delete-address` on it (with force, its queues go with it: no queue
    permission is asked on top);
  - browsing a queue's messages (the console's BrowseMessages, and
    BrowseQueue, the SDK's queue browser): `browse` on the queue's address;
  - purging, pausing and resuming a queue, and retrying a dead-letter
    queue's messages: `manage` on the queue's address (a retry sends each
    message back where it came from and asks no `send` there: that is where
    the message was already accepted);
  - moving messages: `manage` on the source queue's address and `send` on
    the target queue's address (a move is a send there);
  - node information and watching the topology: authentication only: every
    client asks for them at first contact and to balance its sessions.
  - a temporary queue (temporary_queues.py) is managed, besides, only by
    the user who created it or one with `manage` on the management address;
    whatever the roles, only the session that created it consumes from it.

When authorization is not active (security disabled, or no security-settings:
see the Authorizer), sessions get no `Access` and nothing is checked.
"""

from __future__ import annotations

import logging

from meshmq.errors import BrokerError
from meshmq.security.authorization import Authorizer, Permission
from meshmq.transport import RateLimitedLog

_denied_log = RateLimitedLog(logging.getLogger("meshmq.router.security"))


class Access:
    __slots__ = ("user", "_authorizer")

    def __init__(self, user: str, authorizer: Authorizer) -> None:
        self.user = user
        self._authorizer = authorizer

    def allowed(self, permission: Permission, address: str) -> bool:
        """Whether the user has `permission` on `address` (nothing logged)."""
        return self._authorizer.allowed(self.user, permission, address)

    def check(self, permission: Permission, address: str) -> None:
        """PERMISSION_DENIED (logged) unless the user has `permission` on `address`."""
        try:
            self._authorizer.check(self.user, permission, address)
        except BrokerError as exc:
            log_refusal(exc)
            raise


def log_refusal(exc: BrokerError) -> None:
    """Log a PERMISSION_DENIED as a WARNING, rate-limited (a client must not flood the log)."""
    _denied_log.warning("refused: %s", exc.message)


def access_for(authorizer: Authorizer, user: str) -> Access | None:
    """The Access to check for `user`'s calls; None when nothing is checked."""
    return Access(user, authorizer) if authorizer.active else None
