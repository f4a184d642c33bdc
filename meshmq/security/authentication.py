"""Users' username/password authentication, shared by every service that
admits users: the router (sessions, management) and the discovery service
(clients listing and watching the nodes).

Credentials come as call metadata (meshmq.transport's USERNAME_KEY and PASSWORD_KEY)
on every RPC, so sessions and management calls are checked the same way.
Stored passwords may be hashes (meshmq/security/passwords.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import grpc

from meshmq.errors import BrokerError, Reason
from meshmq.security.passwords import PasswordChecker
from meshmq.transport import PASSWORD_KEY, USERNAME_KEY


class Authenticator:
    def __init__(self, enabled: bool, users: Iterable[tuple[str, str]]) -> None:
        self.enabled = enabled
        self._checker = PasswordChecker(dict(users))

    def identify(self, metadata: Mapping[str, str]) -> str | None:
        """The user whose username and password are in `metadata`, or None.
        Checks the configured users whether or not security is enabled."""
        username = metadata.get(USERNAME_KEY, "")
        if username and self._checker.check(username, metadata.get(PASSWORD_KEY, "")):
            return username
        return None

    def authenticate(self, context: grpc.aio.ServicerContext) -> str:
        """The authenticated user name for this call ("" with security off: a
        name nobody checked is nobody's); raises UNAUTHENTICATED when security
        is on and the credentials don't match."""
        if not self.enabled:
            return ""
        username = self.identify(dict(context.invocation_metadata() or ()))
        if username is None:
            raise BrokerError(Reason.UNAUTHENTICATED, "invalid username or password")
        return username
