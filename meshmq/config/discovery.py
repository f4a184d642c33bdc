"""Discovery groups (where a node learns the topology: etcd, a discovery
service, or a static list) and broadcast groups (how it announces itself):
broker.xml's ``<discovery-group>`` and ``<broadcast-group>``, with etcd in place
of UDP multicast and JGroups. A module of its own because network connectors
(network.py) build a discovery group from their URI.
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from meshmq.config import defaults
from meshmq.config.base import ConfigModel, Millis, NonEmptyStr, RelPath, parse_host_port, raise_issues


# Artemis's UDP and JGroups keys: meshmq replaces both with etcd.
_MULTICAST_KEYS = ("group-address", "group-port", "local-bind-address", "local-bind-port", "jgroups-file",
                   "jgroups-channel", "jgroups-properties")
_SOURCES = ("etcd", "discovery-service", "static-connectors")


def _refuse_multicast_keys(data: Any) -> Any:
    if isinstance(data, dict):
        issues: list[tuple[RelPath, str]] = [
            ((key,), f"{key} configures UDP multicast or JGroups, which meshmq replaces with etcd: "
                     "use etcd.endpoints (or static-connectors where there is no etcd)")
            for key in _MULTICAST_KEYS if key in data
        ]
        raise_issues(issues)
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


class EtcdSettings(ConfigModel):
    """Where the etcd cluster is (each entry one member's client URL)."""

    endpoints: Annotated[tuple[NonEmptyStr, ...], Field(min_length=1)] = (defaults.ETCD_ENDPOINT,)
    key_prefix: NonEmptyStr = defaults.ETCD_KEY_PREFIX
    # etcd's own authentication (`etcdctl auth enable`): the etcd user this node
    # announces and watches as (docs/discovery.md). Both or neither.
    username: NonEmptyStr | None = None
    password: NonEmptyStr | None = None

    @model_validator(mode="after")
    def _both_or_neither(self) -> EtcdSettings:
        if (self.username is None) != (self.password is None):
            missing = "password" if self.password is None else "username"
            raise_issues([((missing,), "etcd authentication needs both username and password")])
        return self

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


class DiscoveryGroup(ConfigModel):
    """Where a node learns the topology from (broker.xml ``<discovery-group>``):
    exactly one of etcd, discovery-service or static-connectors."""

    etcd: EtcdSettings | None = None
    # host:port of `meshmq serve discovery`; the service then holds this node's lease.
    discovery_service: str | None = None
    # The Artemis static-connectors case: a fixed list, for networks without etcd.
    static_connectors: tuple[NonEmptyStr, ...] | None = None
    cluster_name: NonEmptyStr = defaults.CLUSTER_NAME
    refresh_timeout: Millis = defaults.REFRESH_TIMEOUT
    initial_wait_timeout: Annotated[int, Field(ge=0)] = defaults.INITIAL_WAIT_TIMEOUT

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
        if self.etcd is not None and self.refresh_timeout < defaults.ETCD_MIN_REFRESH_TIMEOUT:
            issues.append((("refresh-timeout",), f"{self.refresh_timeout} ms is below etcd's smallest lease TTL "
                                                 f"({defaults.ETCD_MIN_REFRESH_TIMEOUT} ms), which etcd would use instead"))
        raise_issues(issues)
        return self

    @property
    def source(self) -> Literal["etcd", "discovery-service", "static-connectors"]:
        return next(k for k in _SOURCES if getattr(self, k.replace("-", "_")) is not None)


class BroadcastGroup(ConfigModel):
    """How this node announces itself (broker.xml ``<broadcast-group>``)."""

    discovery_group_ref: NonEmptyStr
    broadcast_period: Millis = defaults.BROADCAST_PERIOD
    # An acceptor's name: the connector announced is where it listens. Default: the first acceptor.
    connector_ref: NonEmptyStr | None = None

    @model_validator(mode="before")
    @classmethod
    def _refuse_multicast(cls, data: Any) -> Any:
        return _refuse_multicast_keys(data)
