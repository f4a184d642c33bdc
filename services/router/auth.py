"""Optional username/password authentication for clients.

Credentials come as call metadata (meshmq.transport's USERNAME_KEY and PASSWORD_KEY)
on every RPC, so sessions and management calls are checked the same way.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable

import grpc

from meshmq.errors import BrokerError, Reason
from meshmq.transport import PASSWORD_KEY, USERNAME_KEY


class Authenticator:
    def __init__(self, enabled: bool, users: Iterable[tuple[str, str]]) -> None:
        self.enabled = enabled
        self._users = dict(users)

    def authenticate(self, context: grpc.aio.ServicerContext) -> str:
        """The user name for this call; raises UNAUTHENTICATED when security is on and they don't match."""
        md = dict(context.invocation_metadata() or ())
        username = md.get(USERNAME_KEY, "")
        if not self.enabled:
            return username
        password = md.get(PASSWORD_KEY, "")
        expected = self._users.get(username)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise BrokerError(Reason.UNAUTHENTICATED, "invalid username or password")
        return username
