"""Discovery keys of a node's configuration (pydantic, broker.xml names).

Written to move as they are into `meshmq/config/models.py` (they build on its
`_Model`), with `BrokerConfig` gaining three keys::

    discovery-groups:            # Artemis <discovery-groups>: where topology comes from
      dg1:
        etcd: {endpoints: [127.0.0.1:2379]}     # or: discovery-service: host:port
                                                 # or: static-connectors: [host:port, ...]
        cluster-name: meshmq
        refresh-timeout: 10000
        initial-wait-timeout: 10000
    broadcast-groups:            # Artemis <broadcast-groups>: how this node announces itself
      bg1:
        discovery-group-ref: dg1
        broadcast-period: 2000
        connector-ref: grpc      # an acceptor name; default: the first acceptor
    discovery:                   # only read by `meshmq serve discovery`
      listen: {host: 127.0.0.1, port: 61636}
      discovery-group-ref: dg1

Artemis gives the broadcast group and the discovery group each their own
endpoint (UDP group-address/port or a JGroups channel) and warns that they
must match. meshmq keeps the endpoint in the discovery group only and lets a
broadcast group refer to it, so the two cannot disagree; and since an etcd
lease has one TTL, set by the announcer, the lease TTL of a node is the
refresh-timeout of the discovery group its broadcast group refers to.
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from meshmq.config.models import NonEmptyStr, Port, RelPath, _Model, _raise_issues, parse_host_port
from meshmq.discovery_client import (
    BROADCAST_PERIOD_MS,
    DISCOVERY_PORT,
    INITIAL_WAIT_TIMEOUT_MS,
    REFRESH_TIMEOUT_MS,
    DiscoveryConfigError,
)

# TODO(config): with the ones in meshmq/discovery_client.py, these belong in meshmq/config/defaults.py.
# discovery-groups.*.etcd.endpoints: etcd's own default client URL.
ETCD_ENDPOINT = "127.0.0.1:2379"
# discovery-groups.*.etcd.key-prefix: announcements live under <key-prefix>/<cluster-name>/nodes/.
ETCD_KEY_PREFIX = "/meshmq"
# discovery-groups.*.cluster-name: nodes see each other when they use the same one (meshmq; Artemis has none).
CLUSTER_NAME = "meshmq"
# discovery.listen.host: interface `meshmq serve discovery` binds.
DISCOVERY_LISTEN_HOST = "127.0.0.1"
# etcd's smallest lease TTL with its default --election-timeout (1000 ms): 1.5 election timeouts, in whole seconds.
ETCD_MIN_REFRESH_TIMEOUT_MS = 2000

# Artemis's UDP and JGroups keys: meshmq replaces both with etcd.
_MULTICAST_KEYS = ("group-address", "group-port", "local-bind-address", "local-bind-port", "jgroups-file",
                   "jgroups-channel", "jgroups-properties")
_SOURCES = ("etcd", "discovery-service", "static-connectors")

Millis = Annotated[int, Field(gt=0)]


def _refuse_multicast_keys(data: Any) -> Any:
    if isinstance(data, dict):
        issues: list[tuple[RelPath, str]] = [
            ((key,), f"{key} configures UDP multicast or JGroups, which meshmq replaces with etcd: "
                     "use etcd.endpoints (or static-connectors where there is no etcd)")
            for key in _MULTICAST_KEYS if key in data
        ]
        _raise_issues(issues)
    return data


def valid_name_segment(value: str, what: str) -> str:
    """A node id or cluster name becomes one segment of an etcd key."""
    if not value or len(value) > 200 or "/" in value or not value.isprintable() or value != value.strip():
        raise ValueError(f"{what} {value!r} must be 1 to 200 printable characters without '/' or surrounding spaces")
    return value


def normalize_endpoint(value: str) -> str:
    """``host:port``; an etcd URL (``http://host:port``) is accepted too."""
    if value.startswith("https://"):
        raise ValueError(
            f"{value}: TLS to etcd is not supported yet (the etcd client opens plaintext channels); "
            "keep etcd on loopback or a private network and use http://"
        )
    value = value.removeprefix("http://").rstrip("/")
    parse_host_port(value)
    return value


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


class EtcdSettings(_Model):
    """Where the etcd cluster is (each entry one member's client URL)."""

    endpoints: Annotated[tuple[NonEmptyStr, ...], Field(min_length=1)] = (ETCD_ENDPOINT,)
    key_prefix: NonEmptyStr = ETCD_KEY_PREFIX

    @field_validator("endpoints")
    @classmethod
    def _check_endpoints(cls, endpoints: tuple[str, ...]) -> tuple[str, ...]:
        normalized = tuple(normalize_endpoint(e) for e in endpoints)
        if len(normalized) > 1:
            hosts = [parse_host_port(e)[0] for e in normalized]
            if not all(_is_ip(h) for h in hosts):
                raise ValueError("with several endpoints give IP addresses (a single host name may resolve to several)")
            if len({":" in h for h in hosts}) > 1:
                raise ValueError("mixes IPv4 and IPv6 addresses; use one family")
        return normalized

    @field_validator("key_prefix")
    @classmethod
    def _check_prefix(cls, value: str) -> str:
        if not value.startswith("/") or value.endswith("/") or "//" in value:
            raise ValueError(f"{value!r}: expected a path like /meshmq (leading '/', no trailing '/')")
        return value


class DiscoveryGroup(_Model):
    """Where a node learns the topology from (broker.xml ``<discovery-group>``):
    exactly one of etcd, discovery-service or static-connectors."""

    etcd: EtcdSettings | None = None
    # host:port of `meshmq serve discovery`; the service then holds this node's lease.
    discovery_service: str | None = None
    # The Artemis static-connectors case: a fixed list, for networks without etcd.
    static_connectors: tuple[NonEmptyStr, ...] | None = None
    cluster_name: NonEmptyStr = CLUSTER_NAME
    refresh_timeout: Millis = REFRESH_TIMEOUT_MS
    initial_wait_timeout: Annotated[int, Field(ge=0)] = INITIAL_WAIT_TIMEOUT_MS

    @model_validator(mode="before")
    @classmethod
    def _refuse_multicast(cls, data: Any) -> Any:
        return _refuse_multicast_keys(data)

    @field_validator("discovery_service")
    @classmethod
    def _check_service(cls, value: str | None) -> str | None:
        if value is not None:
            parse_host_port(value)
        return value

    @field_validator("static_connectors")
    @classmethod
    def _check_static(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is not None:
            for connector in value:
                parse_host_port(connector)
        return value

    @field_validator("cluster_name")
    @classmethod
    def _check_cluster(cls, value: str) -> str:
        return valid_name_segment(value, "cluster-name")

    @model_validator(mode="after")
    def _one_source(self) -> DiscoveryGroup:
        given = [key for key in _SOURCES if getattr(self, key.replace("-", "_")) is not None]
        issues: list[tuple[RelPath, str]] = []
        if not given:
            issues.append(((), "give one of etcd, discovery-service or static-connectors"))
        for key in given[1:]:
            issues.append(((key,), f"{given[0]} and {key} are exclusive (as UDP and JGroups are in Artemis): "
                                   "a discovery group has one source"))
        if self.etcd is not None and self.refresh_timeout < ETCD_MIN_REFRESH_TIMEOUT_MS:
            issues.append((("refresh-timeout",), f"{self.refresh_timeout} ms is below etcd's smallest lease TTL "
                                                 f"({ETCD_MIN_REFRESH_TIMEOUT_MS} ms), which etcd would use instead"))
        _raise_issues(issues)
        return self

    @property
    def source(self) -> Literal["etcd", "discovery-service", "static-connectors"]:
        return next(k for k in _SOURCES if getattr(self, k.replace("-", "_")) is not None)


class BroadcastGroup(_Model):
    """How this node announces itself (broker.xml ``<broadcast-group>``)."""

    discovery_group_ref: NonEmptyStr
    broadcast_period: Millis = BROADCAST_PERIOD_MS
    # An acceptor's name: the connector announced is where it listens. Default: the first acceptor.
    connector_ref: NonEmptyStr | None = None

    @model_validator(mode="before")
    @classmethod
    def _refuse_multicast(cls, data: Any) -> Any:
        return _refuse_multicast_keys(data)


class DiscoveryListen(_Model):
    """Where `meshmq serve discovery` listens."""

    host: NonEmptyStr = DISCOVERY_LISTEN_HOST
    port: Port = DISCOVERY_PORT


class DiscoveryService(_Model):
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
        group = discovery_groups.get(bg.discovery_group_ref)
        if group is None:
            issues.append((here + ("discovery-group-ref",), f"no discovery group named {bg.discovery_group_ref!r} (have: {have})"))
        elif group.static_connectors is not None:
            issues.append((here + ("discovery-group-ref",),
                           f"discovery group {bg.discovery_group_ref!r} uses static-connectors, which cannot be announced to: "
                           "use an etcd discovery group, or drop this broadcast group and list the node in static-connectors"))
        elif bg.broadcast_period >= group.refresh_timeout:
            issues.append((here + ("broadcast-period",),
                           f"{bg.broadcast_period} ms must be less than the refresh-timeout of discovery group "
                           f"{bg.discovery_group_ref!r} ({group.refresh_timeout} ms), or the node vanishes between keep-alives; "
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


def served_group(discovery_groups: dict[str, DiscoveryGroup], discovery: DiscoveryService) -> tuple[str, DiscoveryGroup]:
    """The discovery group `meshmq serve discovery` serves."""
    ref = discovery.discovery_group_ref
    if ref is None:
        if len(discovery_groups) != 1:
            raise DiscoveryConfigError(
                f"discovery.discovery-group-ref: name the discovery group to serve (have: {', '.join(discovery_groups) or 'none'})"
            )
        ref = next(iter(discovery_groups))
    group = discovery_groups.get(ref)
    if group is None:
        raise DiscoveryConfigError(f"discovery.discovery-group-ref: no discovery group named {ref!r}")
    if group.discovery_service is not None:
        raise DiscoveryConfigError(
            f"discovery group {ref!r} points at a discovery service; `meshmq serve discovery` needs etcd or static-connectors"
        )
    return ref, group
