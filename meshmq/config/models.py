"""Pydantic models of one node's configuration file.

Keys are the hyphenated broker.xml names (``max-delivery-attempts``); Python
attributes are the snake_case equivalents. Every default comes from
``defaults.py``. Models are frozen and reject unknown keys.

Conventions a reader of the YAML should know:

* A key set to null (or left empty) takes its default, so ``journal:`` with
  every child commented out is the same as no ``journal`` key. The exceptions
  are ``anycast:`` / ``multicast:`` under an address, where an empty value
  means "this routing type, no queues", and the per-match address-settings
  fields, where null means "not set here" (a less specific match decides).
* Relative paths (``data-directory``, ``cert-path``, ``key-path``,
  ``trust-path``, a relative SQLite file in ``journal.url``) are relative to the
  directory of the config file (to the working directory for config built in
  code or from a string) and are stored absolute.

A check that involves several keys raises ``ConfigIssues``, which carries the
path of each offending key below the model, so the loader can name the exact
key and line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    AliasChoices,
    AliasGenerator,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from meshmq.config import defaults
from meshmq.config.wildcards import WildcardSyntax, match_syntax_problem
from meshmq.config.yaml_source import format_key_path
from meshmq.config.base import (
    ConfigIssues, ConfigModel, Millis, NonEmptyStr, RelPath, camel, kebab, parse_host_port, raise_issues,
)
from meshmq.config.discovery import (
    BroadcastGroup, DiscoveryGroup, EtcdSettings, valid_name_segment,
)
from meshmq.config.network import NetworkConnector, TreeConnector, network_connector_issues
from meshmq.security.passwords import check_stored, is_hashed

# ConfigIssues and valid_name_segment are not used here: imported so that the
# rest of the tree keeps importing every config name from this module.


def _base_dir(info: ValidationInfo) -> Path:
    context = info.context if isinstance(info.context, dict) else {}
    base = context.get("base_dir")
    return Path(base) if base is not None else Path.cwd()


def _absolute(value: Path, info: ValidationInfo) -> Path:
    value = value.expanduser()
    return value if value.is_absolute() else (_base_dir(info) / value).resolve()


def _existing_file(value: Path, info: ValidationInfo) -> Path:
    value = _absolute(value, info)
    if not value.is_file():
        raise ValueError(f"file not found: {value}")
    return value


def _upper(value: Any) -> Any:
    return value.strip().upper() if isinstance(value, str) else value


def _not_zero(what: str):
    def check(value: int | None) -> int | None:
        if value == 0:
            raise ValueError(f"0 is not allowed; use -1 for {what} or a positive number")
        return value

    return check


def _valid_match(pattern: str) -> str:
    problem = match_syntax_problem(pattern)
    if problem is not None:
        raise ValueError(problem)
    return pattern


def _none_values_to_empty(value: Any) -> Any:
    # `DLQ:` with nothing under it is an address with default settings.
    if isinstance(value, dict):
        return {k: ({} if v is None else v) for k, v in value.items()}
    return value


Port = Annotated[int, Field(ge=0, le=65535)]
ExistingFile = Annotated[Path, AfterValidator(_existing_file)]
MatchString = Annotated[str, AfterValidator(_valid_match)]
RoutingType = Annotated[Literal["ANYCAST", "MULTICAST"], BeforeValidator(_upper)]


AddressFullPolicy = Annotated[Literal["PAGE", "BLOCK", "FAIL", "DROP"], BeforeValidator(_upper)]
SlowConsumerPolicy = Annotated[Literal["KILL", "NOTIFY"], BeforeValidator(_upper)]

_BYTE_UNITS = {"": 1, "K": 1024, "KB": 1024, "KIB": 1024, "M": 1024**2, "MB": 1024**2, "MIB": 1024**2,
               "G": 1024**3, "GB": 1024**3, "GIB": 1024**3}


def _byte_size(value: Any) -> Any:
    """Bytes as an integer or with a unit, as broker.xml takes them ("10M", "512KiB", "1GB"; powers of 1024)."""
    if isinstance(value, str):
        text = value.strip().upper().replace(" ", "")
        number = text.rstrip("KMGIB")
        unit = text[len(number):]
        if unit not in _BYTE_UNITS or not number.lstrip("-").isdigit():
            raise ValueError(f"{value!r} is not a size: a number of bytes, optionally with K, M or G (e.g. 10M)")
        return int(number) * _BYTE_UNITS[unit]
    return value


# --- listeners (acceptors and the journal's own listener) ------------------


class Listener(ConfigModel):
    """A gRPC listener: the acceptor keys without a name (broker.xml ``<acceptor>`` parameters)."""

    host: NonEmptyStr = defaults.ACCEPTOR_HOST
    port: Port = defaults.ACCEPTOR_PORT
    ssl_enabled: bool = defaults.SSL_ENABLED
    cert_path: ExistingFile | None = None
    key_path: ExistingFile | None = None
    trust_path: ExistingFile | None = None
    need_client_auth: bool = defaults.NEED_CLIENT_AUTH

    @model_validator(mode="after")
    def _check_tls(self) -> Listener:
        issues: list[tuple[RelPath, str]] = []
        if self.ssl_enabled:
            if self.cert_path is None:
                issues.append((("cert-path",), "required when ssl-enabled is true"))
            if self.key_path is None:
                issues.append((("key-path",), "required when ssl-enabled is true"))
        if self.need_client_auth:
            if not self.ssl_enabled:
                issues.append((("need-client-auth",), "requires ssl-enabled: true"))
            if self.trust_path is None:
                why = "required when need-client-auth is true (the CA that signs client certificates)"
                issues.append((("trust-path",), why))
        raise_issues(issues)
        return self


class Acceptor(Listener):
    """Where the router's gRPC server listens (broker.xml ``<acceptor>``)."""

    name: NonEmptyStr = defaults.ACCEPTOR_NAME


class JournalListen(Listener):
    """Where ``meshmq serve journal`` listens."""

    host: NonEmptyStr = defaults.JOURNAL_LISTEN_HOST
    port: Port = defaults.JOURNAL_LISTEN_PORT


# --- journal ---------------------------------------------------------------

_JOURNAL_BACKENDS = ("sqlite", "postgresql")


class Journal(ConfigModel):
    """The journal service this node stores its state in."""

    url: str | None = defaults.JOURNAL_URL
    address: str | None = defaults.JOURNAL_ADDRESS
    sync: bool = defaults.JOURNAL_SYNC
    max_batch_records: Annotated[int, Field(ge=1)] = defaults.JOURNAL_MAX_BATCH_RECORDS
    listen: JournalListen = Field(default_factory=JournalListen)
    # Client side: how this router reaches a remote journal (address).
    ssl_enabled: bool = defaults.JOURNAL_SSL_ENABLED
    trust_path: ExistingFile | None = None
    # Client certificate, for a journal listener with need-client-auth.
    cert_path: ExistingFile | None = None
    key_path: ExistingFile | None = None
    # Shared store (ha-policy shared-store): the live's lease on the store (Artemis's JDBC lock).
    jdbc_lock_renew_period: Annotated[int, Field(gt=0)] = defaults.JDBC_LOCK_RENEW_PERIOD
    jdbc_lock_expiration: Annotated[int, Field(gt=0)] = defaults.JDBC_LOCK_EXPIRATION
    # The event log analytics reads (docs/journal-schema.md): whether it is written,
    # and after how long its events are deleted (still pruned when no longer written).
    event_log_enabled: bool = defaults.JOURNAL_EVENT_LOG_ENABLED
    event_retention: Annotated[int, Field(ge=-1), AfterValidator(_not_zero("keeping every event"))] = (
        defaults.JOURNAL_EVENT_RETENTION)
    event_retention_scan_period: Annotated[int, Field(gt=0)] = defaults.JOURNAL_EVENT_RETENTION_SCAN_PERIOD

    @property
    def stuck_transaction_timeout(self) -> int:
        """How long (ms) PostgreSQL lets one of this node's write sessions sit
        idle inside a transaction before ending it: half the lease's
        `jdbc-lock-expiration`. A node frozen or cut off between a
        transaction's statements keeps that transaction's row locks (the lease
        row, the epoch row) until PostgreSQL notices the connection is gone —
        TCP keep-alive, hours — and a shared-store backup could not take over
        meanwhile; a healthy node's transactions are idle for milliseconds."""
        return max(100, self.jdbc_lock_expiration // 2)

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            url = make_url(value)
        except (ArgumentError, ValueError) as exc:
            raise ValueError(f"not a valid SQLAlchemy URL: {exc}") from None
        backend = url.get_backend_name()
        if backend not in _JOURNAL_BACKENDS:
            raise ValueError(f"unsupported database {backend!r}; use sqlite:///path or postgresql+psycopg://...")
        if backend == "sqlite" and url.database and url.database != ":memory:" and not url.database.startswith("file:"):
            path = Path(url.database).expanduser()
            if not path.is_absolute():
                return url.set(database=str(_absolute(path, info))).render_as_string(hide_password=False)
        return value

    @field_validator("address")
    @classmethod
    def _check_address(cls, value: str | None) -> str | None:
        if value is not None:
            parse_host_port(value)
        return value

    @model_validator(mode="after")
    def _check_client_cert(self) -> Journal:
        issues: list[tuple[RelPath, str]] = []
        if self.cert_path is not None and self.key_path is None:
            issues.append((("key-path",), "required when cert-path is set"))
        if self.key_path is not None and self.cert_path is None:
            issues.append((("cert-path",), "required when key-path is set"))
        raise_issues(issues)
        return self


# --- addresses and queues --------------------------------------------------


def _property_name_or_empty(value: str) -> str:
    if any(ord(ch) < 0x20 or ch == "\x7f" for ch in value):
        raise ValueError(f"{value!r} contains control characters")
    return value


def _property_name(value: str) -> str:
    if not value:
        raise ValueError("is empty (leave it out for an ordinary queue)")
    return _property_name_or_empty(value)


class Queue(ConfigModel):
    """A queue under an address (broker.xml ``<queue>``)."""

    name: NonEmptyStr
    durable: bool = defaults.QUEUE_DURABLE
    # A selector (JMS/Artemis grammar), checked here so `config check` reports it.
    filter: str | None = None
    # Artemis's queue attributes (services/router/queue_kinds.py); None = the
    # address settings' default-last-value-key, default-non-destructive, default-exclusive-queue.
    last_value_key: Annotated[str, AfterValidator(_property_name)] | None = None
    # Legacy: true = last-value-key _AMQ_LVQ_NAME.
    last_value: bool | None = None
    non_destructive: bool | None = None
    exclusive: bool | None = None
    # Message groups (services/router/message_groups.py); None = the address settings' default-group-*.
    group_rebalance: bool | None = None
    group_rebalance_pause_dispatch: bool | None = None
    group_buckets: Annotated[int, Field(ge=-1, le=2**31 - 1)] | None = None
    group_first_key: Annotated[str, AfterValidator(_property_name)] | None = None

    @model_validator(mode="after")
    def _one_last_value_key(self) -> Queue:
        if self.last_value and self.last_value_key not in (None, "_AMQ_LVQ_NAME"):
            raise ValueError(
                f"last-value: true means last-value-key _AMQ_LVQ_NAME, not {self.last_value_key!r}: give one of them"
            )
        return self

    @field_validator("filter")
    @classmethod
    def _filter_compiles(cls, value: str | None) -> str | None:
        if value:
            from meshmq.selector import SelectorError, compile_selector

            try:
                compile_selector(value)
            except SelectorError as exc:
                raise ValueError(str(exc)) from None
        return value


class Address(ConfigModel):
    """An address; the presence of ``anycast`` / ``multicast`` gives its routing types."""

    _null_is_empty_list: ClassVar[frozenset[str]] = frozenset({"anycast", "multicast"})

    anycast: tuple[Queue, ...] | None = None
    multicast: tuple[Queue, ...] | None = None

    @property
    def routing_types(self) -> frozenset[str]:
        return frozenset(
            kind for kind, queues in (("ANYCAST", self.anycast), ("MULTICAST", self.multicast)) if queues is not None
        )

    @model_serializer(mode="wrap")
    def _omit_absent_routing_types(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


class WildcardAddresses(ConfigModel):
    """The ``wildcard-addresses`` key (Artemis's): whether queues on an address
    with wildcards are bound to every matching address, and the wildcard
    characters (services/router/wildcard_routing.py)."""

    routing_enabled: bool = defaults.WILDCARD_ROUTING_ENABLED
    delimiter: str = defaults.WILDCARD_DELIMITER
    any_words: str = defaults.WILDCARD_ANY_WORDS
    single_word: str = defaults.WILDCARD_SINGLE_WORD

    @property
    def syntax(self) -> WildcardSyntax:
        return WildcardSyntax(self.delimiter, self.any_words, self.single_word)

    @model_validator(mode="after")
    def _valid_syntax(self) -> WildcardAddresses:
        issues: list[tuple[RelPath, str]] = []
        for key in ("delimiter", "any-words", "single-word"):
            char = getattr(self, key.replace("-", "_"))
            if len(char) != 1 or char.isspace():
                issues.append(((key,), f"must be one character that is not a space, got {char!r}"))
        if not issues:
            problem = self.syntax.problem()
            if problem is not None:
                issues.append(((), problem))
        raise_issues(issues)
        return self


class AddressSettings(ConfigModel):
    """Settings for the addresses a match string matches; None = not set here.

    See ``wildcards.py`` for how matches are ordered and ``address_settings.py``
    for how they are merged.
    """

    # "" = explicitly no dead-letter address (overrides a less specific match).
    dead_letter_address: str | None = None
    # "" = explicitly no expiry address.
    expiry_address: str | None = None
    expiry_delay: Annotated[int, Field(ge=-1)] | None = None
    # 0 is refused: Artemis treats it like -1 (never dead-letter), which reads like "no attempts".
    max_delivery_attempts: Annotated[int, Field(ge=-1), AfterValidator(_not_zero("infinite attempts"))] | None = None
    redelivery_delay: Annotated[int, Field(ge=0)] | None = None
    redelivery_delay_multiplier: Annotated[float, Field(ge=0)] | None = None
    # None: redelivery-delay x 10 (Artemis's default), computed once the settings are merged.
    max_redelivery_delay: Annotated[int, Field(ge=0)] | None = None
    redelivery_collision_avoidance_factor: Annotated[float, Field(ge=0, le=1)] | None = None
    redistribution_delay: Annotated[int, Field(ge=-1)] | None = None
    auto_create_queues: bool | None = None
    auto_create_addresses: bool | None = None
    auto_delete_queues: bool | None = None
    # Milliseconds (services/router/auto_delete.py).
    auto_delete_queues_delay: Annotated[int, Field(ge=0)] | None = None
    # -1 = delete whatever the queue holds.
    auto_delete_queues_message_count: Annotated[int, Field(ge=-1)] | None = None
    auto_delete_addresses: bool | None = None
    # Milliseconds.
    auto_delete_addresses_delay: Annotated[int, Field(ge=0)] | None = None
    default_address_routing_type: RoutingType | None = None
    default_queue_routing_type: RoutingType | None = None
    send_to_dla_on_no_route: bool | None = None
    id_cache_size: Annotated[int, Field(gt=0)] | None = defaults.ADDRESS_ID_CACHE_SIZE
    max_size_bytes: Annotated[int, BeforeValidator(_byte_size), Field(ge=-1)] | None = None
    max_size_messages: Annotated[int, Field(ge=-1)] | None = None
    page_size_bytes: Annotated[int, BeforeValidator(_byte_size), Field(gt=0)] | None = None
    address_full_policy: AddressFullPolicy | None = None
    # "" = explicitly none (overrides a less specific match).
    default_last_value_key: Annotated[str, AfterValidator(_property_name_or_empty)] | None = None
    default_last_value_queue: bool | None = None
    default_non_destructive: bool | None = None
    default_exclusive_queue: bool | None = None
    default_group_rebalance: bool | None = None
    default_group_rebalance_pause_dispatch: bool | None = None
    # -1 = every group id, 0 = no grouping, N = hashed into N buckets.
    default_group_buckets: Annotated[int, Field(ge=-1, le=2**31 - 1)] | None = None
    # "" = explicitly none (overrides a less specific match).
    default_group_first_key: Annotated[str, AfterValidator(_property_name_or_empty)] | None = None
    # Messages/s; -1 = no check (services/router/slow_consumers.py).
    slow_consumer_threshold: Annotated[int, Field(ge=-1)] | None = None
    slow_consumer_policy: SlowConsumerPolicy | None = None
    # Seconds.
    slow_consumer_check_period: Annotated[int, Field(gt=0)] | None = None

    @model_serializer(mode="wrap")
    def _omit_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


# --- security --------------------------------------------------------------


def _role_list(value: Any) -> Any:
    # pydantic would say "Input should be a valid tuple", which does not tell
    # an Artemis user that roles="a,b" is a YAML list here.
    if value is None:
        return ()
    if isinstance(value, str):
        names = ", ".join(name.strip() for name in value.split(","))
        raise ValueError(f"expected a list of role names: [{names}], not a string")
    if not isinstance(value, list | tuple):
        raise ValueError("expected a list of role names, e.g. [admins, producers]")
    return value


Roles = Annotated[tuple[NonEmptyStr, ...], BeforeValidator(_role_list)]


def _stored_password(value: str) -> str:
    if is_hashed(value):
        check_stored(value)  # ValueError naming what is wrong; the loader adds the user's key path
    return value


class User(ConfigModel):
    username: NonEmptyStr
    # A hash from `meshmq user hash` (meshmq/security/passwords.py), or plain text (warned at start).
    password: Annotated[str, Field(min_length=1), AfterValidator(_stored_password)]
    # The roles security-settings grant permissions to.
    roles: Roles = ()


def _kebab_or_camel(name: str) -> AliasChoices:
    return AliasChoices(kebab(name), camel(name))


class SecuritySetting(ConfigModel):
    """The roles granted each permission on the addresses a match string
    matches (broker.xml ``<security-setting>``); a permission left out is
    granted to no role.

    Keys are the kebab-case names, or Artemis's ``<permission type=...>``
    names (``createDurableQueue``); the effective config prints kebab-case.
    Only the most specific match applies (``meshmq/security/authorization.py``).
    """

    model_config = ConfigDict(alias_generator=AliasGenerator(alias=kebab, validation_alias=_kebab_or_camel))

    send: Roles = ()
    consume: Roles = ()
    create_address: Roles = ()
    delete_address: Roles = ()
    create_durable_queue: Roles = ()
    delete_durable_queue: Roles = ()
    create_non_durable_queue: Roles = ()
    delete_non_durable_queue: Roles = ()
    manage: Roles = ()
    browse: Roles = ()
    # Read-only management (listing addresses, queues, consumers, cluster state); `manage` implies it.
    view: Roles = ()

    @model_validator(mode="before")
    @classmethod
    def _one_spelling(cls, data: Any) -> Any:
        if isinstance(data, dict):
            raise_issues([
                ((camel(name),), f"the same permission as {kebab(name)}; give one of the two")
                for name in cls.model_fields
                if kebab(name) != camel(name) and kebab(name) in data and camel(name) in data
            ])
        return data


# --- cluster connections -----------------------------------------------------


def _load_balancing(value: Any) -> Any:
    """YAML reads a bare OFF as false: that is the mode OFF. Case does not matter."""
    if value is False:
        return "OFF"
    return value.upper() if isinstance(value, str) else value


Attempts = Annotated[int, Field(ge=-1)]
Window = Annotated[int, BeforeValidator(_byte_size), Field(ge=-1), AfterValidator(_not_zero("no window"))]


class ClusterConnection(ConfigModel):
    """Links to other routers that messages are balanced over (broker.xml
    ``<cluster-connection>``): every parameter of Artemis's, with its default.
    The nodes come from `static-connectors` (names in `connectors`) and/or the
    nodes of `discovery-group-ref`. services/router/cluster/ carries it out."""

    address: str = defaults.CC_ADDRESS
    # The connector other nodes reach this one at (a name in `connectors`); default: the first acceptor.
    connector_ref: NonEmptyStr | None = None
    check_period: Millis = defaults.CC_CHECK_PERIOD
    connection_ttl: Millis = defaults.CC_CONNECTION_TTL
    min_large_message_size: Annotated[int, BeforeValidator(_byte_size), Field(gt=0)] = defaults.CC_MIN_LARGE_MESSAGE_SIZE
    call_timeout: Millis = defaults.CC_CALL_TIMEOUT
    retry_interval: Millis = defaults.CC_RETRY_INTERVAL
    retry_interval_multiplier: Annotated[float, Field(ge=1.0)] = defaults.CC_RETRY_INTERVAL_MULTIPLIER
    max_retry_interval: Millis = defaults.CC_MAX_RETRY_INTERVAL
    initial_connect_attempts: Attempts = defaults.CC_INITIAL_CONNECT_ATTEMPTS
    reconnect_attempts: Attempts = defaults.CC_RECONNECT_ATTEMPTS
    use_duplicate_detection: bool = defaults.CC_USE_DUPLICATE_DETECTION
    message_load_balancing: Annotated[Literal["OFF", "STRICT", "ON_DEMAND", "OFF_WITH_REDISTRIBUTION"],
                                      BeforeValidator(_load_balancing)] = defaults.CC_MESSAGE_LOAD_BALANCING
    max_hops: Annotated[int, Field(ge=0)] = defaults.CC_MAX_HOPS
    confirmation_window_size: Window = defaults.CC_CONFIRMATION_WINDOW_SIZE
    producer_window_size: Window = defaults.CC_PRODUCER_WINDOW_SIZE
    call_failover_timeout: Annotated[int, Field(ge=-1)] = defaults.CC_CALL_FAILOVER_TIMEOUT
    notification_interval: Millis = defaults.CC_NOTIFICATION_INTERVAL
    notification_attempts: Annotated[int, Field(ge=0)] = defaults.CC_NOTIFICATION_ATTEMPTS
    discovery_group_ref: NonEmptyStr | None = None
    static_connectors: tuple[NonEmptyStr, ...] | None = None
    allow_direct_connections_only: bool = defaults.CC_ALLOW_DIRECT_CONNECTIONS_ONLY
    client_id: NonEmptyStr | None = None

    @model_validator(mode="before")
    @classmethod
    def _refuse_legacy(cls, data: Any) -> Any:
        if isinstance(data, dict) and "forward-when-no-consumers" in data:
            raise_issues([(("forward-when-no-consumers",), "replaced by message-load-balancing (true = STRICT, "
                                                            "false = ON_DEMAND), as in Artemis")])
        return data

    @model_validator(mode="after")
    def _some_nodes(self) -> ClusterConnection:
        if self.discovery_group_ref is None and not self.static_connectors:
            raise_issues([((), "give static-connectors (names in connectors) and/or discovery-group-ref: "
                                "a cluster connection needs nodes to connect to")])
        if self.allow_direct_connections_only and not self.static_connectors:
            raise_issues([(("allow-direct-connections-only",), "only means something with static-connectors")])
        return self


def cluster_connection_issues(
    cluster_connections: dict[str, ClusterConnection], connectors: dict[str, str],
    discovery_groups: dict[str, DiscoveryGroup],
) -> list[tuple[RelPath, str]]:
    """Cross-references of cluster-connections: connectors and discovery groups that exist."""
    issues: list[tuple[RelPath, str]] = []
    have = ", ".join(connectors) or "none"
    for name, cc in cluster_connections.items():
        for index, ref in enumerate(cc.static_connectors or ()):
            if ref not in connectors:
                issues.append((("cluster-connections", name, "static-connectors", index),
                               f"no connector named {ref!r} (connectors: {have})"))
        if cc.connector_ref is not None and cc.connector_ref not in connectors:
            issues.append((("cluster-connections", name, "connector-ref"),
                           f"no connector named {cc.connector_ref!r} (connectors: {have})"))
        if cc.discovery_group_ref is not None and cc.discovery_group_ref not in discovery_groups:
            groups = ", ".join(discovery_groups) or "none"
            issues.append((("cluster-connections", name, "discovery-group-ref"),
                           f"no discovery group named {cc.discovery_group_ref!r} (discovery-groups: {groups})"))
    return issues


class GroupingHandler(ConfigModel):
    """Clustered grouping (broker.xml ``<grouping-handler>``): which node's
    queue each message group goes to. One node of the cluster has the LOCAL
    handler, which decides; every other node has a REMOTE one, which asks it
    (services/router/cluster/grouping.py, docs/clustering.md)."""

    name: NonEmptyStr
    type: Annotated[Literal["LOCAL", "REMOTE"], BeforeValidator(_upper)]
    # The addresses it applies to, as a cluster connection's `address` (a prefix; "" = every address).
    address: str = ""
    timeout: Millis = defaults.GROUPING_HANDLER_TIMEOUT
    group_timeout: Annotated[int, Field(ge=-1), AfterValidator(_not_zero("never"))] = (
        defaults.GROUPING_HANDLER_GROUP_TIMEOUT)
    reaper_period: Millis = defaults.GROUPING_HANDLER_REAPER_PERIOD


def _check_connector(value: str) -> str:
    parse_host_port(value)
    return value


class ScaleDown(ConfigModel):
    """``ha-policy: live-only: scale-down``: on a graceful stop, send every
    message to another node (services/router/cluster/scale_down.py)."""

    enabled: bool = True
    # Only a node whose scale-down group-name is the same may take the messages.
    group_name: NonEmptyStr | None = None
    # Where to look for that node: a discovery group, and/or connectors by name (tried in order).
    discovery_group_ref: NonEmptyStr | None = None
    connectors: tuple[NonEmptyStr, ...] = ()


class LiveOnly(ConfigModel):
    scale_down: ScaleDown | None = None


class SharedStoreMaster(ConfigModel):
    """``ha-policy.shared-store.master``: the live of a live/backup group sharing one store."""

    failover_on_shutdown: bool = defaults.HA_FAILOVER_ON_SHUTDOWN
    wait_for_activation: bool = defaults.HA_WAIT_FOR_ACTIVATION


class SharedStoreSlave(ConfigModel):
    """``ha-policy.shared-store.slave``: a backup waiting for the store's lease.
    With `scale-down`, a backup that takes the store over moves every message to
    another live at once and stops, instead of serving (Artemis's "Scale Down and
    Backups"; services/router/service.py)."""

    allow_failback: bool = defaults.HA_ALLOW_FAILBACK
    failover_on_shutdown: bool = defaults.HA_FAILOVER_ON_SHUTDOWN
    restart_backup: bool = defaults.HA_RESTART_BACKUP
    scale_down: ScaleDown | None = None


class Colocated(ConfigModel):
    """The colocated keys both policies share: this node is a live (`master`) and
    hosts, in its process, backups (`slave`) of other lives when they ask
    (services/ha-coordinator/colocated.py)."""

    request_backup: bool = defaults.HA_COLOCATED_REQUEST_BACKUP
    backup_request_retries: Annotated[int, Field(ge=-1)] = defaults.HA_COLOCATED_BACKUP_REQUEST_RETRIES
    backup_request_retry_interval: Annotated[int, Field(gt=0)] = defaults.HA_COLOCATED_BACKUP_REQUEST_RETRY_INTERVAL
    max_backups: Annotated[int, Field(ge=0)] = defaults.HA_COLOCATED_MAX_BACKUPS
    backup_port_offset: Annotated[int, Field(gt=0, le=65535)] = defaults.HA_COLOCATED_BACKUP_PORT_OFFSET
    # Connectors (by name) whose ports a hosted backup keeps: those of other nodes.
    excludes: tuple[NonEmptyStr, ...] = ()


class ColocatedSharedStore(Colocated):
    """``ha-policy.shared-store.colocated``: the live of its own store, hosting
    shared-store slaves of other lives' stores."""

    master: SharedStoreMaster = Field(default_factory=SharedStoreMaster)
    slave: SharedStoreSlave = Field(default_factory=SharedStoreSlave)


class SharedStore(ConfigModel):
    """``ha-policy.shared-store``: live and backups share one PostgreSQL store;
    whoever holds its lease is active (services/ha-coordinator/shared_store.py)."""

    master: SharedStoreMaster | None = None
    slave: SharedStoreSlave | None = None
    colocated: ColocatedSharedStore | None = None

    @model_validator(mode="after")
    def _one_role(self) -> SharedStore:
        if sum(role is not None for role in (self.master, self.slave, self.colocated)) != 1:
            raise_issues([((), "give exactly one of master (the live), slave (a backup) and colocated "
                                "(a live that hosts backups of other lives)")])
        return self

    def own(self) -> SharedStore:
        """The policy of this node's own store: a colocated node is its master."""
        return SharedStore(master=self.colocated.master) if self.colocated is not None else self

    @property
    def failover_on_shutdown(self) -> bool:
        role = self.master or self.slave or self.colocated.master
        return role.failover_on_shutdown


class QuorumProperties(ConfigModel):
    """``manager.properties``: Artemis's Curator properties, for etcd."""

    # etcd endpoints (class-name etcd), or HA coordinator endpoints (class-name coordinator): host:port[,host:port]
    connect_string: NonEmptyStr
    session_ms: Annotated[int, Field(gt=0)] = defaults.HA_MANAGER_SESSION_MS
    session_percent: Annotated[int, Field(gt=0, le=100)] = defaults.HA_MANAGER_SESSION_PERCENT
    connection_ms: Annotated[int, Field(gt=0)] = defaults.HA_MANAGER_CONNECTION_MS
    retries: Annotated[int, Field(ge=0)] = defaults.HA_MANAGER_RETRIES
    retries_ms: Annotated[int, Field(ge=0)] = defaults.HA_MANAGER_RETRIES_MS
    namespace: NonEmptyStr = defaults.HA_MANAGER_NAMESPACE

    @field_validator("connect_string")
    @classmethod
    def _check_endpoints(cls, value: str) -> str:
        for endpoint in value.split(","):
            parse_host_port(endpoint.strip())
        return value

    @property
    def endpoints(self) -> list[str]:
        return [e.strip() for e in self.connect_string.split(",")]


class QuorumManager(ConfigModel):
    """``manager``: the quorum provider. Artemis's default is Apache Curator
    (ZooKeeper); meshmq's is etcd, the store its discovery already uses, which
    the router reaches itself (`etcd`) or through the HA coordinator service
    (`coordinator`: connect-string names its instances; it holds the same keys)."""

    class_name: Literal["etcd", "coordinator"] = "etcd"
    properties: QuorumProperties


class ReplicationPrimary(ConfigModel):
    """``ha-policy.replication.primary``: a live whose every write is streamed to its backup."""

    manager: QuorumManager
    coordination_id: NonEmptyStr | None = None  # default: the node id
    group_name: NonEmptyStr | None = None
    initial_replication_sync_timeout: Annotated[int, Field(gt=0)] = defaults.HA_INITIAL_REPLICATION_SYNC_TIMEOUT


class ReplicationBackup(ConfigModel):
    """``ha-policy.replication.backup``: keeps a copy of a live's store and takes over when it goes."""

    manager: QuorumManager
    group_name: NonEmptyStr | None = None
    # The cluster connection whose static-connectors are the lives to replicate (default: the only one).
    cluster_name: NonEmptyStr | None = None
    max_saved_replicated_journals_size: Annotated[int, Field(ge=-1)] = defaults.HA_MAX_SAVED_REPLICATED_JOURNALS_SIZE
    # Serving in its primary's place, step down when the primary, back and in sync, asks for it.
    allow_failback: bool = defaults.HA_REPLICATION_ALLOW_FAILBACK
    initial_replication_sync_timeout: Annotated[int, Field(gt=0)] = defaults.HA_INITIAL_REPLICATION_SYNC_TIMEOUT


class ClassicQuorum(ConfigModel):
    """The quorum-vote keys classic replication's master and slave share
    (services/ha-coordinator/quorum_vote.py runs the votes)."""

    quorum_size: Annotated[int, Field(ge=-1)] = defaults.HA_QUORUM_SIZE
    vote_retries: Annotated[int, Field(ge=0)] = defaults.HA_VOTE_RETRIES
    vote_retry_wait: Annotated[int, Field(ge=0)] = defaults.HA_VOTE_RETRY_WAIT
    quorum_vote_wait: Annotated[int, Field(gt=0)] = defaults.HA_QUORUM_VOTE_WAIT
    cluster_name: NonEmptyStr | None = None
    group_name: NonEmptyStr | None = None
    initial_replication_sync_timeout: Annotated[int, Field(gt=0)] = defaults.HA_INITIAL_REPLICATION_SYNC_TIMEOUT


class ReplicationMaster(ClassicQuorum):
    """``ha-policy.replication.master``: the live of a classic replicating pair.
    No lock anywhere: its backup activates when a quorum of the cluster's lives
    no longer sees it. `check-for-live-server`: on start, fail back from a
    slave serving its store (without it, such a master stops)."""

    check_for_live_server: bool = defaults.HA_CHECK_FOR_LIVE_SERVER
    vote_on_replication_failure: bool = defaults.HA_VOTE_ON_REPLICATION_FAILURE


class ReplicationSlave(ClassicQuorum):
    """``ha-policy.replication.slave``: keeps a copy of a master's store and
    takes over when a quorum of the cluster's lives agrees the master is gone."""

    max_saved_replicated_journals_size: Annotated[int, Field(ge=-1)] = defaults.HA_MAX_SAVED_REPLICATED_JOURNALS_SIZE
    # Serving in its master's place, step down when the master (check-for-live-server) asks for it back.
    allow_failback: bool = defaults.HA_CLASSIC_ALLOW_FAILBACK
    restart_backup: bool = defaults.HA_RESTART_BACKUP
    # Having taken over, move every message to another live and stop (Artemis's Scale Down and Backups).
    scale_down: ScaleDown | None = None


class ColocatedReplication(Colocated):
    """``ha-policy.replication.colocated``: a classic master of its own store,
    hosting classic slaves that each replicate one other live (the one that asked)."""

    master: ReplicationMaster = Field(default_factory=ReplicationMaster)
    slave: ReplicationSlave = Field(default_factory=ReplicationSlave)


class Replication(ConfigModel):
    """``ha-policy.replication``: classic roles (master, slave: quorum votes
    among the cluster's lives) or pluggable-quorum roles (primary, backup: a
    lock and an activation sequence on etcd)."""

    primary: ReplicationPrimary | None = None
    backup: ReplicationBackup | None = None
    master: ReplicationMaster | None = None
    slave: ReplicationSlave | None = None
    colocated: ColocatedReplication | None = None

    @model_validator(mode="after")
    def _one_role(self) -> Replication:
        if sum(r is not None for r in (self.primary, self.backup, self.master, self.slave, self.colocated)) != 1:
            raise_issues([((), "give exactly one role: master or slave (classic: quorum votes among the "
                                "cluster's lives), primary or backup (pluggable quorum on etcd), or colocated "
                                "(a classic master that hosts slaves of other lives)")])
        return self

    def own(self) -> Replication:
        """The policy of this node's own store: a colocated node is a classic master."""
        return Replication(master=self.colocated.master) if self.colocated is not None else self

    @property
    def manager(self) -> QuorumManager | None:
        """The pluggable quorum's provider (None for classic roles)."""
        role = self.primary or self.backup
        return role.manager if role is not None else None

    @property
    def classic(self) -> bool:
        return self.master is not None or self.slave is not None or self.colocated is not None

    @property
    def live_role(self) -> ReplicationPrimary | ReplicationMaster | None:
        """The live's settings (primary or master; a colocated node's master), None on a backup."""
        return self.primary or self.own().master

    @property
    def backup_role(self) -> ReplicationBackup | ReplicationSlave | None:
        """The backup's settings (backup or slave), None on a live."""
        return self.backup or self.slave


class HaPolicy(ConfigModel):
    """``ha-policy``: live-only (with scale-down), shared-store, or replication
    (classic master/slave, or pluggable-quorum primary/backup on etcd);
    shared-store and replication may be colocated (each node a live hosting backups of others)."""

    live_only: LiveOnly | None = None
    shared_store: SharedStore | None = None
    replication: Replication | None = None

    @model_validator(mode="after")
    def _one_policy(self) -> HaPolicy:
        if sum(p is not None for p in (self.live_only, self.shared_store, self.replication)) > 1:
            raise_issues([((), "give one policy: live-only, shared-store or replication")])
        return self


class HaCoordinatorListen(Listener):
    """Where `meshmq serve ha-coordinator` listens (the acceptor keys without a name, TLS included)."""

    host: NonEmptyStr = defaults.HA_COORDINATOR_LISTEN_HOST
    port: Port = defaults.HA_COORDINATOR_LISTEN_PORT


class HaCoordinatorService(ConfigModel):
    """The ``ha-coordinator`` key: the HA coordinator service's own settings
    (services/ha-coordinator/service.py): where it listens and the etcd it keeps
    every group's quorum in."""

    listen: HaCoordinatorListen = Field(default_factory=HaCoordinatorListen)
    etcd: EtcdSettings = Field(default_factory=EtcdSettings)


class GatewayListen(ConfigModel):
    """Where `meshmq serve gateway` answers HTTP; HTTPS when cert-path and key-path are given."""

    host: NonEmptyStr = defaults.GATEWAY_LISTEN_HOST
    port: Port = defaults.GATEWAY_LISTEN_PORT
    cert_path: ExistingFile | None = None
    key_path: ExistingFile | None = None

    @model_validator(mode="after")
    def _both_or_neither(self) -> GatewayListen:
        if (self.cert_path is None) != (self.key_path is None):
            raise_issues([((), "give both cert-path and key-path for HTTPS, or neither")])
        return self


class Gateway(ConfigModel):
    """The ``gateway`` key: the admin gateway's settings (services/gateway/).

    Which routers it shows: the nodes of `discovery-group-ref`, plus the
    `static-connectors` (names in `connectors`); with neither, this node's own
    acceptor (the embedded default, where the gateway shares the router's process)."""

    # Host the gateway in this router's process (the embedded default; `meshmq up` turns it on).
    # `meshmq serve gateway` runs it alone whatever this says.
    enabled: bool = defaults.GATEWAY_ENABLED
    listen: GatewayListen = Field(default_factory=GatewayListen)
    discovery_group_ref: NonEmptyStr | None = None
    static_connectors: tuple[NonEmptyStr, ...] = ()
    dev_mode: bool = defaults.GATEWAY_DEV_MODE
    # The CA the routers' and the HA coordinator's certificates are checked against; given: TLS to them.
    trust_path: ExistingFile | None = None
    # host:port of `meshmq serve ha-coordinator`: its quorums (epoch, holder, in-sync replica) are shown too.
    ha_coordinator: Annotated[str, AfterValidator(_check_connector)] | None = None
    # The managers' namespace whose quorums to list.
    ha_namespace: NonEmptyStr = defaults.HA_MANAGER_NAMESPACE
    session_timeout: Millis = defaults.GATEWAY_SESSION_TIMEOUT
    call_timeout: Millis = defaults.GATEWAY_CALL_TIMEOUT
    keep_alive_timeout: Millis = defaults.GATEWAY_KEEP_ALIVE_TIMEOUT
    # Request bodies larger than these are refused with 413 before they are read (services/gateway/body_limit.py).
    max_body_size: Annotated[int, BeforeValidator(_byte_size), Field(gt=0)] = defaults.GATEWAY_MAX_BODY_SIZE
    max_anonymous_body_size: Annotated[int, BeforeValidator(_byte_size), Field(gt=0)] = (
        defaults.GATEWAY_MAX_ANONYMOUS_BODY_SIZE)
    # The rates' sampler (services/gateway/history.py): every history-interval, kept for history-length.
    history_interval: Millis = defaults.GATEWAY_HISTORY_INTERVAL
    history_length: Millis = defaults.GATEWAY_HISTORY_LENGTH
    # A user (with `view` on activemq.management) the sampler calls the routers as, so the
    # history is kept while nobody is logged in; unset: the most recent logged-in viewer's
    # credentials. The password is plain text here, as cluster-password is: keep the file private.
    sampler_user: NonEmptyStr | None = None
    sampler_password: NonEmptyStr | None = None

    @model_validator(mode="after")
    def _history_fits(self) -> Gateway:
        if (self.sampler_user is None) != (self.sampler_password is None):
            raise_issues([(("sampler-password" if self.sampler_user else "sampler-user",),
                           "give both sampler-user and sampler-password, or neither")])
        if self.history_length < self.history_interval:
            raise_issues([(("history-length",), f"history-length ({self.history_length} ms) must be at least "
                                                f"history-interval ({self.history_interval} ms)")])
        if self.history_length // self.history_interval > 100_000:
            raise_issues([(("history-length",), f"history-length / history-interval is "
                                                f"{self.history_length // self.history_interval} samples; "
                                                f"keep it at most 100000 (a longer interval or a shorter length)")])
        return self


def gateway_issues(gateway: Gateway, connectors: dict[str, str],
                   discovery_groups: dict[str, DiscoveryGroup]) -> list[tuple[RelPath, str]]:
    """The gateway's references to connectors and discovery groups exist."""
    issues: list[tuple[RelPath, str]] = []
    for index, ref in enumerate(gateway.static_connectors):
        if ref not in connectors:
            issues.append((("gateway", "static-connectors", index),
                           f"no connector named {ref!r} (connectors: {', '.join(connectors) or 'none'})"))
    ref = gateway.discovery_group_ref
    if ref is not None and ref not in discovery_groups:
        issues.append((("gateway", "discovery-group-ref"),
                       f"no discovery group named {ref!r} (have: {', '.join(discovery_groups) or 'none'})"))
    return issues


class MetricsSettings(ConfigModel):
    """The ``metrics`` key: where this service serves Prometheus metrics (meshmq/metrics.py)."""

    enabled: bool = defaults.METRICS_ENABLED
    host: NonEmptyStr = defaults.METRICS_HOST
    port: Port = defaults.METRICS_PORT


class LoginThrottle(ConfigModel):
    """The ``login-throttle`` key: back-off for failed log-ins on the router and
    the gateway, per username and per source address (meshmq/security/login_throttle.py)."""

    free_attempts: Annotated[int, Field(ge=0)] = defaults.LOGIN_THROTTLE_FREE_ATTEMPTS
    initial_delay: Millis = defaults.LOGIN_THROTTLE_INITIAL_DELAY
    max_delay: Millis = defaults.LOGIN_THROTTLE_MAX_DELAY
    forget_after: Millis = defaults.LOGIN_THROTTLE_FORGET_AFTER
    max_entries: Annotated[int, Field(gt=0)] = defaults.LOGIN_THROTTLE_MAX_ENTRIES

    @model_validator(mode="after")
    def _delays_in_order(self) -> LoginThrottle:
        if self.initial_delay > self.max_delay:
            raise_issues([(("initial-delay",), f"{self.initial_delay} ms is more than max-delay "
                                                f"({self.max_delay} ms)")])
        return self


class DiscoveryListen(Listener):
    """Where `meshmq serve discovery` listens (the acceptor keys without a name, TLS included)."""

    host: NonEmptyStr = defaults.DISCOVERY_LISTEN_HOST
    port: Port = defaults.DISCOVERY_LISTEN_PORT


class DiscoveryService(ConfigModel):
    """The ``discovery`` key: the discovery service's own settings."""

    listen: DiscoveryListen = Field(default_factory=DiscoveryListen)
    # The discovery group the service serves; default: the only one configured.
    discovery_group_ref: NonEmptyStr | None = None


def discovery_issues(
    discovery_groups: dict[str, DiscoveryGroup],
    broadcast_groups: dict[str, BroadcastGroup],
    discovery: DiscoveryService,
    acceptor_names: list[str] | None,
) -> list[tuple[RelPath, str]]:
    """Checks across keys, with paths from the top of the file (for a
    `BrokerConfig` model validator). `acceptor_names` None skips connector-ref."""
    issues: list[tuple[RelPath, str]] = []
    have = ", ".join(discovery_groups) or "none"
    for name, bg in broadcast_groups.items():
        here = ("broadcast-groups", name)
        ref = bg.discovery_group_ref
        group = discovery_groups.get(ref)
        if group is None:
            issues.append((here + ("discovery-group-ref",), f"no discovery group named {ref!r} (have: {have})"))
        elif group.static_connectors is not None:
            issues.append((here + ("discovery-group-ref",),
                           f"discovery group {ref!r} uses static-connectors, which cannot be announced to: use an "
                           "etcd discovery group, or drop this broadcast group and list the node in static-connectors"))
        elif bg.broadcast_period >= group.refresh_timeout:
            issues.append((here + ("broadcast-period",),
                           f"{bg.broadcast_period} ms must be less than the refresh-timeout of discovery group "
                           f"{ref!r} ({group.refresh_timeout} ms), or the node vanishes between keep-alives; "
                           "Artemis advises several broadcast periods per refresh-timeout"))
        if acceptor_names is not None and bg.connector_ref is not None and bg.connector_ref not in acceptor_names:
            issues.append((here + ("connector-ref",),
                           f"no acceptor named {bg.connector_ref!r} (have: {', '.join(acceptor_names) or 'none'})"))
    ref = discovery.discovery_group_ref
    if ref is not None:
        group = discovery_groups.get(ref)
        where = ("discovery", "discovery-group-ref")
        if group is None:
            issues.append((where, f"no discovery group named {ref!r} (have: {have})"))
        elif group.discovery_service is not None:
            issues.append((where, f"discovery group {ref!r} points at another discovery service; "
                                  "the service needs a group with etcd or static-connectors"))
    return issues


# --- the node --------------------------------------------------------------


class BrokerConfig(ConfigModel):
    """One node's configuration (the whole YAML file)."""

    name: NonEmptyStr = defaults.NAME
    persistence_enabled: bool = defaults.PERSISTENCE_ENABLED
    data_directory: Path = Field(default=Path(defaults.DATA_DIRECTORY), validate_default=True)
    id_cache_size: Annotated[int, Field(gt=0)] = defaults.ID_CACHE_SIZE
    persist_id_cache: bool = defaults.PERSIST_ID_CACHE
    id_cache_max_bytes: Annotated[int, BeforeValidator(_byte_size), Field(ge=-1)] = defaults.ID_CACHE_MAX_BYTES
    # ms; an auto-created address that routed a message nowhere goes after this (services/router/auto_delete.py).
    address_queue_scan_period: Annotated[int, Field(ge=-1)] = defaults.ADDRESS_QUEUE_SCAN_PERIOD
    # Sessions of clients speaking an older protocol are refused (UNSUPPORTED_VERSION).
    min_client_protocol_version: Annotated[int, Field(ge=1, le=defaults.PROTOCOL_VERSION)] = (
        defaults.MIN_CLIENT_PROTOCOL_VERSION)
    # None (left out): a share of the memory the process may use (defaults.effective_global_max_size).
    global_max_size: Annotated[int, BeforeValidator(_byte_size), Field(ge=-1)] | None = defaults.GLOBAL_MAX_SIZE
    message_expiry_scan_period: Annotated[
        int, Field(ge=-1), AfterValidator(_not_zero("no scanning"))
    ] = defaults.MESSAGE_EXPIRY_SCAN_PERIOD
    # Percent of the journal's disk in use past which producers are blocked (services/router/disk_usage.py).
    max_disk_usage: Annotated[int, Field(ge=-1, le=100)] = defaults.MAX_DISK_USAGE
    disk_scan_period: Annotated[int, Field(gt=0)] = defaults.DISK_SCAN_PERIOD
    security_enabled: bool = defaults.SECURITY_ENABLED
    users: tuple[User, ...] = ()
    security_settings: Annotated[dict[MatchString, SecuritySetting], BeforeValidator(_none_values_to_empty)] = Field(
        default_factory=dict
    )
    # What the node's services prove they belong to the cluster with (meshmq/security/cluster_identity.py).
    cluster_user: NonEmptyStr = defaults.CLUSTER_USER
    cluster_password: NonEmptyStr | None = defaults.CLUSTER_PASSWORD
    # Secured, yet plain text beyond loopback on purpose (meshmq/security/exposure.py).
    insecure_cluster: bool = defaults.INSECURE_CLUSTER
    login_throttle: LoginThrottle = Field(default_factory=LoginThrottle)
    acceptors: tuple[Acceptor, ...] = Field(default_factory=lambda: (Acceptor(),))
    rebalance_cluster_clients: bool = defaults.REBALANCE_CLUSTER_CLIENTS
    journal: Journal = Field(default_factory=Journal)
    addresses: Annotated[dict[NonEmptyStr, Address], BeforeValidator(_none_values_to_empty)] = Field(
        default_factory=dict
    )
    address_settings: Annotated[dict[MatchString, AddressSettings], BeforeValidator(_none_values_to_empty)] = Field(
        default_factory=dict
    )
    wildcard_addresses: WildcardAddresses = Field(default_factory=WildcardAddresses)
    discovery_groups: Annotated[dict[NonEmptyStr, DiscoveryGroup], BeforeValidator(_none_values_to_empty)] = Field(
        default_factory=dict
    )
    broadcast_groups: Annotated[dict[NonEmptyStr, BroadcastGroup], BeforeValidator(_none_values_to_empty)] = Field(
        default_factory=dict
    )
    discovery: DiscoveryService = Field(default_factory=DiscoveryService)
    # Named host:port endpoints of other nodes (broker.xml <connectors>), for cluster connections.
    connectors: Annotated[dict[NonEmptyStr, Annotated[str, AfterValidator(_check_connector)]],
                          BeforeValidator(_none_values_to_empty)] = Field(default_factory=dict)
    cluster_connections: Annotated[dict[NonEmptyStr, ClusterConnection], BeforeValidator(_none_values_to_empty)] = (
        Field(default_factory=dict))
    # ActiveMQ's networks of brokers and AMQ-2875's tree (network.py).
    network_connectors: Annotated[dict[NonEmptyStr, NetworkConnector], BeforeValidator(_none_values_to_empty)] = (
        Field(default_factory=dict))
    tree_connector: TreeConnector | None = None
    # Clustered grouping: one LOCAL handler in the cluster, REMOTE on every other node.
    grouping_handler: GroupingHandler | None = None
    ha_policy: HaPolicy = Field(default_factory=HaPolicy)
    ha_coordinator: HaCoordinatorService = Field(default_factory=HaCoordinatorService)
    gateway: Gateway = Field(default_factory=Gateway)
    metrics: MetricsSettings = Field(default_factory=MetricsSettings)

    @field_validator("data_directory")
    @classmethod
    def _resolve_data_directory(cls, value: Path, info: ValidationInfo) -> Path:
        return _absolute(value, info)

    @field_validator("users")
    @classmethod
    def _unique_usernames(cls, users: tuple[User, ...]) -> tuple[User, ...]:
        seen: dict[str, int] = {}
        issues: list[tuple[RelPath, str]] = []
        for index, user in enumerate(users):
            if user.username in seen:
                why = f"duplicate username {user.username!r} (also users[{seen[user.username]}])"
                issues.append(((index, "username"), why))
            seen.setdefault(user.username, index)
        raise_issues(issues)
        return users

    @field_validator("acceptors")
    @classmethod
    def _unique_acceptors(cls, acceptors: tuple[Acceptor, ...]) -> tuple[Acceptor, ...]:
        names: dict[str, int] = {}
        endpoints: dict[tuple[str, int], int] = {}
        issues: list[tuple[RelPath, str]] = []
        for index, acceptor in enumerate(acceptors):
            if acceptor.name in names:
                why = f"duplicate acceptor name {acceptor.name!r} (also acceptors[{names[acceptor.name]}])"
                issues.append(((index, "name"), why))
            names.setdefault(acceptor.name, index)
            endpoint = (acceptor.host, acceptor.port)
            if acceptor.port != 0 and endpoint in endpoints:
                why = f"{acceptor.host}:{acceptor.port} is already used by acceptors[{endpoints[endpoint]}]"
                issues.append(((index, "port"), why))
            endpoints.setdefault(endpoint, index)
        raise_issues(issues)
        return acceptors

    @field_validator("addresses")
    @classmethod
    def _unique_queue_names(cls, addresses: dict[str, Address]) -> dict[str, Address]:
        seen: dict[str, str] = {}
        issues: list[tuple[RelPath, str]] = []
        for address_name, address in addresses.items():
            for kind in ("anycast", "multicast"):
                for index, queue in enumerate(getattr(address, kind) or ()):
                    if queue.name in seen:
                        why = (
                            f"queue {queue.name!r} is already defined at {seen[queue.name]}; "
                            "queue names are unique across all addresses"
                        )
                        issues.append(((address_name, kind, index, "name"), why))
                    else:
                        seen[queue.name] = format_key_path(("addresses", address_name, kind, index))
        raise_issues(issues)
        return addresses

    @model_validator(mode="after")
    def _check_discovery(self) -> BrokerConfig:
        acceptors = [a.name for a in self.acceptors]
        raise_issues(discovery_issues(self.discovery_groups, self.broadcast_groups, self.discovery, acceptors))
        return self

    @model_validator(mode="after")
    def _check_cluster_connections(self) -> BrokerConfig:
        raise_issues(cluster_connection_issues(self.cluster_connections, self.connectors, self.discovery_groups))
        raise_issues(gateway_issues(self.gateway, self.connectors, self.discovery_groups))
        raise_issues(network_connector_issues(self.network_connectors, self.discovery_groups))
        sd = self.scale_down
        if sd is not None:
            issues: list[tuple[RelPath, str]] = []
            where = (("ha-policy", "shared-store" if self.ha_policy.shared_store else "replication", "slave",
                      "scale-down") if self.scales_down_on_activation else ("ha-policy", "live-only", "scale-down"))
            for index, ref in enumerate(sd.connectors):
                if ref not in self.connectors:
                    issues.append(((*where, "connectors", index), f"no connector named {ref!r}"))
            if sd.discovery_group_ref is not None and sd.discovery_group_ref not in self.discovery_groups:
                issues.append(((*where, "discovery-group-ref"), f"no discovery group named {sd.discovery_group_ref!r}"))
            if sd.discovery_group_ref is None and not sd.connectors:
                issues.append((where, "give connectors and/or discovery-group-ref: where to find a node to scale down to"))
            raise_issues(issues)
        return self

    @property
    def ha_role(self) -> str:
        """The ha-policy and this node's role in it, as management shows it."""
        ss = self.ha_policy.shared_store
        if ss is not None:
            return ("shared-store master" if ss.master is not None else "shared-store slave" if ss.slave is not None
                    else "shared-store colocated")
        rep = self.ha_policy.replication
        if rep is not None:
            role = next(name for name in ("primary", "backup", "master", "slave", "colocated")
                        if getattr(rep, name) is not None)
            return f"replication {role}"
        return "live-only"

    @property
    def ha_group(self) -> str:
        """The ha-policy group-name ("" = none): a backup pairs only with a live of its group."""
        rep = self.ha_policy.replication
        role = None if rep is None else rep.live_role or rep.backup_role
        return (role.group_name if role is not None else None) or ""

    @property
    def scale_down(self) -> ScaleDown | None:
        """The enabled scale-down policy (live-only, or a shared-store or classic replication slave's), or None."""
        sd = None
        if (lo := self.ha_policy.live_only) is not None:
            sd = lo.scale_down
        elif (slave := self._slave) is not None:
            sd = slave.scale_down
        return sd if sd is not None and sd.enabled else None

    @property
    def _slave(self) -> SharedStoreSlave | ReplicationSlave | None:
        ss, rep = self.ha_policy.shared_store, self.ha_policy.replication
        return ss.slave if ss is not None else rep.slave if rep is not None else None

    @property
    def scales_down_on_activation(self) -> bool:
        """A slave (shared store or classic replication) that scales down as soon as it
        takes the store over (live-only scales down when it stops)."""
        return self.scale_down is not None and self._slave is not None

    @model_validator(mode="after")
    def _check_grouping_handler(self) -> BrokerConfig:
        if self.grouping_handler is not None and not self.cluster_connections:
            raise_issues([(("grouping-handler",), "clustered grouping needs cluster-connections: a grouping "
                                                 "handler decides between the nodes a cluster connection links")])
        return self

    @model_validator(mode="after")
    def _check_security(self) -> BrokerConfig:
        if self.security_enabled and not self.users:
            raise_issues([(("users",), "security-enabled is true but no users are configured")])
        return self

    @model_validator(mode="after")
    def _check_replication(self) -> BrokerConfig:
        rep = self.ha_policy.replication
        if rep is None:
            return self
        issues: list[tuple[RelPath, str]] = []
        j = self.journal
        if j.address is not None or (j.url is not None and not j.url.startswith("sqlite")):
            issues.append((("journal",), "ha-policy replication copies the node's own SQLite journal (the default, "
                                         "under data-directory); for a shared PostgreSQL store use shared-store"))
        backup = rep.backup_role
        where = ("ha-policy", "replication", "backup" if rep.backup is not None else "slave", "cluster-name")
        if backup is not None:
            name = backup.cluster_name
            ccs = self.cluster_connections
            if name is None and len(ccs) != 1:
                issues.append((where,
                               "name the cluster connection whose static-connectors list the lives to replicate"
                               if ccs else "a backup finds its live through a cluster connection's "
                                           "static-connectors: add one (cluster-connections)"))
            elif name is not None and name not in ccs:
                issues.append((where, f"no cluster connection named {name!r}"))
            else:
                cc = ccs[name] if name is not None else next(iter(ccs.values()))
                if not cc.static_connectors:
                    issues.append((where,
                                   "the cluster connection needs static-connectors: the lives to replicate "
                                   "(finding them through a discovery group is not built yet)"))
        master = rep.master
        if master is not None and master.cluster_name is not None and master.cluster_name not in self.cluster_connections:
            issues.append((("ha-policy", "replication", "master", "cluster-name"),
                           f"no cluster connection named {master.cluster_name!r}"))
        raise_issues(issues)
        return self

    @property
    def replication_lives(self) -> list[str]:
        """The static connectors (host:port) of the replication cluster connection
        (the role's cluster-name, default the first one): the lives a backup
        replicates from, and the lives a classic quorum vote asks."""
        rep = self.ha_policy.replication
        role = None if rep is None else rep.backup_role or rep.live_role
        ccs = self.cluster_connections
        if role is None or not ccs:
            return []
        name = getattr(role, "cluster_name", None)
        cc = ccs.get(name) if name else next(iter(ccs.values()))
        return [] if cc is None else [self.connectors[ref] for ref in cc.static_connectors or ()]

    @model_validator(mode="after")
    def _check_shared_store(self) -> BrokerConfig:
        if self.ha_policy.shared_store is None:
            return self
        j = self.journal
        issues: list[tuple[RelPath, str]] = []
        if j.address is not None:
            issues.append((("journal", "address"), "a shared-store node reaches its store itself (journal.url), not "
                                                   "through a journal service: the lease and the store are one"))
        elif j.url is None or not j.url.startswith("postgresql"):
            issues.append((("journal", "url"), "ha-policy shared-store needs a PostgreSQL store that the live and its "
                                               "backups share (postgresql+psycopg://...); SQLite cannot be shared "
                                               "between machines"))
        if j.jdbc_lock_expiration <= j.jdbc_lock_renew_period:
            issues.append((("journal", "jdbc-lock-expiration"), f"must be longer than jdbc-lock-renew-period "
                                                                f"({j.jdbc_lock_renew_period} ms), or the live loses "
                                                                "its lease between two renewals"))
        raise_issues(issues)
        return self

    @property
    def colocated(self) -> ColocatedSharedStore | ColocatedReplication | None:
        """The colocated policy (shared store or replication), or None."""
        ss, rep = self.ha_policy.shared_store, self.ha_policy.replication
        return ss.colocated if ss is not None else rep.colocated if rep is not None else None

    @model_validator(mode="after")
    def _check_colocated(self) -> BrokerConfig:
        colocated = self.colocated
        if colocated is None:
            return self
        issues: list[tuple[RelPath, str]] = []
        where = ("ha-policy", "shared-store" if self.ha_policy.shared_store else "replication", "colocated")
        for index, ref in enumerate(colocated.excludes):
            if ref not in self.connectors:
                issues.append(((*where, "excludes", index), f"no connector named {ref!r}"))
        sd = colocated.slave.scale_down
        for index, ref in enumerate(sd.connectors if sd is not None else ()):
            if ref not in self.connectors:
                issues.append(((*where, "slave", "scale-down", "connectors", index), f"no connector named {ref!r}"))
        if colocated.request_backup and not self.discovery_groups and not self.cluster_connections:
            issues.append(((*where, "request-backup"), "a live finds the nodes to ask through its discovery "
                                                      "groups or cluster connections: configure one"))
        raise_issues(issues)
        return self

    @model_validator(mode="after")
    def _check_cluster_identity(self) -> BrokerConfig:
        uses = self._separate_services()
        if self.security_enabled and self.cluster_password is None and uses:
            who = "that service accepts" if len(uses) == 1 else "those services accept"
            raise_issues([(("cluster-password",), f"required when security-enabled is true and the node uses "
                                                   f"{' and '.join(uses)}: without it {who} any caller "
                                                   "(docs/security.md, \"Cluster identity\")")])
        if self.security_enabled and self.cluster_password is None and self.ha_policy.replication is not None:
            raise_issues([(("cluster-password",), "required when security-enabled is true and the node has "
                                                   "ha-policy replication: a backup takes a copy of every message "
                                                   "(docs/security.md, \"Cluster identity\")")])
        if self.security_enabled and self.cluster_password is None and self.cluster_connections:
            # Links carry messages past users and security-settings: a secured
            # node takes none without a credential to check (services/router/server.py).
            raise_issues([(("cluster-password",), "required when security-enabled is true and the node has "
                                                   f"cluster-connections ({', '.join(self.cluster_connections)}): "
                                                   "a secured node takes no cluster link without it "
                                                   "(docs/security.md, \"Cluster identity\")")])
        return self

    def _separate_services(self) -> list[str]:
        """The journal and discovery services this node reaches over the network
        (each named with the key that points at it); the embedded journal is not one."""
        used = [f"a journal service (journal.address {self.journal.address})"] if self.journal.address else []
        used += [f"a discovery service (discovery-groups.{name}.discovery-service {group.discovery_service})"
                 for name, group in self.discovery_groups.items() if group.discovery_service is not None]
        return used

    def journal_file(self) -> Path:
        """The SQLite file of the node's own journal (`journal_url`'s); for
        replication, which copies that file. Only for an SQLite journal."""
        path = self.sqlite_journal_file()
        if path is None:
            raise ValueError("the journal is not an SQLite file")
        return path

    def sqlite_journal_file(self) -> Path | None:
        """The file of an SQLite journal on disk; None for PostgreSQL, an
        in-memory or a ``file:`` URI database. The default journal is known
        without parsing a URL, so a node on it never imports SQLAlchemy
        (a router process does not otherwise need it)."""
        if self.journal.url is None:
            return self.data_directory / defaults.JOURNAL_SQLITE_FILE
        from sqlalchemy.engine import make_url

        url = make_url(self.journal.url)
        if url.get_backend_name() != "sqlite" or not url.database or url.database.startswith((":memory:", "file:")):
            return None
        return Path(url.database)

    def journal_url(self) -> str:
        """The SQLAlchemy URL of the journal: ``journal.url``, or the SQLite
        file ``<data-directory>/journal.db`` (absolute) when it is not set."""
        if self.journal.url is not None:
            return self.journal.url
        return f"sqlite:///{self.data_directory / defaults.JOURNAL_SQLITE_FILE}"
