"""The cluster file: which processes `meshmq cluster up` starts on loopback.

```yaml
cluster-name: symmetric-3          # also the discovery cluster-name the nodes share
run-directory: ./run/symmetric-3   # default ./run/<cluster-name> (relative: to the working directory)
ready-timeout: 60000               # ms `up` waits for every node to be listening and in the topology
etcd: {client-port: 2379, peer-port: 2380}        # 0 = a free port picked at run time
discovery: {port: 61636, broadcast-period: 2000, refresh-timeout: 10000}
ha-coordinator: {port: 61646}      # optional: `meshmq serve ha-coordinator` on the launched etcd
gateway: {port: 8161}              # optional: `meshmq serve gateway` (REST API and console) over the nodes
tls: {ca-dir: ./certs/ca}          # optional: every listener serves a certificate from this CA
node-defaults:                     # node-config YAML merged into every node
  address-settings: {"#": {max-delivery-attempts: 5}}
nodes:
  - {name: n1, port: 61616}
  - {name: n2, port: 61617, config: {journal: {sync: false}}}   # merged over node-defaults
```

Validated like a node config (`meshmq/config/`): every problem at once, each
as ``FILE:LINE: key.path: message``, unknown keys with a "did you mean". The
node-config parts are validated as the node configs the launcher will write,
and their problems are named by where they are in the cluster file
(``nodes[1].config.journal.sync``). Relative paths inside node configs
(``cert-path``...) are relative to the cluster file's directory.

Security: the security keys of ``node-defaults`` (``SECURITY_KEYS``) are
also the discovery service's, which needs the cluster password and the users
who may list the nodes; with ``tls``, `up` issues each process a certificate
(meshmq/launcher/tls.py) and the acceptors and the discovery listener serve it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from meshmq.config import defaults
from meshmq.config.loader import ConfigError, ConfigProblem, validation_problems
from meshmq.config.models import BrokerConfig, ConfigIssues, RelPath, parse_host_port
from meshmq.config.yaml_source import KeyPath, YamlDocument, YamlSourceError, format_key_path, load_yaml
from meshmq.launcher.tls import Certificate

# --- defaults of the cluster file (the node-config ones come from meshmq/config/defaults.py) ---

# run-directory: ./run/<cluster-name>, relative to the working directory.
RUN_DIRECTORY_ROOT = Path("run")
# ready-timeout: ms `up` waits for every node to listen and to be in the topology.
READY_TIMEOUT = 60000
# etcd.client-port / etcd.peer-port: etcd's own defaults.
ETCD_CLIENT_PORT = parse_host_port(defaults.ETCD_ENDPOINT)[1]
ETCD_PEER_PORT = 2380
# nodes[].port: 0 = a free port picked at run time.
NODE_PORT = 0
# Everything runs on loopback.
HOST = "127.0.0.1"

# Node-config keys the launcher writes itself; the cluster file says them another way.
LAUNCHER_KEYS = {
    "name": "the node name is nodes[].name",
    "data-directory": "each node's data directory is <run-directory>/<node>/data",
    "acceptors": "each node has one acceptor on 127.0.0.1:nodes[].port",
    "discovery-groups": "nodes discover each other through the launched etcd (tune it under discovery:)",
    "broadcast-groups": "nodes announce themselves to the launched etcd (tune it under discovery:)",
    "discovery": "the discovery service is configured under the cluster file's discovery: key",
}
# Node-config keys of node-defaults the discovery service gets too: it checks the
# cluster credential on Announce and admits the users to List and Watch.
SECURITY_KEYS = ("security-enabled", "users", "security-settings", "cluster-user", "cluster-password")
# Process names of the launcher's own processes (log and pid files share the run directory).
RESERVED_NAMES = ("etcd", "discovery", "ha-coordinator", "gateway", "cluster")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")


def _valid_name(value: str) -> str:
    if not _NAME.fullmatch(value):
        raise ValueError(f"{value!r}: use 1 to 63 letters, digits, '_', '.' or '-', starting with a letter or digit "
                         "(it names files and directories)")
    return value


def _none_is_empty_dict(value: Any) -> Any:
    return {} if value is None else value


Name = Annotated[str, Field(min_length=1)]
Port = Annotated[int, Field(ge=0, le=65535)]
Millis = Annotated[int, Field(gt=0)]
NodeConfigYaml = Annotated[dict[str, Any], BeforeValidator(_none_is_empty_dict)]


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, alias_generator=_kebab)


class EtcdSpec(_Model):
    """The etcd the launcher starts (one member, data under <run>/etcd/data, wiped at each `up`)."""

    client_port: Port = ETCD_CLIENT_PORT
    peer_port: Port = ETCD_PEER_PORT


class DiscoverySpec(_Model):
    """The discovery service the launcher starts, and the discovery settings every node gets."""

    port: Port = defaults.DISCOVERY_LISTEN_PORT
    broadcast_period: Millis = defaults.BROADCAST_PERIOD
    refresh_timeout: Annotated[int, Field(ge=defaults.ETCD_MIN_REFRESH_TIMEOUT)] = defaults.REFRESH_TIMEOUT

    @model_validator(mode="after")
    def _period_below_timeout(self) -> DiscoverySpec:
        if self.broadcast_period >= self.refresh_timeout:
            raise ConfigIssues([(("broadcast-period",),
                                 f"{self.broadcast_period} ms must be less than refresh-timeout "
                                 f"({self.refresh_timeout} ms), or a node vanishes between keep-alives")])
        return self


class HaCoordinatorSpec(_Model):
    """The HA coordinator the launcher starts on the launched etcd (nodes reach it with
    `manager: {class-name: coordinator, properties: {connect-string: 127.0.0.1:<port>}}`)."""

    port: Port = defaults.HA_COORDINATOR_LISTEN_PORT


class GatewaySpec(_Model):
    """The admin gateway the launcher starts: it shows the nodes of the launched
    discovery group and logs people in with node-defaults' users and roles."""

    port: Port = defaults.GATEWAY_LISTEN_PORT
    # Accept default credentials (and, with no users in node-defaults, the built-in admin/admin).
    dev_mode: bool = defaults.GATEWAY_DEV_MODE
    # How often it samples the nodes for the rates and charts (ms; gateway.history-interval).
    history_interval: Millis = defaults.GATEWAY_HISTORY_INTERVAL


class TlsSpec(_Model):
    """TLS with the cluster's CA on every listener the launcher starts."""

    # The directory of `meshmq certs ca` (ca.pem, ca-key.pem); relative: to the cluster file.
    ca_dir: Path


class NodeSpec(_Model):
    """One router: its name, its acceptor port, node-config YAML merged over node-defaults."""

    name: Name
    port: Port = NODE_PORT
    config: NodeConfigYaml = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        _valid_name(value)
        if value in RESERVED_NAMES:
            raise ValueError(f"{value!r} is reserved for the launcher's own processes ({', '.join(RESERVED_NAMES)})")
        return value


class ClusterSpec(_Model):
    """A whole cluster file. Build it with `load_cluster_spec` (file) or
    `ClusterSpec.parse(dict)` (code); both validate the node configs too."""

    cluster_name: Name
    run_directory: Path | None = None
    ready_timeout: Millis = READY_TIMEOUT
    etcd: EtcdSpec = Field(default_factory=EtcdSpec)
    discovery: DiscoverySpec = Field(default_factory=DiscoverySpec)
    ha_coordinator: HaCoordinatorSpec | None = None
    gateway: GatewaySpec | None = None
    tls: TlsSpec | None = None
    node_defaults: NodeConfigYaml = Field(default_factory=dict)
    nodes: Annotated[tuple[NodeSpec, ...], Field(min_length=1)]

    # Where relative paths in node configs are resolved (the cluster file's directory).
    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)
    # The cluster file, when loaded from one.
    _source: str = PrivateAttr(default="<string>")

    @classmethod
    def parse(cls, data: dict[str, Any], *, base_dir: str | Path | None = None, source: str = "<dict>") -> ClusterSpec:
        """Validate a cluster definition given as data (keys as in the file)."""
        return _validate(data, YamlDocument(data=data), source, Path(base_dir) if base_dir else Path.cwd())

    @field_validator("cluster_name")
    @classmethod
    def _check_cluster_name(cls, value: str) -> str:
        return _valid_name(value)

    @field_validator("run_directory")
    @classmethod
    def _absolute_run_directory(cls, value: Path | None) -> Path | None:
        return None if value is None else Path(value).expanduser().resolve()

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> ClusterSpec:
        context = info.context if isinstance(info.context, dict) else {}
        self._base_dir = Path(context.get("base_dir") or Path.cwd())
        self._source = str(context.get("source") or "<string>")
        issues = _name_and_port_issues(self)
        for where, data in _node_config_sources(self):
            for key in data:
                if key in LAUNCHER_KEYS:
                    issues.append((where + (key,), f"set by the launcher: {LAUNCHER_KEYS[key]}"))
        if not issues:
            issues = _node_config_issues(self)
        if issues:
            raise ConfigIssues(issues)
        return self

    # --- what the launcher reads -------------------------------------------

    @property
    def run_dir(self) -> Path:
        """run-directory, or ./run/<cluster-name> under the working directory."""
        return self.run_directory or (Path.cwd() / RUN_DIRECTORY_ROOT / self.cluster_name).resolve()

    @property
    def base_dir(self) -> Path:
        return self._base_dir

    @property
    def source(self) -> str:
        return self._source

    @property
    def ca_dir(self) -> Path | None:
        """tls.ca-dir, absolute (relative to the cluster file's directory); None without tls."""
        return None if self.tls is None else (self._base_dir / self.tls.ca_dir).expanduser().resolve()

    def with_free_ports(self) -> ClusterSpec:
        """The same cluster with every port 0 (picked at run time): for tests,
        and for running an example beside something that holds its ports."""
        return self._copy(
            etcd=self.etcd.model_copy(update={"client_port": 0, "peer_port": 0}),
            discovery=self.discovery.model_copy(update={"port": 0}),
            gateway=self.gateway and self.gateway.model_copy(update={"port": 0}),
            nodes=tuple(n.model_copy(update={"port": 0}) for n in self.nodes),
        )

    def with_run_directory(self, run_dir: str | Path) -> ClusterSpec:
        return self._copy(run_directory=Path(run_dir).expanduser().resolve())

    def _copy(self, **update: Any) -> ClusterSpec:
        copy = self.model_copy(update=update)
        copy._base_dir, copy._source = self._base_dir, self._source
        return copy


def load_cluster_spec(path: str | Path) -> ClusterSpec:
    """Load and validate a cluster file; ConfigError names every problem's line and key."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([ConfigProblem(str(path), None, "", f"cannot read cluster file: {exc}")]) from None
    return load_cluster_spec_text(text, source=str(path), base_dir=path.resolve().parent)


def load_cluster_spec_text(text: str, source: str = "<string>", *, base_dir: str | Path | None = None) -> ClusterSpec:
    try:
        document = load_yaml(text)
    except YamlSourceError as exc:
        raise ConfigError([ConfigProblem(source, p.line, format_key_path(p.path), p.message)
                           for p in exc.problems]) from None
    if not isinstance(document.data, dict):
        message = "a cluster file is a mapping with cluster-name, nodes, ... (see docs/cluster-launcher.md)"
        raise ConfigError([ConfigProblem(source, document.line_for(()), "", message)])
    return _validate(document.data, document, source, Path(base_dir) if base_dir else Path.cwd())


def _validate(data: dict[str, Any], document: YamlDocument, source: str, base_dir: Path) -> ClusterSpec:
    try:
        return ClusterSpec.model_validate(data, context={"base_dir": base_dir, "source": source},
                                          by_alias=True, by_name=False)
    except ValidationError as exc:
        problems = [ConfigProblem(source, document.line_for(loc), format_key_path(loc), message)
                    for loc, message in validation_problems(exc, ClusterSpec)]
        raise ConfigError(_unique(sorted(problems, key=lambda p: p.line or 0))) from None


# --- node configs --------------------------------------------------------------


# Every launched process serves Prometheus metrics on a port picked at its start: the
# URL is in its ready file, the state file and `meshmq cluster status` (docs/metrics.md).
# A cluster file may set `metrics` in node-defaults or a node's config instead.
LAUNCHED_METRICS = {"enabled": True, "host": HOST, "port": 0}


def with_metrics(data: dict[str, Any]) -> dict[str, Any]:
    """A launched process's config data with metrics on, unless it says otherwise."""
    return deep_merge({"metrics": LAUNCHED_METRICS}, data)


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`override` over `base`: mappings merge key by key, anything else
    (lists included) is replaced."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


DISCOVERY_GROUP = "cluster"


def discovery_groups(spec: ClusterSpec, etcd_endpoint: str) -> dict[str, Any]:
    return {DISCOVERY_GROUP: {
        "etcd": {"endpoints": [etcd_endpoint]},
        "cluster-name": spec.cluster_name,
        "refresh-timeout": spec.discovery.refresh_timeout,
    }}


def _tls_keys(certificate: Certificate | None, *, trust: bool = False) -> dict[str, Any]:
    """A listener's TLS keys for `certificate` (none: plain); with `trust`,
    also the CA, which a router's cluster links trust (link_identity.py)."""
    if certificate is None:
        return {}
    keys = {"ssl-enabled": True, "cert-path": str(certificate.cert), "key-path": str(certificate.key)}
    return {**keys, "trust-path": str(certificate.ca)} if trust else keys


def node_config_data(spec: ClusterSpec, node: NodeSpec, *, etcd_endpoint: str, run_dir: Path,
                     certificate: Certificate | None = None) -> dict[str, Any]:
    """The node config the launcher writes for `node`: its acceptor (serving
    `certificate`, when given: the launcher issues one when the file has tls),
    its data directory, discovery through the launched etcd, announced to it;
    then node-defaults, then the node's own config merged over that."""
    launcher = {
        "name": node.name,
        "data-directory": str(run_dir / node.name / "data"),
        "acceptors": [{"name": defaults.ACCEPTOR_NAME, "host": HOST, "port": node.port,
                       **_tls_keys(certificate, trust=True)}],
        "discovery-groups": discovery_groups(spec, etcd_endpoint),
        "broadcast-groups": {DISCOVERY_GROUP: {"discovery-group-ref": DISCOVERY_GROUP,
                                               "broadcast-period": spec.discovery.broadcast_period}},
    }
    return deep_merge(deep_merge(launcher, spec.node_defaults), node.config)


def discovery_config_data(spec: ClusterSpec, *, etcd_endpoint: str, run_dir: Path,
                          certificate: Certificate | None = None) -> dict[str, Any]:
    """The config `meshmq serve discovery` gets: the launched etcd, the cluster's
    name, the port (serving `certificate` when given), and node-defaults'
    security keys."""
    security = {key: spec.node_defaults[key] for key in SECURITY_KEYS if key in spec.node_defaults}
    return {
        "name": "discovery",
        "data-directory": str(run_dir / "discovery"),
        "discovery-groups": discovery_groups(spec, etcd_endpoint),
        "discovery": {"listen": {"host": HOST, "port": spec.discovery.port, **_tls_keys(certificate)},
                      "discovery-group-ref": DISCOVERY_GROUP},
        **security,
    }


def ha_coordinator_config_data(spec: ClusterSpec, *, etcd_endpoint: str, run_dir: Path) -> dict[str, Any]:
    """The config `meshmq serve ha-coordinator` gets: the launched etcd, its port,
    and node-defaults' security keys (it checks the cluster credential)."""
    assert spec.ha_coordinator is not None
    security = {key: spec.node_defaults[key] for key in SECURITY_KEYS if key in spec.node_defaults}
    return {
        "name": "ha-coordinator",
        "data-directory": str(run_dir / "ha-coordinator"),
        "ha-coordinator": {"listen": {"host": HOST, "port": spec.ha_coordinator.port},
                           "etcd": {"endpoints": [etcd_endpoint]}},
        **security,
    }


def gateway_config_data(spec: ClusterSpec, *, etcd_endpoint: str, run_dir: Path,
                        certificate: Certificate | None = None) -> dict[str, Any]:
    """The config `meshmq serve gateway` gets: the nodes' discovery group, its
    port, and node-defaults' security keys (the same users and roles as the nodes);
    with tls, HTTPS with `certificate` and TLS to the routers trusting the cluster CA."""
    assert spec.gateway is not None
    security = {key: spec.node_defaults[key] for key in SECURITY_KEYS if key in spec.node_defaults}
    tls = ({"cert-path": str(certificate.cert), "key-path": str(certificate.key)} if certificate else {})
    return {
        "name": "gateway",
        "data-directory": str(run_dir / "gateway"),
        "discovery-groups": discovery_groups(spec, etcd_endpoint),
        "gateway": {"listen": {"host": HOST, "port": spec.gateway.port, **tls},
                    "discovery-group-ref": DISCOVERY_GROUP, "dev-mode": spec.gateway.dev_mode,
                    "history-interval": spec.gateway.history_interval,
                    **({"trust-path": str(certificate.ca)} if certificate else {}),
                    # The launched HA coordinator, when its port is known before it starts.
                    **({"ha-coordinator": f"{HOST}:{spec.ha_coordinator.port}"}
                       if spec.ha_coordinator is not None and spec.ha_coordinator.port else {})},
        **security,
    }


def build_config(data: dict[str, Any], base_dir: Path) -> BrokerConfig:
    """Validate node-config data (relative paths against base_dir)."""
    return BrokerConfig.model_validate(data, context={"base_dir": base_dir}, by_alias=True, by_name=False)


# --- checks ------------------------------------------------------------------------


def _name_and_port_issues(spec: ClusterSpec) -> list[tuple[RelPath, str]]:
    issues: list[tuple[RelPath, str]] = []
    names: dict[str, int] = {}
    for index, node in enumerate(spec.nodes):
        if node.name in names:
            why = f"duplicate node name {node.name!r} (also nodes[{names[node.name]}])"
            issues.append((("nodes", index, "name"), why))
        names.setdefault(node.name, index)
    ports: list[tuple[RelPath, int]] = [
        (("etcd", "client-port"), spec.etcd.client_port),
        (("etcd", "peer-port"), spec.etcd.peer_port),
        (("discovery", "port"), spec.discovery.port),
        *([(("ha-coordinator", "port"), spec.ha_coordinator.port)] if spec.ha_coordinator else []),
        *([(("gateway", "port"), spec.gateway.port)] if spec.gateway else []),
        *((("nodes", i, "port"), n.port) for i, n in enumerate(spec.nodes)),
    ]
    seen: dict[int, RelPath] = {}
    for where, port in ports:
        if port == 0:
            continue
        if port in seen:
            issues.append((where, f"port {port} is already used by {format_key_path(seen[port])}"))
        seen.setdefault(port, where)
    return issues


def _node_config_sources(spec: ClusterSpec) -> list[tuple[RelPath, dict[str, Any]]]:
    return [(("node-defaults",), spec.node_defaults),
            *((("nodes", i, "config"), n.config) for i, n in enumerate(spec.nodes))]


def _node_config_issues(spec: ClusterSpec) -> list[tuple[RelPath, str]]:
    """Each node's config as the launcher would write it (with stand-in etcd
    and run directory), its problems named where they are in the cluster file."""
    issues: list[tuple[RelPath, str]] = []
    stand_in_etcd = f"{HOST}:{spec.etcd.client_port or ETCD_CLIENT_PORT}"
    for index, node in enumerate(spec.nodes):
        data = node_config_data(spec, node, etcd_endpoint=stand_in_etcd, run_dir=spec.run_dir)
        try:
            build_config(data, spec.base_dir)
        except ValidationError as exc:
            for loc, message in validation_problems(exc, BrokerConfig):
                issues.append((_origin(loc, spec, index), message))
    if not issues:
        issues = _discovery_config_issues(spec, stand_in_etcd)
    return _unique(issues)


def _discovery_config_issues(spec: ClusterSpec, stand_in_etcd: str) -> list[tuple[RelPath, str]]:
    """What would stop the discovery service from starting, named in node-defaults
    (its only node-config part): with security-enabled, no cluster-password."""
    from meshmq.security.cluster_identity import service_problem

    data = discovery_config_data(spec, etcd_endpoint=stand_in_etcd, run_dir=spec.run_dir)
    try:
        config = build_config(data, spec.base_dir)
    except ValidationError as exc:  # the nodes' configs hold the same keys: seldom reached
        return [(("node-defaults",) + tuple(loc), message) for loc, message in validation_problems(exc, BrokerConfig)]
    if service_problem(config, "discovery") is None:
        return []
    return [(("node-defaults", "cluster-password"),
             "required when node-defaults has security-enabled: true: without it the launched discovery service "
             "would accept any caller, so it refuses to start (docs/security.md, \"Cluster identity\")")]


def _origin(loc: KeyPath, spec: ClusterSpec, index: int) -> RelPath:
    """Where in the cluster file the node-config key at `loc` comes from: the
    node's own config or node-defaults, whichever holds more of its path (the
    node's when neither holds any: a key missing there, e.g. `users`)."""
    best: tuple[int, RelPath] = (0, ("nodes", index, "config") + tuple(loc))
    for where, data in (("node-defaults",), spec.node_defaults), (("nodes", index, "config"), spec.nodes[index].config):
        depth = _depth(data, loc)
        if depth and depth >= best[0]:
            best = (depth, where + tuple(loc))
    return best[1]


def _depth(data: Any, loc: KeyPath) -> int:
    depth = 0
    for part in loc:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            break
        depth += 1
    return depth


def _unique(items: list) -> list:
    return list(dict.fromkeys(items))


# --- pydantic errors -> (key path, message), as meshmq/config/loader.py words them ---
