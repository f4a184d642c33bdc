"""Load a node's YAML configuration file, or say exactly what is wrong with it.

Every problem is reported as ``file:line: dotted.key: message``, all of them at
once, one per line::

    node.yaml:7: acceptors[0].prot: unknown key (did you mean 'port'?)
    node.yaml:12: address-settings."orders.#".max-delivery-attempts: Input should be a valid integer, ...
"""

from __future__ import annotations

import difflib
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from meshmq.config import defaults
from meshmq.config.models import BrokerConfig, ConfigIssues
from meshmq.config.yaml_source import KeyPath, YamlDocument, YamlSourceError, format_key_path, load_yaml

__all__ = [
    "ConfigError",
    "ConfigProblem",
    "default_dev_config_yaml",
    "effective_config_yaml",
    "format_key_path",
    "load_config",
    "load_config_text",
]

_SECRET_MASK = "********"


@dataclass(frozen=True)
class ConfigProblem:
    source: str
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


class ConfigError(ValueError):
    """The configuration is invalid; ``problems`` holds every problem found.

    ``str(error)`` is one problem per line, each naming the file, line and key.
    """

    def __init__(self, problems: list[ConfigProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def load_config(path: str | Path) -> BrokerConfig:
    """Load the YAML file at ``path``; relative paths in it are relative to its directory."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([ConfigProblem(str(path), None, "", f"cannot read configuration: {exc}")]) from None
    return load_config_text(text, source=str(path), base_dir=path.resolve().parent)


def load_config_text(text: str, source: str = "<string>", *, base_dir: str | Path | None = None) -> BrokerConfig:
    """Load configuration from YAML text. An empty text gives all defaults.

    ``source`` names the text in error messages; relative paths in the
    configuration are resolved against ``base_dir`` (default: the working directory).
    """
    try:
        document = load_yaml(text)
    except YamlSourceError as exc:
        raise ConfigError(
            [ConfigProblem(source, p.line, format_key_path(p.path), p.message) for p in exc.problems]
        ) from None
    data = {} if document.data is None else document.data
    if not isinstance(data, dict):
        message = "the configuration must be a mapping of keys to values"
        raise ConfigError([ConfigProblem(source, document.line_for(()), "", message)])
    context = {"base_dir": Path(base_dir) if base_dir is not None else Path.cwd()}
    try:
        return BrokerConfig.model_validate(data, context=context, by_alias=True, by_name=False)
    except ValidationError as exc:
        raise ConfigError(_problems(exc, document, source)) from None


def _problems(exc: ValidationError, document: YamlDocument, source: str) -> list[ConfigProblem]:
    result = [
        ConfigProblem(source, document.line_for(loc), format_key_path(loc), msg)
        for loc, msg in validation_problems(exc, BrokerConfig)
    ]
    return sorted(result, key=lambda p: p.line or 0)


def validation_problems(exc: ValidationError, root: type[BaseModel]) -> list[tuple[KeyPath, str]]:
    """pydantic errors as (key path, message) pairs worded for a YAML file (any root model)."""
    problems: list[tuple[KeyPath, str]] = []
    errors = exc.errors(include_url=False)
    for error in errors:
        loc: KeyPath = tuple(error["loc"])
        if error["type"] == "too_short" and any(len(e["loc"]) > len(loc) and tuple(e["loc"][:len(loc)]) == loc
                                                for e in errors):
            continue  # "at least 1 item after validation": its items' own errors say why
        message = error["msg"]
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, ConfigIssues):
            problems.extend((loc + tuple(rel), msg) for rel, msg in cause.issues)
            continue
        if isinstance(cause, Exception):
            message = str(cause)
        if loc and loc[-1] == "[key]":
            loc, message = loc[:-1], f"invalid key: {message}"
        elif error["type"] == "extra_forbidden":
            message = _unknown_key_message(root, loc)
        elif error["type"] == "missing":
            message = "required key is missing"
        problems.append((loc, message))
    return problems


def _unknown_key_message(root: type[BaseModel], loc: KeyPath) -> str:
    model = _model_at(root, loc[:-1])
    # A model whose keys are spelt another way than ours (network connectors: ActiveMQ's camelCase) says so itself.
    hint = getattr(model, "unknown_key_message", None)
    special = hint(str(loc[-1])) if hint is not None else None
    if special is not None:
        return special
    allowed = [f.alias or n for n, f in model.model_fields.items()] if model is not None else []
    if not allowed:
        return "unknown key"
    close = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.6)
    if close:
        return f"unknown key (did you mean {close[0]!r}?)"
    return "unknown key (expected one of: " + ", ".join(allowed) + ")"


def _model_at(root: type[BaseModel], loc: KeyPath) -> type[BaseModel] | None:
    """The model whose keys are at `loc` below `root`, or None (not a model there)."""
    tp: Any = root
    for part in loc:
        tp = _unwrap(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            field = next((f for n, f in tp.model_fields.items() if (f.alias or n) == part), None)
            if field is None:
                return None
            tp = field.annotation
            continue
        args, origin = typing.get_args(tp), typing.get_origin(tp)
        if origin in (list, tuple) and args:
            tp = args[0]
        elif origin is dict and len(args) == 2:
            tp = args[1]
        else:
            return None
    tp = _unwrap(tp)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def _unwrap(tp: Any) -> Any:
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            options = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(options) != 1:
                return tp
            tp = options[0]
        else:
            return tp


def effective_config_yaml(config: BrokerConfig, *, show_secrets: bool = False, computed: bool = False) -> str:
    """The whole configuration in force, defaults included, as YAML with the
    broker.xml key names. Passwords (users, cluster-password, etcd, network connectors, journal URL) are masked unless
    ``show_secrets``; with it, the text loads back to an equal config. ``computed`` (what a node prints at
    start) writes the defaults computed on this machine (global-max-size left out) as the number in force,
    with a comment saying where it came from; without it they stay null, as in the file."""
    data = config.model_dump(mode="json", by_alias=True)
    note = None
    if computed and config.global_max_size is None:
        resolved = defaults.effective_global_max_size(None)
        data["global-max-size"], note = resolved.bytes, resolved.why
    if not show_secrets:
        for user in data["users"]:
            user["password"] = _SECRET_MASK
        if data["cluster-password"] is not None:
            data["cluster-password"] = _SECRET_MASK
        for connector in (data.get("network-connectors") or {}).values():
            if connector.get("password") is not None:
                connector["password"] = _SECRET_MASK
        for group in (data.get("discovery-groups") or {}).values():
            etcd = group.get("etcd") or {}
            if etcd.get("password") is not None:
                etcd["password"] = _SECRET_MASK
        if data["journal"]["url"] is not None:
            from sqlalchemy.engine import make_url

            url = make_url(data["journal"]["url"])
            if url.password is not None:
                data["journal"]["url"] = url.render_as_string(hide_password=True)
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
    if note is not None:
        line = f"global-max-size: {data['global-max-size']}\n"
        text = text.replace(line, f"{line[:-1]}  # {note}\n", 1)
    return text


def _scalar(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True).removesuffix("\n").removesuffix("\n...")


def default_dev_config_yaml(
    *,
    name: str = defaults.NAME,
    host: str = defaults.ACCEPTOR_HOST,
    port: int = defaults.ACCEPTOR_PORT,
    data_directory: str = defaults.DATA_DIRECTORY,
    console_port: int = defaults.GATEWAY_LISTEN_PORT,
) -> str:
    """The starter configuration ``meshmq up`` writes (like ``artemis create``):
    one acceptor, the SQLite journal under data-directory, and DLQ and
    ExpiryQueue addresses that the catch-all ``"#"`` settings point at."""
    dla, expiry = defaults.DEV_DEAD_LETTER_ADDRESS, defaults.DEV_EXPIRY_ADDRESS
    b = _scalar
    return f"""\
# meshmq node configuration. Keys mirror Artemis broker.xml; every key is
# optional and takes the Artemis default when left out (meshmq/config/defaults.py).
name: {b(name)}
persistence-enabled: {b(defaults.PERSISTENCE_ENABLED)}
data-directory: {b(data_directory)}    # the SQLite journal and large files live here
id-cache-size: {b(defaults.ID_CACHE_SIZE)}
persist-id-cache: {b(defaults.PERSIST_ID_CACHE)}
message-expiry-scan-period: {b(defaults.MESSAGE_EXPIRY_SCAN_PERIOD)}   # ms
max-disk-usage: {b(defaults.MAX_DISK_USAGE)}   # percent of the journal's disk in use past which producers are blocked; -1 = no check
disk-scan-period: {b(defaults.DISK_SCAN_PERIOD)}   # ms between two readings of that disk
# security-enabled: false   # the default: no login, for a trial on this machine. A node listening
#                           # beyond loopback starts with security off only when this is written out.

acceptors:
  - name: {b(defaults.ACCEPTOR_NAME)}
    host: {b(host)}
    port: {b(port)}

journal:
  url: null            # null = sqlite file <data-directory>/{defaults.JOURNAL_SQLITE_FILE}
  sync: {b(defaults.JOURNAL_SYNC)}           # confirm only after the commit reached disk
  event-log-enabled: {b(defaults.JOURNAL_EVENT_LOG_ENABLED)}   # the event log analytics reads: two rows per durable message
  event-retention: {defaults.JOURNAL_EVENT_RETENTION}   # ms the event log (analytics) keeps an event (7 days); -1 = for ever

metrics:               # Prometheus GET /metrics on HTTP (docs/metrics.md)
  enabled: {b(defaults.METRICS_ENABLED)}
  host: {b(defaults.METRICS_HOST)}
  port: {b(defaults.METRICS_PORT)}              # 0 = pick a free port (in the log line and the ready file)

addresses:
  {b(dla)}:
    anycast:
      - name: {b(dla)}
  {b(expiry)}:
    anycast:
      - name: {b(expiry)}

address-settings:
  # "#" matches every address; more specific matches override it key by key.
  "#":
    dead-letter-address: {b(dla)}
    expiry-address: {b(expiry)}
    expiry-delay: {b(defaults.EXPIRY_DELAY)}
    max-delivery-attempts: {b(defaults.MAX_DELIVERY_ATTEMPTS)}
    redelivery-delay: {b(defaults.REDELIVERY_DELAY)}
    redistribution-delay: {b(defaults.REDISTRIBUTION_DELAY)}
    auto-create-queues: {b(defaults.AUTO_CREATE_QUEUES)}
    auto-create-addresses: {b(defaults.AUTO_CREATE_ADDRESSES)}
    auto-delete-queues: {b(defaults.AUTO_DELETE_QUEUES)}
    auto-delete-queues-delay: {b(defaults.AUTO_DELETE_QUEUES_DELAY)}
    auto-delete-queues-message-count: {b(defaults.AUTO_DELETE_QUEUES_MESSAGE_COUNT)}
    auto-delete-addresses: {b(defaults.AUTO_DELETE_ADDRESSES)}
    auto-delete-addresses-delay: {b(defaults.AUTO_DELETE_ADDRESSES_DELAY)}
    default-address-routing-type: {b(defaults.DEFAULT_ADDRESS_ROUTING_TYPE)}
    default-queue-routing-type: {b(defaults.DEFAULT_QUEUE_ROUTING_TYPE)}

# The admin gateway (docs/gateway.md): REST API and web console in this process.
# Dev mode accepts default credentials (no users here: log in as admin / admin);
# for anything but a trial on this machine, configure users and drop dev-mode.
gateway:
  enabled: true
  dev-mode: true
  listen:
    host: {b(host)}
    port: {b(console_port)}
{CLUSTER_CONNECTION_EXAMPLE}{HA_POLICY_EXAMPLE}"""


def _cluster_connection_example() -> str:
    """The cluster-connections section of the starter config, commented out
    (a single node has none), every parameter at its default (docs/clustering.md)."""
    b = _scalar
    d = defaults
    lines = f"""# Cluster connections (docs/clustering.md): uncomment to link this node to others.
connectors:
  other-node: 127.0.0.1:61617
cluster-connections:
  my-cluster:
    address: {b(d.CC_ADDRESS)}                       # prefixes, comma-separated, !excluded; "" = all
    connector-ref: null                # null = the first acceptor
    check-period: {b(d.CC_CHECK_PERIOD)}
    connection-ttl: {b(d.CC_CONNECTION_TTL)}
    min-large-message-size: {b(d.CC_MIN_LARGE_MESSAGE_SIZE)}
    call-timeout: {b(d.CC_CALL_TIMEOUT)}
    retry-interval: {b(d.CC_RETRY_INTERVAL)}
    retry-interval-multiplier: {b(d.CC_RETRY_INTERVAL_MULTIPLIER)}
    max-retry-interval: {b(d.CC_MAX_RETRY_INTERVAL)}
    initial-connect-attempts: {b(d.CC_INITIAL_CONNECT_ATTEMPTS)}
    reconnect-attempts: {b(d.CC_RECONNECT_ATTEMPTS)}
    use-duplicate-detection: {b(d.CC_USE_DUPLICATE_DETECTION)}
    message-load-balancing: {b(d.CC_MESSAGE_LOAD_BALANCING)}   # OFF, STRICT, ON_DEMAND, OFF_WITH_REDISTRIBUTION
    max-hops: {b(d.CC_MAX_HOPS)}
    confirmation-window-size: {b(d.CC_CONFIRMATION_WINDOW_SIZE)}
    producer-window-size: {b(d.CC_PRODUCER_WINDOW_SIZE)}
    call-failover-timeout: {b(d.CC_CALL_FAILOVER_TIMEOUT)}
    notification-interval: {b(d.CC_NOTIFICATION_INTERVAL)}
    notification-attempts: {b(d.CC_NOTIFICATION_ATTEMPTS)}
    discovery-group-ref: null          # a discovery group's name, and/or:
    static-connectors: [other-node]
    allow-direct-connections-only: {b(d.CC_ALLOW_DIRECT_CONNECTIONS_ONLY)}
    client-id: null
"""
    return _commented_out(lines)


def _ha_policy_example() -> str:
    """The shared-store ha-policy of the starter config, commented out, at its defaults (docs/ha.md)."""
    b = _scalar
    d = defaults
    lines = f"""# Shared store (docs/ha.md): uncomment on a live and its backups, with one PostgreSQL journal.url.
journal:
  url: postgresql+psycopg://meshmq@db-host/meshmq
  jdbc-lock-renew-period: {b(d.JDBC_LOCK_RENEW_PERIOD)}
  jdbc-lock-expiration: {b(d.JDBC_LOCK_EXPIRATION)}      # a write session idle in a transaction for half of it is ended
ha-policy:
  shared-store:
    master:                            # the live; a backup has slave: instead
      failover-on-shutdown: {b(d.HA_FAILOVER_ON_SHUTDOWN)}
      wait-for-activation: {b(d.HA_WAIT_FOR_ACTIVATION)}
    # slave:
    #   allow-failback: {b(d.HA_ALLOW_FAILBACK)}
    #   failover-on-shutdown: {b(d.HA_FAILOVER_ON_SHUTDOWN)}
    #   restart-backup: {b(d.HA_RESTART_BACKUP)}
"""
    return _commented_out(lines)


def _replication_example() -> str:
    """The classic replication ha-policy, commented out, at its defaults (docs/ha.md)."""
    b = _scalar
    d = defaults
    lines = f"""# Replication (docs/ha.md): each node keeps its own SQLite journal; a backup finds its live
# through the cluster connection's static-connectors. Classic roles vote among the lives:
ha-policy:
  replication:
    master:                            # a backup has slave: instead
      check-for-live-server: {b(d.HA_CHECK_FOR_LIVE_SERVER)}
      vote-on-replication-failure: {b(d.HA_VOTE_ON_REPLICATION_FAILURE)}
      quorum-size: {b(d.HA_QUORUM_SIZE)}
      vote-retries: {b(d.HA_VOTE_RETRIES)}
      vote-retry-wait: {b(d.HA_VOTE_RETRY_WAIT)}
      quorum-vote-wait: {b(d.HA_QUORUM_VOTE_WAIT)}
      initial-replication-sync-timeout: {b(d.HA_INITIAL_REPLICATION_SYNC_TIMEOUT)}
    # slave:
    #   max-saved-replicated-journals-size: {b(d.HA_MAX_SAVED_REPLICATED_JOURNALS_SIZE)}
    #   allow-failback: {b(d.HA_CLASSIC_ALLOW_FAILBACK)}
    #   restart-backup: {b(d.HA_RESTART_BACKUP)}
    # Pluggable quorum on etcd: primary (a backup has backup:) with a manager:
    # primary:
    #   manager:
    #     properties:
    #       connect-string: 127.0.0.1:2379
    #       session-ms: {b(d.HA_MANAGER_SESSION_MS)}
    #       session-percent: {b(d.HA_MANAGER_SESSION_PERCENT)}
    #       connection-ms: {b(d.HA_MANAGER_CONNECTION_MS)}
    #       retries: {b(d.HA_MANAGER_RETRIES)}
    #       retries-ms: {b(d.HA_MANAGER_RETRIES_MS)}
    #       namespace: {b(d.HA_MANAGER_NAMESPACE)}
"""
    return _commented_out(lines)


def _commented_out(lines: str) -> str:
    """A section of the starter config as comments (lines already comments stay as they are)."""
    return "\n" + "".join(f"# {line}\n" if line and not line.startswith("#") else f"{line}\n"
                           for line in lines.splitlines())


CLUSTER_CONNECTION_EXAMPLE = _cluster_connection_example()
HA_POLICY_EXAMPLE = _ha_policy_example() + _replication_example()
