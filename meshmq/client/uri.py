"""Connection URIs: `meshmq://[user:password@]host:port[?option=value&...]`.

Option names follow Artemis's connector URI parameters where one exists
(consumerWindowSize, confirmationWindowSize, minLargeMessageSize,
sslEnabled, trustStorePath, ...). An unknown option or a bad value is an
error naming it, never silently ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from urllib.parse import parse_qsl, unquote, urlsplit

from meshmq.errors import InvalidRequestError

SCHEMES = ("meshmq",)
DEFAULT_PORT = 61616


@dataclass(frozen=True)
class ClientOptions:
    """Every client option with its default (the Artemis default where there is one)."""

    # Bytes of messages the router may push ahead of consumption (per consumer); -1 = unbounded.
    consumerWindowSize: int = 1024 * 1024
    # Bytes of sent-but-unconfirmed messages a producer keeps in flight before send waits.
    confirmationWindowSize: int = 1024 * 1024
    # Bodies larger than this travel as a large message, in chunks of this size.
    minLargeMessageSize: int = 100 * 1024
    # Most messages a producer puts in one SendBatch frame.
    producerMaxBatch: int = 1000
    # Milliseconds a blocking call (connect, create, commit) waits for its answer.
    callTimeout: int = 30000
    clientID: str = ""
    username: str = ""
    password: str = ""
    sslEnabled: bool = False
    # PEM CA bundle to trust (default: the system's), and optional client certificate/key.
    trustStorePath: str = ""
    keyStorePath: str = ""
    keyPath: str = ""


_OPTION_TYPES = {f.name: f.type for f in fields(ClientOptions)}


@dataclass(frozen=True)
class ParsedURI:
    host: str
    port: int
    options: ClientOptions = field(default_factory=ClientOptions)

    @property
    def target(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def _convert(name: str, raw: str):
    kind = _OPTION_TYPES[name]
    if kind in ("bool", bool):
        low = raw.lower()
        if low in ("true", "1", "yes"):
            return True
        if low in ("false", "0", "no"):
            return False
        raise InvalidRequestError(f"URI option {name}={raw!r}: expected true or false")
    if kind in ("int", int):
        try:
            return int(raw)
        except ValueError:
            raise InvalidRequestError(f"URI option {name}={raw!r}: expected an integer") from None
    return raw


def parse_options(query: str, base: ClientOptions | None = None) -> ClientOptions:
    values = {}
    for key, raw in parse_qsl(query, keep_blank_values=True, strict_parsing=False):
        if key not in _OPTION_TYPES:
            import difflib

            close = difflib.get_close_matches(key, _OPTION_TYPES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InvalidRequestError(f"unknown URI option {key!r}{hint}")
        values[key] = _convert(key, raw)
    opts = replace(base or ClientOptions(), **values)
    for name in ("minLargeMessageSize", "producerMaxBatch", "callTimeout"):
        if getattr(opts, name) <= 0:
            raise InvalidRequestError(f"URI option {name} must be positive")
    return opts


def parse_uri(uri: str) -> ParsedURI:
    """Parse a single-server meshmq URI; raises InvalidRequestError saying what is wrong."""
    if not isinstance(uri, str) or not uri.strip():
        raise InvalidRequestError("empty connection URI; expected meshmq://host:port")
    parts = urlsplit(uri.strip())
    if parts.scheme not in SCHEMES:
        raise InvalidRequestError(
            f"unsupported URI scheme {parts.scheme or '(none)'!r} in {uri!r}; expected meshmq://host:port"
        )
    if parts.path not in ("", "/"):
        raise InvalidRequestError(f"unexpected path {parts.path!r} in {uri!r}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        raise InvalidRequestError(f"bad port in {uri!r}: {exc}") from None
    if not host:
        raise InvalidRequestError(f"no host in {uri!r}")
    opts = parse_options(parts.query)
    if parts.username:
        opts = replace(opts, username=unquote(parts.username), password=unquote(parts.password or ""))
    return ParsedURI(host, port or DEFAULT_PORT, opts)
