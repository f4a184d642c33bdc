"""Connection URIs.

* one server: `meshmq://[user:password@]host[:port][?option=value&...]`
* a static list sharing options (Artemis/ActiveMQ bracket syntax):
  `(meshmq://h1:61616,meshmq://h2:61617)?reconnectAttempts=5`
* discovery through etcd, for the first contact only:
  `meshmq+etcd://127.0.0.1:2379[,h2:2379]/cluster-name?initialWaitTimeout=10000&refreshTimeout=10000`
* ActiveMQ's failover transport: `failover:(meshmq://h1:61616,meshmq://h2:61617)?randomize=false&maxReconnectAttempts=10`
  (ActiveMQ's option names and defaults, mapped onto the options below; a
  session that loses its node may move to any listed node, not only the
  failed node's backup)
* the ActiveMQ form, where options the discovery layer does not know apply to
  the discovered transports: `discovery://(etcd://127.0.0.1:2379/cluster-name?refreshTimeout=10000)?consumerWindowSize=0`
  (with a username, a discovery URI needs sslEnabled=true: see trust.py)

Option names follow Artemis's connector URI parameters where one exists
(consumerWindowSize, confirmationWindowSize, minLargeMessageSize,
connectionLoadBalancingPolicyClassName, useTopologyForLoadBalancing,
sslEnabled, trustStorePath, ...). An unknown option or a bad value is an
error naming it, never silently ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from urllib.parse import parse_qsl, unquote, urlsplit

from meshmq.config.defaults import (
    ACCEPTOR_PORT, ETCD_MIN_REFRESH_TIMEOUT, FAILOVER_TRANSPORT_DEFAULTS, INITIAL_WAIT_TIMEOUT, MAX_WINDOW_SIZE, REFRESH_TIMEOUT,
)
from meshmq.errors import InvalidRequestError

from .options import ClientOptions, Server
from .trust import topology_is_verified

SCHEMES = ("meshmq",)
DEFAULT_PORT = ACCEPTOR_PORT


_OPTION_TYPES = {f.name: f.type for f in fields(ClientOptions)}


@dataclass(frozen=True)
class EtcdDiscovery:
    """Where to find the cluster's announcements (the Artemis clustering chapter, "Server discovery")."""

    endpoints: tuple[str, ...]
    cluster_name: str
    # How long connect() waits for the first node to show up (Artemis initialWaitTimeout).
    initial_wait_timeout: int = INITIAL_WAIT_TIMEOUT
    # Announcements older than this are ignored (Artemis refreshTimeout).
    refresh_timeout: int = REFRESH_TIMEOUT


_DISCOVERY_OPTIONS = {"initialWaitTimeout": "initial_wait_timeout", "refreshTimeout": "refresh_timeout"}


@dataclass(frozen=True)
class ParsedURI:
    servers: tuple[Server, ...]
    options: ClientOptions = field(default_factory=ClientOptions)
    # Set for meshmq+etcd:// and discovery:// URIs: servers is then empty until discovered.
    discovery: EtcdDiscovery | None = None
    # failover:(...) URIs (ActiveMQ's failover transport): a failed session may move to any
    # listed node, and with backup=true a channel to the next one is kept connected.
    any_node_failover: bool = False
    warm_backup: bool = False


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
    if kind in ("float", float):
        try:
            return float(raw)
        except ValueError:
            raise InvalidRequestError(f"URI option {name}={raw!r}: expected a number") from None
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
    if opts.initialConnectAttempts == 0 or opts.initialConnectAttempts < -1:
        raise InvalidRequestError("URI option initialConnectAttempts must be -1 (forever) or a positive number")
    for name in ("clientFailureCheckPeriod", "connectionTTL", "callFailoverTimeout"):
        if getattr(opts, name) <= 0 and getattr(opts, name) != -1:
            raise InvalidRequestError(f"URI option {name} must be -1 (no limit) or a positive number of ms")
    for name in ("retryInterval", "maxRetryInterval"):
        if getattr(opts, name) < 0:
            raise InvalidRequestError(f"URI option {name} must not be negative")
    if opts.retryIntervalMultiplier < 1.0:
        raise InvalidRequestError("URI option retryIntervalMultiplier must be at least 1.0")
    if opts.confirmationWindowSize == 0 or opts.confirmationWindowSize < -1:
        raise InvalidRequestError(
            "URI option confirmationWindowSize must be -1 (no limit on unconfirmed bytes) or a positive number of bytes"
        )
    if opts.producerWindowSize == 0 or not -1 <= opts.producerWindowSize <= MAX_WINDOW_SIZE:
        raise InvalidRequestError(
            f"URI option producerWindowSize must be -1 (no limit) or 1..{MAX_WINDOW_SIZE} bytes"
        )
    if not -1 <= opts.consumerWindowSize <= MAX_WINDOW_SIZE:
        raise InvalidRequestError(
            "URI option consumerWindowSize must be -1 (no limit), 0 (no buffering: a message is sent when "
            f"receive asks for one) or 1..{MAX_WINDOW_SIZE} bytes"
        )
    if opts.reconnectAttempts < -1:
        raise InvalidRequestError("URI option reconnectAttempts must be -1 (forever), 0 or more")
    from .loadbalance import policy_from_name

    policy_from_name(opts.connectionLoadBalancingPolicyClassName)  # fail now, not at the first session
    return opts


def _parse_server(uri: str, whole: str) -> tuple[Server, str, str, str]:
    parts = urlsplit(uri.strip())
    if parts.scheme not in SCHEMES:
        raise InvalidRequestError(
            f"unsupported URI scheme {parts.scheme or '(none)'!r} in {whole!r}; expected meshmq://host:port"
        )
    if parts.path not in ("", "/"):
        raise InvalidRequestError(f"unexpected path {parts.path!r} in {whole!r}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        raise InvalidRequestError(f"bad port in {whole!r}: {exc}") from None
    if not host:
        raise InvalidRequestError(f"no host in {whole!r}")
    return Server(host, port or DEFAULT_PORT), parts.query, unquote(parts.username or ""), unquote(parts.password or "")


def _parse_etcd(uri: str, whole: str) -> tuple[EtcdDiscovery, str]:
    """`etcd://h:p[,h:p]/cluster?discovery-options` -> (discovery, the query's other options)."""
    parts = urlsplit(uri)
    if not parts.netloc:
        raise InvalidRequestError(f"no etcd endpoint in {whole!r}; expected etcd://host:2379/cluster-name")
    endpoints = tuple(e.strip() for e in parts.netloc.split(",") if e.strip())
    for e in endpoints:
        host, sep, port = e.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise InvalidRequestError(f"bad etcd endpoint {e!r} in {whole!r}; expected host:port")
    cluster = parts.path.strip("/")
    if not cluster or "/" in cluster:
        raise InvalidRequestError(f"{whole!r} names no cluster; expected etcd://host:2379/cluster-name")
    values, rest = {}, []
    for key, raw in parse_qsl(parts.query, keep_blank_values=True):
        if key in _DISCOVERY_OPTIONS:
            if not raw.lstrip("-").isdigit():
                raise InvalidRequestError(f"URI option {key}={raw!r}: expected an integer (ms)")
            values[_DISCOVERY_OPTIONS[key]] = int(raw)
        else:
            rest.append(f"{key}={raw}")
    found = EtcdDiscovery(endpoints, cluster, **values)
    if found.initial_wait_timeout < 0:
        raise InvalidRequestError("URI option initialWaitTimeout must not be negative")
    if found.refresh_timeout < ETCD_MIN_REFRESH_TIMEOUT:
        raise InvalidRequestError(
            f"URI option refreshTimeout must be at least {ETCD_MIN_REFRESH_TIMEOUT} ms (etcd's smallest lease)"
        )
    return found, "&".join(rest)


def _parse_discovery(text_: str, whole: str) -> ParsedURI:
    if text_.startswith("meshmq+etcd://"):
        found, query = _parse_etcd("etcd://" + text_[len("meshmq+etcd://") :], whole)
        return ParsedURI((), parse_options(query), found)
    inner = text_[len("discovery://") :]
    if not inner.startswith("(") or ")" not in inner:
        raise InvalidRequestError(f"expected discovery://(etcd://host:2379/cluster-name)?options, got {whole!r}")
    close = inner.rfind(")")
    agent, rest = inner[1:close], inner[close + 1 :]
    if not agent.startswith("etcd://"):
        raise InvalidRequestError(f"unsupported discovery agent in {whole!r}; meshmq discovers through etcd://")
    if rest and not rest.startswith("?"):
        raise InvalidRequestError(f"unexpected {rest!r} after the discovery agent in {whole!r}")
    found, agent_rest = _parse_etcd(agent, whole)
    if agent_rest:
        raise InvalidRequestError(
            f"transport options inside the discovery agent of {whole!r} ({agent_rest}): put them after the parenthesis"
        )
    return ParsedURI((), parse_options(rest[1:]), found)


# ActiveMQ's failover transport options: their defaults are defaults.FAILOVER_TRANSPORT_DEFAULTS
# (mapped in _failover_options).
_FAILOVER_ALIASES = {"backOffMultiplier": "reconnectDelayExponent"}
# Accepted only at their defaults (false / empty), each refused with why.
_FAILOVER_UNSUPPORTED = {
    "rebalanceClusterClients": "it is a node setting (as in ActiveMQ, a transportConnector attribute): set "
    "rebalance-cluster-clients: true in the nodes' config, and clients with updateClusterClients=true follow it",
    "priorityBackup": "a session stays on the node it failed over to until that node fails",
    "priorityURIs": "a session stays on the node it failed over to until that node fails",
}


def _failover_options(query: str, whole: str) -> tuple[str, bool]:
    """ActiveMQ's failover options in `query` -> (the same as meshmq client options, backup)."""
    given = {}
    rest = []
    for key, raw in parse_qsl(query, keep_blank_values=True):
        key = _FAILOVER_ALIASES.get(key, key)
        if key in FAILOVER_TRANSPORT_DEFAULTS:
            given[key] = raw
        elif key in _FAILOVER_UNSUPPORTED:
            if raw.lower() not in ("false", ""):
                raise InvalidRequestError(
                    f"failover option {key}={raw} in {whole!r} is not supported: {_FAILOVER_UNSUPPORTED[key]}"
                )
        else:
            rest.append(f"{key}={raw}")
    o = {**FAILOVER_TRANSPORT_DEFAULTS, **given}

    def value(name: str, kind):
        raw = o[name]
        if kind is bool:
            if raw.lower() in ("true", "false"):
                return raw.lower() == "true"
            raise InvalidRequestError(f"failover option {name}={raw!r} in {whole!r}: expected true or false")
        try:
            return kind(raw)
        except ValueError:
            raise InvalidRequestError(f"failover option {name}={raw!r} in {whole!r}: expected a number") from None

    startup = value("startupMaxReconnectAttempts", int)  # -1: unlimited; n: n retries after the first try
    mapped = {
        "connectionLoadBalancingPolicyClassName": "Random" if value("randomize", bool) else "FirstElement",
        "reconnectAttempts": value("maxReconnectAttempts", int),
        "initialConnectAttempts": -1 if startup == -1 else startup + 1,
        "retryInterval": value("initialReconnectDelay", int),
        "maxRetryInterval": value("maxReconnectDelay", int),
        "retryIntervalMultiplier": value("reconnectDelayExponent", float) if value("useExponentialBackOff", bool) else 1.0,
        "callFailoverTimeout": value("timeout", int),
        "useTopologyForLoadBalancing": value("updateClusterClients", bool),
    }
    pairs = [f"{k}={v}" for k, v in mapped.items()] + rest  # meshmq options given as well win
    return "&".join(pairs), value("backup", bool)


def _parse_failover(text_: str, whole: str) -> ParsedURI:
    inner = text_[len("failover:") :]
    if inner.startswith("//"):
        inner = inner[2:]
    if not inner.startswith("(") or ")" not in inner:
        raise InvalidRequestError(
            f"expected failover:(meshmq://h1:{ACCEPTOR_PORT},meshmq://h2:{ACCEPTOR_PORT + 1})?options, got {whole!r}"
        )
    close = inner.rfind(")")
    rest = inner[close + 1 :]
    if rest and not rest.startswith("?"):
        raise InvalidRequestError(f"unexpected {rest!r} after the server list in {whole!r}")
    query, backup = _failover_options(rest[1:], whole)
    listed = _parse_uri(f"({inner[1:close]})?{query}")
    return replace(listed, any_node_failover=True, warm_backup=backup)


def _check_discovery_credentials(parsed: ParsedURI) -> ParsedURI:
    """A discovery URI names no node the user vouches for: every node comes from
    announcements. Without TLS none of them can be verified, so none may get the password."""
    if not topology_is_verified(parsed.options):
        raise InvalidRequestError(
            "a discovery URI with a username needs sslEnabled=true: without TLS nothing verifies the nodes "
            "found in etcd (anyone who can write there can announce one), so none may receive the password. "
            "Add sslEnabled=true with a trustStorePath holding the cluster's CA, or name the nodes yourself: "
            f"(meshmq://user:password@h1:{ACCEPTOR_PORT},meshmq://h2:{ACCEPTOR_PORT})"
        )
    return parsed


_USERINFO_PASSWORD = re.compile(r"(://[^:/@\s'\"]*:)[^@\s'\"]*@")
_PASSWORD_OPTION = re.compile(r"(password=)[^&\s'\"]*", re.IGNORECASE)


def redact(text: str) -> str:
    """`text` with every password in a URI it quotes replaced by ***."""
    return _PASSWORD_OPTION.sub(r"\1***", _USERINFO_PASSWORD.sub(r"\1***@", text))


def parse_uri(uri: str) -> ParsedURI:
    """Parse a meshmq URI (one server, a bracketed list, or discovery); InvalidRequestError
    says what is wrong, quoting the URI with its password masked (errors end up in logs)."""
    try:
        return _parse_uri(uri)
    except InvalidRequestError as exc:
        raise InvalidRequestError(redact(str(exc))) from None


def _parse_uri(uri: str) -> ParsedURI:
    if not isinstance(uri, str) or not uri.strip():
        raise InvalidRequestError("empty connection URI; expected meshmq://host:port")
    text_ = uri.strip()
    if text_.startswith("failover:"):
        return _parse_failover(text_, uri)
    if text_.startswith(("meshmq+etcd://", "discovery://")):
        return _check_discovery_credentials(_parse_discovery(text_, uri))
    if text_.startswith("("):
        close = text_.find(")")
        if close < 0:
            raise InvalidRequestError(f"unclosed '(' in {uri!r}; expected (meshmq://h1:p1,meshmq://h2:p2)?options")
        items = [i for i in text_[1:close].split(",") if i.strip()]
        if not items:
            raise InvalidRequestError(f"empty server list in {uri!r}")
        rest = text_[close + 1 :]
        if rest and not rest.startswith("?"):
            raise InvalidRequestError(f"unexpected {rest!r} after the server list in {uri!r}")
        query = rest[1:]
    else:
        items, query = [text_], None
    servers, user, password = [], "", ""
    for item in items:
        server, item_query, u, pw = _parse_server(item, uri)
        if item_query and query is not None:
            raise InvalidRequestError(
                f"options inside the server list of {uri!r}: put them after the closing parenthesis"
            )
        if query is None:
            query = item_query
        servers.append(server)
        user, password = user or u, password or pw
    opts = parse_options(query or "")
    if user:
        opts = replace(opts, username=user, password=password)
    return ParsedURI(tuple(servers), opts)
