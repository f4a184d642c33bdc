"""Who is using the gateway, and what they may do.

People log in with the same users (and password hashes) and roles as the
routers (`users`, `security-settings` in the node config). A log-in opens a
session: a cookie for the console, or a bearer token for scripts
(POST /api/v1/auth/token). Both live only in this process's memory, so a
gateway restart logs everybody out — nothing secret is written anywhere.

The gateway does not act with powers of its own: each call to a router carries
the logged-in user's credentials, and the router checks them and its
security-settings as for any client. The gateway's own view of the roles only
decides what the console offers (view-only users see no buttons that would
change anything) and refuses early with the same answer the router would give.

Roles: `manage` on the management address (`activemq.management`) may change
things; `view` (or `manage`) may look. With authorization off (security
disabled, or no security-settings) every logged-in user manages, as on the
routers.

Default credentials (a password equal to the user name or one of the usual
defaults) are refused at log-in unless the gateway runs in dev mode; with no
users configured, dev mode offers a built-in admin/admin and a normal start
is refused.

CSRF: a cookie session's state-changing requests must carry the session's
CSRF token (the console's forms and htmx requests send it as a header or a form
field); bearer tokens are not sent by browsers on their own, so they need none.
The log-in form itself is protected by a double-submit cookie.
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass, field

from starlette.requests import HTTPConnection, Request

from meshmq.config.models import BrokerConfig
from meshmq.security.authorization import MANAGEMENT_ADDRESS, Authorizer, Permission
from meshmq.security.authentication import Authenticator
from meshmq.security.login_throttle import LoginThrottle, ThrottlePolicy
from meshmq.transport import credentials_metadata

# Passwords nobody may use outside dev mode (besides the user's own name).
DEFAULT_PASSWORDS = frozenset({"admin", "password", "guest", "changeme", "change-me", "secret", "artemis"})
DEV_USER = ("admin", "admin")

SESSION_COOKIE = "meshmq_session"
LOGIN_CSRF_COOKIE = "meshmq_login_csrf"
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf_token"


class LoginRefused(Exception):
    """Why a log-in failed, worded for the person trying: `status` 401 for
    credentials that do not match (the same words whether or not the user
    exists), 403 for a user who may not use the gateway."""

    def __init__(self, message: str, status: int = 401) -> None:
        super().__init__(message)
        self.status = status


class GatewayStartError(RuntimeError):
    pass


@dataclass
class Identity:
    """One logged-in person (a console session or an API token)."""

    username: str
    can_manage: bool
    can_view: bool
    # Sent to the routers with every call on this person's behalf.
    metadata: tuple[tuple[str, str], ...]
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    expires_at: float = 0.0


def is_default_password(username: str, password: str) -> bool:
    return password.lower() in DEFAULT_PASSWORDS or password == username


class Users:
    """Checks log-ins against the configured users and roles."""

    def __init__(self, config: BrokerConfig) -> None:
        self.dev_mode = config.gateway.dev_mode
        users = {u.username: u.password for u in config.users}
        self.builtin = not users
        if self.builtin:
            if not self.dev_mode:
                raise GatewayStartError(
                    "the gateway logs people in with the node config's `users`, and none are configured: add users "
                    "(passwords hashed with `meshmq user hash`) with roles in security-settings, or set "
                    "gateway.dev-mode: true for a trial on this machine (built-in admin/admin)")
            users = dict([DEV_USER])
        self._auth = Authenticator(True, users.items(), ThrottlePolicy.from_config(config.login_throttle))
        self._authorizer = Authorizer.from_config(config) if not self.builtin else Authorizer(enabled=False)

    def may(self, username: str, permission: Permission) -> bool:
        return self._authorizer.allowed(username, permission, MANAGEMENT_ADDRESS)

    @property
    def throttle(self) -> LoginThrottle:
        return self._auth.throttle

    async def log_in(self, username: str, password: str, ttl_s: float, source: str) -> Identity:
        """The identity for these credentials from address `source`, or
        LoginRefused saying why. Failures are throttled per username and per
        address, as on the routers (meshmq/security/login_throttle.py)."""
        if not username or not password:
            raise LoginRefused("give a username and a password")
        if not await self._auth.log_in(username, password, source):
            raise LoginRefused("invalid username or password")
        if is_default_password(username, password) and not self.dev_mode:
            raise LoginRefused(f"user {username!r} has a default password, refused outside dev mode: "
                               "set a new one (meshmq user hash) in the node config")
        manage = self.may(username, Permission.MANAGE)
        view = manage or self.may(username, Permission.VIEW)
        if not view:
            # 403, and worded so that it does not confirm the password to whoever sent it.
            raise LoginRefused(f"not allowed: the gateway needs the view or manage permission on "
                               f"{MANAGEMENT_ADDRESS!r} (security-settings)", status=403)
        return Identity(username, can_manage=manage, can_view=view,
                        metadata=credentials_metadata(username, password), expires_at=time.monotonic() + ttl_s)


class Sessions:
    """Console sessions and API tokens: an unguessable key to an identity,
    expiring `ttl_s` after last use."""

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._by_key: dict[str, Identity] = {}

    def open(self, identity: Identity) -> str:
        self._sweep()
        key = secrets.token_urlsafe(32)
        self._by_key[key] = identity
        return key

    def get(self, key: str | None) -> Identity | None:
        if not key:
            return None
        identity = self._by_key.get(key)
        now = time.monotonic()
        if identity is None or identity.expires_at < now:
            self._by_key.pop(key, None)
            return None
        identity.expires_at = now + self.ttl_s
        return identity

    def close(self, key: str | None) -> None:
        if key:
            self._by_key.pop(key, None)

    def count(self) -> int:
        return len(self._by_key)

    def latest_viewer(self) -> Identity | None:
        """The live identity that may view and was used last (the rates' sampler calls with it)."""
        now = time.monotonic()
        live = [i for i in self._by_key.values() if i.can_view and i.expires_at >= now]
        return max(live, key=lambda i: i.expires_at, default=None)

    def _sweep(self) -> None:
        now = time.monotonic()
        for key in [k for k, i in self._by_key.items() if i.expires_at < now]:
            del self._by_key[key]


def session_key(request: Request) -> str | None:
    """The caller's session key: the bearer token, else the console's session cookie."""
    auth = request.headers.get("authorization", "")
    return auth[7:].strip() if auth.lower().startswith("bearer ") else request.cookies.get(SESSION_COOKIE)


def client_address(request: HTTPConnection) -> str:
    """The address a log-in came from, for the throttle: the TCP peer. Behind a
    reverse proxy that is the proxy (forwarded headers are not trusted: anyone
    could send them), so every log-in shares one address's back-off there."""
    client = request.client
    return client.host if client is not None else "unknown"


def same_token(given: str | None, expected: str) -> bool:
    return bool(given) and hmac.compare_digest(given, expected)
