"""Networks of brokers in a node's config: ActiveMQ's network connectors
(``network-connectors.<name>``) and AMQ-2875's tree connector
(``tree-connector``), with their URIs parsed and checked on load.

A network connector's keys are ActiveMQ's own attribute names, camelCase as in
activemq.xml (``networkTTL``, ``conduitSubscriptions``), with ActiveMQ's
defaults (defaults.py, ``NC_*``): users copy them from an ActiveMQ
configuration. The one kebab-case key, ``discovery-group-ref``, is meshmq's own
cross-reference, as on cluster connections. A key written the meshmq way
(``conduit-subscriptions``, ``network_ttl``) is refused with the ActiveMQ name
(`NetworkConnector.unknown_key_message`).

URIs:

* ``static:(meshmq://h1:61616,meshmq://h2:61616)``, ``static:meshmq://h:61616``
  or ``static://(...)``: a fixed list of targets. A member may be
  ``failover:(meshmq://live:61616,meshmq://backup:61617)``: one target,
  followed across a live/backup pair. A port left out is 61616, as in a client
  URI (meshmq/client/uri.py parses each member).
* ``discovery:(etcd://host:2379[,host2:2379])[?clusterName=name]``: the nodes
  of a cluster announced in etcd, as an etcd discovery group finds them (key
  prefix /meshmq, no etcd credentials: for anything else define a discovery
  group and give ``discovery-group-ref``).

Options are never read from a URI: the connector's settings are its keys, and
the link's retry and window tuning are the cluster-connection defaults.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl

from pydantic import (
    AfterValidator, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator,
)

from meshmq.config import defaults
from meshmq.config.base import ConfigModel, NonEmptyStr, RelPath, camel, kebab, raise_issues
from meshmq.config.destination_wildcards import ANY_WORDS, ONE_WORD, SEPARATOR, check_pattern
from meshmq.config.discovery import DiscoveryGroup, EtcdSettings

STATIC_EXAMPLE = "static:(meshmq://h1:61616,meshmq://h2:61616)"
DISCOVERY_EXAMPLE = "discovery:(etcd://127.0.0.1:2379)?clusterName=meshmq"
_MEMBER_EXAMPLE = "meshmq://host:61616 or failover:(meshmq://live:61616,meshmq://backup:61617)"
_ACTIVEMQ_TRANSPORTS = ("tcp", "nio", "ssl", "nio+ssl", "auto", "vm", "udp", "ws", "wss", "amqp", "stomp", "mqtt")

Target = tuple[str, ...]


def _matching_paren(text: str, opening: int, uri: str) -> int:
    """The index of the ``)`` closing the ``(`` at `opening`."""
    depth = 0
    for index in range(opening, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return index
    raise ValueError(f"unclosed '(' in {uri!r}; expected {STATIC_EXAMPLE}")


def _split_members(listed: str, uri: str) -> list[str]:
    """`listed` split at the commas outside parentheses (a failover pair is one member)."""
    members, depth, start = [], 0, 0
    for index, char in enumerate(listed):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ')' in {uri!r}")
        elif char == "," and depth == 0:
            members.append(listed[start:index])
            start = index + 1
    if depth:
        raise ValueError(f"unclosed '(' in {uri!r}")
    return members + [listed[start:]]


def _member_target(member: str, uri: str) -> Target:
    """One member of a static list -> its host:port alternatives (one, or a failover pair's)."""
    text = member.strip()
    if not text:
        raise ValueError(f"an empty member in {uri!r} (two commas, or a comma at an end)")
    scheme = text.partition(":")[0].lower()
    if scheme not in ("meshmq", "failover"):
        hint = (f"{scheme}:// is an ActiveMQ transport; a meshmq router is reached at meshmq://host:port"
                if scheme in _ACTIVEMQ_TRANSPORTS else f"expected {_MEMBER_EXAMPLE}")
        raise ValueError(f"{text!r} in {uri!r}: {hint}")
    if "?" in text:
        raise ValueError(f"{text!r} in {uri!r} has URI options, which a network link does not read: its settings "
                         "are the connector's keys, its retry and window tuning the cluster-connection defaults")
    # The client SDK's parser, for the same meshmq:// and failover: syntax a client
    # URI has (its module imports the SDK, which a config without connectors never needs).
    from meshmq.client.uri import parse_uri
    from meshmq.errors import InvalidRequestError

    try:
        parsed = parse_uri(text)
    except InvalidRequestError as exc:
        raise ValueError(str(exc)) from None
    if parsed.options.username:
        raise ValueError(f"{text!r} in {uri!r} carries a username: give userName and password as keys instead")
    return tuple(server.target for server in parsed.servers)


@lru_cache(maxsize=256)
def parse_static_uri(uri: str) -> tuple[Target, ...]:
    """``static:(member,...)``, ``static:member`` or ``static://(...)`` -> each
    member's host:port alternatives, in order (module docstring); ValueError
    saying what is wrong."""
    body = uri.strip()[len("static:"):].removeprefix("//").strip()
    if body.startswith("("):
        close = _matching_paren(body, 0, uri)
        rest = body[close + 1:]
        if rest.startswith("?"):
            raise ValueError(f"options after the list in {uri!r} are not read: give the connector's settings as "
                             "its keys (networkTTL: 2)")
        if rest:
            raise ValueError(f"unexpected {rest!r} after the list in {uri!r}; expected {STATIC_EXAMPLE}")
        listed = body[1:close]
        if not listed.strip():
            raise ValueError(f"an empty list in {uri!r}; expected {STATIC_EXAMPLE}")
        members = _split_members(listed, uri)
    else:
        if not body:
            raise ValueError(f"no target in {uri!r}; expected {STATIC_EXAMPLE}")
        members = _split_members(body, uri)
        if len(members) > 1:
            raise ValueError(f"several targets in {uri!r} need parentheses: {STATIC_EXAMPLE}")
    targets = tuple(_member_target(member, uri) for member in members)
    seen: set[str] = set()
    for target in targets:
        for endpoint in target:
            if endpoint in seen:
                raise ValueError(f"{endpoint} is listed twice in {uri!r}")
            seen.add(endpoint)
    return targets


def _validation_message(exc: ValidationError) -> str:
    return "; ".join(str((e.get("ctx") or {}).get("error") or e["msg"]) for e in exc.errors(include_url=False))


@lru_cache(maxsize=64)
def parse_discovery_uri(uri: str) -> DiscoveryGroup:
    """``discovery:(etcd://host:2379[,host:2379])[?clusterName=name]`` -> the etcd
    discovery group it names; ValueError saying what is wrong."""
    body = uri.strip()[len("discovery:"):].removeprefix("//").strip()
    if not body.startswith("("):
        raise ValueError(f"expected {DISCOVERY_EXAMPLE}, got {uri!r}")
    close = _matching_paren(body, 0, uri)
    agent, rest = body[1:close].strip(), body[close + 1:]
    if not agent.startswith("etcd://"):
        raise ValueError(f"{agent!r} in {uri!r}: meshmq discovers through etcd (in place of ActiveMQ's multicast "
                         f"and its other agents); expected {DISCOVERY_EXAMPLE}")
    hosts = agent[len("etcd://"):].rstrip("/")
    if "/" in hosts:
        raise ValueError(f"a path in {agent!r}: name the cluster with ?clusterName=... after the parenthesis")
    endpoints = tuple(endpoint.strip() for endpoint in hosts.split(","))
    if not all(endpoints):
        raise ValueError(f"an empty etcd endpoint in {uri!r}; expected etcd://host:2379[,host2:2379]")
    if rest and not rest.startswith("?"):
        raise ValueError(f"unexpected {rest!r} after the discovery agent in {uri!r}; expected {DISCOVERY_EXAMPLE}")
    options = dict(parse_qsl(rest[1:], keep_blank_values=True))
    unknown = sorted(set(options) - {"clusterName"})
    if unknown:
        raise ValueError(f"unknown URI option {', '.join(unknown)} in {uri!r}: the only one is clusterName; "
                         "the connector's settings are its keys")
    try:
        return DiscoveryGroup(etcd=EtcdSettings(endpoints=endpoints),
                              cluster_name=options.get("clusterName", defaults.CLUSTER_NAME))
    except ValidationError as exc:
        raise ValueError(f"{uri!r}: {_validation_message(exc)}") from None


def _checked_pattern(pattern: str) -> str:
    problem = check_pattern(pattern)
    if problem is not None:
        raise ValueError(problem)
    return pattern


def _exact_name(name: str) -> str:
    _checked_pattern(name)
    if any(word in (ONE_WORD, ANY_WORDS) for word in name.split(SEPARATOR)):
        raise ValueError(f"{name!r} has a wildcard: statically included destinations are exact names (forwarded "
                         "with no demand, so each must name one destination), no '*' or '>'")
    return name


DestinationPattern = Annotated[str, AfterValidator(_checked_pattern)]
DestinationName = Annotated[str, AfterValidator(_exact_name)]


class Destinations(ConfigModel):
    """Queues and topics, configured apart, as ActiveMQ destination wildcards
    (destination_wildcards.py: ``.``, ``*``, ``>``)."""

    queues: tuple[DestinationPattern, ...] = ()
    topics: tuple[DestinationPattern, ...] = ()


class StaticDestinations(ConfigModel):
    """``staticallyIncludedDestinations``: exact queue and topic names."""

    queues: tuple[DestinationName, ...] = ()
    topics: tuple[DestinationName, ...] = ()


Ttl = Annotated[int, Field(ge=1)]


class NetworkConnector(ConfigModel):
    """A link to other brokers over which destinations' demand and messages
    propagate (ActiveMQ's ``<networkConnector>``; the module docstring says
    how keys and URIs are written). The key under ``network-connectors`` is
    its name. Exactly one of ``uri`` and ``discovery-group-ref`` says where
    the other brokers are: the parsed URI is `targets` (static) or
    `discovery` (discovery:); with ``discovery-group-ref`` both are empty and
    the group is the node's ``discovery-groups`` entry of that name.

    One-way unless ``duplex``: messages flow from this broker, demand flows
    back to it."""

    model_config = ConfigDict(alias_generator=camel)

    uri: NonEmptyStr | None = None
    discovery_group_ref: NonEmptyStr | None = Field(None, alias="discovery-group-ref")
    duplex: bool = defaults.NC_DUPLEX
    network_ttl: Ttl = Field(defaults.NC_NETWORK_TTL, alias="networkTTL")
    # Not set: networkTTL (the resolved values are message_ttl and consumer_ttl).
    explicit_message_ttl: Ttl | None = Field(None, alias="messageTTL")
    explicit_consumer_ttl: Ttl | None = Field(None, alias="consumerTTL")
    conduit_subscriptions: bool = defaults.NC_CONDUIT_SUBSCRIPTIONS
    dynamic_only: bool = defaults.NC_DYNAMIC_ONLY
    decrease_network_consumer_priority: bool = defaults.NC_DECREASE_NETWORK_CONSUMER_PRIORITY
    suppress_duplicate_queue_subscriptions: bool = defaults.NC_SUPPRESS_DUPLICATE_QUEUE_SUBSCRIPTIONS
    suppress_duplicate_topic_subscriptions: bool = defaults.NC_SUPPRESS_DUPLICATE_TOPIC_SUBSCRIPTIONS
    prefetch_size: Annotated[int, Field(ge=1)] = defaults.NC_PREFETCH_SIZE
    bridge_temp_destinations: bool = defaults.NC_BRIDGE_TEMP_DESTINATIONS
    user_name: NonEmptyStr | None = None
    password: NonEmptyStr | None = None
    replay_when_no_consumers: bool = defaults.NC_REPLAY_WHEN_NO_CONSUMERS
    statically_included_destinations: StaticDestinations = Field(default_factory=StaticDestinations)
    dynamically_included_destinations: Destinations = Field(default_factory=Destinations)
    excluded_destinations: Destinations = Field(default_factory=Destinations)

    @classmethod
    def unknown_key_message(cls, key: str) -> str | None:
        """What to say about an unknown `key` when it is one of ours spelt
        another way (the loader asks), or None."""
        if key == "name":
            return "the network connector's name is its key under network-connectors"
        folded = key.replace("-", "").replace("_", "").lower()
        for name, info in cls.model_fields.items():
            alias = info.alias or name
            if folded == alias.replace("-", "").lower() and key != alias:
                whose = "meshmq's cross-reference" if alias == kebab(name) else "ActiveMQ's name"
                return f"unknown key: did you mean {alias} ({whose})?"
        return None

    @field_validator("uri")
    @classmethod
    def _parse_uri(cls, uri: str | None) -> str | None:
        if uri is None:
            return None
        scheme = uri.strip().partition(":")[0].lower()
        if scheme == "static":
            parse_static_uri(uri)
        elif scheme == "discovery":
            parse_discovery_uri(uri)
        elif scheme == "multicast":
            raise ValueError(f"multicast discovery is replaced by etcd: {DISCOVERY_EXAMPLE}")
        else:
            raise ValueError(f"expected {STATIC_EXAMPLE} or {DISCOVERY_EXAMPLE}, got {uri!r}")
        return uri

    @model_validator(mode="after")
    def _check(self) -> NetworkConnector:
        issues: list[tuple[RelPath, str]] = []
        if self.uri is None and self.discovery_group_ref is None:
            issues.append(((), "give uri (static:(...) or discovery:(...)) or discovery-group-ref: where the "
                               "other brokers are"))
        if self.uri is not None and self.discovery_group_ref is not None:
            issues.append((("discovery-group-ref",), "give uri or discovery-group-ref, not both"))
        if (self.user_name is None) != (self.password is None):
            missing = "password" if self.password is None else "userName"
            issues.append(((missing,), "give both userName and password, or neither"))
        raise_issues(issues)
        return self

    @property
    def targets(self) -> tuple[Target, ...]:
        """A static URI's targets, each its host:port alternatives (one; two or
        more for a failover pair); () for discovery."""
        return parse_static_uri(self.uri) if self._scheme == "static" else ()

    @property
    def discovery(self) -> DiscoveryGroup | None:
        """The etcd discovery group a discovery: URI names; None otherwise."""
        return parse_discovery_uri(self.uri) if self._scheme == "discovery" else None

    @property
    def message_ttl(self) -> int:
        """How many brokers a message may cross (messageTTL, default networkTTL)."""
        return self.network_ttl if self.explicit_message_ttl is None else self.explicit_message_ttl

    @property
    def consumer_ttl(self) -> int:
        """How many brokers a demand (consumer) may cross (consumerTTL, default networkTTL)."""
        return self.network_ttl if self.explicit_consumer_ttl is None else self.explicit_consumer_ttl

    @property
    def _scheme(self) -> str | None:
        return None if self.uri is None else self.uri.strip().partition(":")[0].lower()


def network_connector_issues(
    network_connectors: dict[str, NetworkConnector], discovery_groups: dict[str, DiscoveryGroup],
) -> list[tuple[RelPath, str]]:
    """Cross-references of network-connectors: discovery groups that exist."""
    groups = ", ".join(discovery_groups) or "none"
    return [
        (("network-connectors", name, "discovery-group-ref"),
         f"no discovery group named {nc.discovery_group_ref!r} (discovery-groups: {groups})")
        for name, nc in network_connectors.items()
        if nc.discovery_group_ref is not None and nc.discovery_group_ref not in discovery_groups
    ]


def _node_type(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() == "root":
        raise ValueError("a node without tree-connector is the root: leave tree-connector out on it")
    return value


class TreeConnector(ConfigModel):
    """This node's place in a tree of brokers (AMQ-2875): a leaf links to its
    branch, a branch to the root, and demand travels only along the tree (no
    networkTTL). A node without ``tree-connector`` is the root: nothing is
    configured on it but its acceptor. A node may have network-connectors
    as well.

    ``uri`` names the parent: the static forms of a network connector with
    exactly one target (a failover pair counts as one), never discovery."""

    node_type: Annotated[Literal["leaf", "branch"], BeforeValidator(_node_type)]
    uri: NonEmptyStr
    prefetch_size: Annotated[int, Field(ge=1)] = defaults.TC_PREFETCH_SIZE

    @field_validator("uri")
    @classmethod
    def _one_parent(cls, uri: str) -> str:
        scheme = uri.strip().partition(":")[0].lower()
        if scheme == "discovery":
            raise ValueError("discovery is not allowed here: a leaf names its branch (a branch the root), since "
                             "demand must go up one link to one parent; use static:meshmq://parent:61616")
        if scheme != "static":
            raise ValueError(f"expected static:meshmq://parent:61616 (or a live/backup pair: "
                             f"static:failover:(meshmq://live:61616,meshmq://backup:61617)), got {uri!r}")
        targets = parse_static_uri(uri)
        if len(targets) != 1:
            raise ValueError(f"{len(targets)} targets in {uri!r}: a tree node has exactly one parent (a live/backup "
                             "pair is one target: failover:(meshmq://live:61616,meshmq://backup:61617))")
        return uri

    @property
    def target(self) -> Target:
        """The parent's host:port alternatives (one, or a failover pair's)."""
        return parse_static_uri(self.uri)[0]
