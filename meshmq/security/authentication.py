"""Users' username/password authentication, shared by every service that
admits users: the router (sessions, management), the admin gateway (its
log-in) and the discovery service (clients listing and watching the nodes).

Credentials come as call metadata (meshmq.transport's USERNAME_KEY and PASSWORD_KEY)
on every RPC, so sessions and management calls are checked the same way.
Stored passwords may be hashes (meshmq/security/passwords.py). `log_in` is
the throttled check for callers whose address is known
(meshmq/security/login_throttle.py); `identify` the bare one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping

import grpc

from meshmq.errors import BrokerError, Reason
from meshmq.security.login_throttle import LoginThrottle, ThrottlePolicy
from meshmq.security.passwords import PasswordChecker
from meshmq.transport import PASSWORD_KEY, USERNAME_KEY, RateLimitedLog

_throttle_log = RateLimitedLog(logging.getLogger("meshmq.security"))


class Authenticator:
    def __init__(self, enabled: bool, users: Iterable[tuple[str, str]],
                 throttle: ThrottlePolicy | None = None) -> None:
        self.enabled = enabled
        self._checker = PasswordChecker(dict(users))
        self.throttle = LoginThrottle(throttle)

    @classmethod
    def from_config(cls, config) -> Authenticator:
        """For a BrokerConfig: its security-enabled, users and login-throttle."""
        return cls(config.security_enabled, ((u.username, u.password) for u in config.users),
                   ThrottlePolicy.from_config(config.login_throttle))

    def identify(self, metadata: Mapping[str, str]) -> str | None:
        """The user whose username and password are in `metadata`, or None.
        Checks the configured users whether or not security is enabled.
        Unthrottled and blocking (scrypt): for a worker thread, or for
        presentations `log_in` already admitted (the checker remembers them)."""
        username = metadata.get(USERNAME_KEY, "")
        if username and self._checker.check(username, metadata.get(PASSWORD_KEY, "")):
            return username
        return None

    async def identify_caller(self, metadata: Mapping[str, str], source: str) -> str | None:
        """`identify` for a caller at address `source`, through `log_in`."""
        username = metadata.get(USERNAME_KEY, "")
        if username and await self.log_in(username, metadata.get(PASSWORD_KEY, ""), source):
            return username
        return None

    async def log_in(self, username: str, password: str, source: str) -> bool:
        """Whether the password is `username`'s, for a caller at address
        `source`. A presentation that succeeded before answers at once;
        any other first waits what the throttle says (on the event loop's
        timer, not blocking it), then is verified in a worker thread."""
        if self._checker.remembered(username, password):
            return True
        wait = self.throttle.wait(username, source)
        if wait:
            _throttle_log.warning("log-in attempts throttled after repeated failures (this one, for user %r from "
                                  "%s, waits %.2f s; docs/security.md)", username, source, wait)
            await asyncio.sleep(wait)
        ok = await asyncio.to_thread(self._checker.check, username, password)
        self.settle(username, source, ok)
        return ok

    def throttle_wait(self, username: str, password: str, source: str) -> float:
        """Seconds a log-in attempt waits before its password is checked: none
        for a presentation that succeeded before; else what the throttle says
        (which takes the address's next turn: call it once per attempt)."""
        if self._checker.remembered(username, password):
            return 0.0
        return self.throttle.wait(username, source)

    def settle(self, username: str, source: str, ok: bool) -> None:
        """Count a checked attempt's outcome in the throttle."""
        (self.throttle.succeeded if ok else self.throttle.failed)(username, source)

    def authenticate(self, context: grpc.aio.ServicerContext) -> str:
        """The authenticated user name for this call ("" with security off: a
        name nobody checked is nobody's); raises UNAUTHENTICATED when security
        is on and the credentials don't match. The router's UserCheck has
        admitted the call already, so this is the checker's cache."""
        if not self.enabled:
            return ""
        username = self.identify(dict(context.invocation_metadata() or ()))
        if username is None:
            raise BrokerError(Reason.UNAUTHENTICATED, "invalid username or password")
        return username
