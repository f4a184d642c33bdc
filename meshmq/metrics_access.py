"""Who may scrape a node's metrics, and over what (docs/metrics.md).

A router's metrics name every address and queue with its depth: with
`security-enabled` that is management information, so a scrape must prove a
user (HTTP Basic, checked by the same Authenticator, password hashes and
cache as the node's gRPC calls) whose roles may list the management state —
`view` or `manage` on `activemq.management`, the rule management listing
applies (services/router/access.py). No credentials, or wrong ones: 401 with
`WWW-Authenticate`; a user without the permission: 403. Refusals are logged
like the node's other refusals, at most one line per 10 s. Failed scrapes
count against the `login-throttle` as failed log-ins do, per username and per
address: a scrape waits its back-off (each scrape has a thread of its own, so
a real Prometheus is not held up behind a guesser) — at most `max-delay`, so a
user's owner always gets in; one whose address's turns queue beyond that
(concurrent guesses) is answered 429 with Retry-After at once, so guessing
threads cannot pile up.

And when the node serves TLS on an acceptor, the metrics endpoint serves
HTTPS with that acceptor's certificate and key: the Basic credentials must
not cross the network in the clear, and no second certificate is needed for
a scrape. With security off nothing changes: plain HTTP, no credentials.
"""

from __future__ import annotations

import base64
import binascii
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from meshmq.errors import BrokerError
from meshmq.security.authentication import Authenticator
from meshmq.security.authorization import MANAGEMENT_ADDRESS, Authorizer, Permission
from meshmq.transport import PASSWORD_KEY, USERNAME_KEY, RateLimitedLog

if TYPE_CHECKING:
    from meshmq.config.models import BrokerConfig

REALM = "meshmq metrics"
_refused_log = RateLimitedLog(logging.getLogger("meshmq.metrics.security"))


@dataclass(frozen=True, slots=True)
class Refusal:
    """An HTTP answer instead of the metrics."""

    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]
    body: str

    @property
    def status_line(self) -> str:
        return f"{self.status} {self.reason}"


def basic_credentials(authorization: str) -> tuple[str, str] | None:
    """(username, password) from an `Authorization: Basic …` header; None when absent or malformed."""
    scheme, _, encoded = authorization.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    username, colon, password = decoded.partition(":")
    return (username, password) if colon and username else None


class ScrapeAccess:
    """The check a scrape passes with security enabled."""

    def __init__(self, authenticator: Authenticator, authorizer: Authorizer) -> None:
        self._authenticator = authenticator
        self._authorizer = authorizer
        # The throttle's tables are plain dicts; scrapes may be served from more than one thread.
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: BrokerConfig) -> ScrapeAccess | None:
        """None with security off: anyone may scrape, as before."""
        if not config.security_enabled:
            return None
        return cls(Authenticator.from_config(config), Authorizer.from_config(config))

    def refusal(self, authorization: str, peer: str = "") -> Refusal | None:
        """Why a scrape with this Authorization header is refused, or None when it may read the metrics.
        Checking a password may take tens of milliseconds (scrypt): call it off any event loop."""
        creds = basic_credentials(authorization)
        user = None
        if creds is not None:
            username, password = creds
            throttle = self._authenticator.throttle
            with self._lock:
                wait = self._authenticator.throttle_wait(username, password, peer)
            # One turn waits at most max-delay; a wait longer by half an initial-delay is queued turns.
            if wait > throttle.policy.max_delay_s + throttle.policy.initial_delay_s / 2:
                _refused_log.warning("refused a metrics scrape from %s: log-in attempts throttled after repeated "
                                     "failures", peer or "?")
                return Refusal(429, "Too Many Requests", (("Retry-After", str(math.ceil(wait))),),
                               "too many failed log-ins: try again later\n")
            if wait:
                time.sleep(wait)  # this scrape's own thread (ThreadingWSGIServer)
            user = self._authenticator.identify({USERNAME_KEY: username, PASSWORD_KEY: password})
            with self._lock:
                self._authenticator.settle(username, peer, user is not None)
        if user is None:
            why = "no credentials" if creds is None else f"invalid username or password for {creds[0]!r}"
            _refused_log.warning("refused a metrics scrape from %s: %s", peer or "?", why)
            return Refusal(401, "Unauthorized", (("WWW-Authenticate", f'Basic realm="{REALM}", charset="UTF-8"'),),
                           "the metrics need the credentials of a user with view or manage on "
                           f"{MANAGEMENT_ADDRESS!r} (HTTP Basic)\n")
        try:
            self._authorizer.check(user, Permission.VIEW, MANAGEMENT_ADDRESS)
        except BrokerError as exc:
            _refused_log.warning("refused a metrics scrape from %s: %s", peer or "?", exc.message)
            return Refusal(403, "Forbidden", (), exc.message + "\n")
        return None


WsgiApp = Callable[[dict, Callable], Iterable[bytes]]


def guarded(app: WsgiApp, access: ScrapeAccess) -> WsgiApp:
    """`app` (the Prometheus exposition) behind `access`."""

    def guard(environ: dict, start_response: Callable) -> Iterable[bytes]:
        refusal = access.refusal(environ.get("HTTP_AUTHORIZATION", ""), environ.get("REMOTE_ADDR", ""))
        if refusal is None:
            return app(environ, start_response)
        body = refusal.body.encode()
        start_response(refusal.status_line, [("Content-Type", "text/plain; charset=utf-8"),
                                             ("Content-Length", str(len(body))), *refusal.headers])
        return [body]

    return guard


@dataclass(frozen=True, slots=True)
class MetricsTls:
    cert_path: Path
    key_path: Path


def metrics_tls(config: BrokerConfig) -> MetricsTls | None:
    """The certificate the metrics endpoint serves HTTPS with: with security
    enabled, the first acceptor's that has ssl-enabled; None: plain HTTP."""
    if not config.security_enabled:
        return None
    acc = next((a for a in config.acceptors if a.ssl_enabled), None)
    return None if acc is None else MetricsTls(Path(acc.cert_path), Path(acc.key_path))
