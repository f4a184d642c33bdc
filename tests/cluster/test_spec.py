"""The cluster file: examples, errors (file, line, key), the node configs the launcher writes."""

from __future__ import annotations

import socket
import textwrap
from pathlib import Path

import pytest

from meshmq.launcher import ClusterSpec, ClusterUpError, LocalCluster, load_cluster_spec, load_cluster_spec_text
from meshmq.launcher.launcher import missing_from_topology
from meshmq.launcher.spec import build_config, deep_merge, discovery_config_data, node_config_data
from meshmq.launcher.state import ProcessRecord
from meshmq.config.loader import ConfigError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "deploy" / "local").glob("*.yaml"))


def problems(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load_cluster_spec_text(textwrap.dedent(text), source="c.yaml")
    return str(info.value)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_is_valid(path):
    spec = load_cluster_spec(path)
    assert spec.nodes and spec.source == str(path)


def test_the_symmetric_example():
    spec = load_cluster_spec(ROOT / "deploy/local/symmetric-3.yaml")
    assert spec.cluster_name == "symmetric-3"
    assert [(n.name, n.port) for n in spec.nodes] == [("n1", 61616), ("n2", 61617), ("n3", 61618)]
    assert (spec.etcd.client_port, spec.discovery.port) == (2379, 61636)
    assert spec.run_dir == Path.cwd().resolve() / "run" / "symmetric-3"
    free = spec.with_free_ports()
    assert {n.port for n in free.nodes} == {0}
    assert (free.etcd.client_port, free.etcd.peer_port, free.discovery.port) == (0, 0, 0)
    assert free.source == spec.source and free.base_dir == spec.base_dir


def test_defaults_and_a_minimal_file(tmp_path):
    spec = load_cluster_spec_text("cluster-name: c\nnodes: [{name: a}]\n", base_dir=tmp_path)
    assert spec.nodes[0].port == 0 and spec.nodes[0].config == {}
    assert spec.ready_timeout == 60000
    assert (spec.discovery.broadcast_period, spec.discovery.refresh_timeout) == (2000, 10000)
    spec = load_cluster_spec_text("cluster-name: c\nrun-directory: somewhere\nnodes: [{name: a}]\n")
    assert spec.run_dir == Path.cwd().resolve() / "somewhere"


def test_unknown_keys_and_bad_values_name_file_line_and_key():
    said = problems("""\
        cluster-name: c
        ready-timout: 5
        etcd:
          client-port: 99999
        discovery:
          broadcast-period: 20000
        nodes:
          - name: a/b
            prot: 1
        """)
    assert said.splitlines() == [
        "c.yaml:2: ready-timout: unknown key (did you mean 'ready-timeout'?)",
        "c.yaml:4: etcd.client-port: Input should be less than or equal to 65535",
        "c.yaml:6: discovery.broadcast-period: 20000 ms must be less than refresh-timeout (10000 ms), "
        "or a node vanishes between keep-alives",
        "c.yaml:8: nodes[0].name: 'a/b': use 1 to 63 letters, digits, '_', '.' or '-', starting with a letter "
        "or digit (it names files and directories)",
        "c.yaml:9: nodes[0].prot: unknown key (did you mean 'port'?)",
    ]


def test_required_keys_and_refresh_timeout_floor():
    said = problems("""\
        discovery: {refresh-timeout: 1000, broadcast-period: 500}
        """)
    assert "c.yaml:1: discovery.refresh-timeout: Input should be greater than or equal to 2000" in said
    assert "cluster-name: required key is missing" in said
    assert "nodes: required key is missing" in said
    said = problems("cluster-name: c\nnodes: []\n")
    assert said == "c.yaml:2: nodes: Tuple should have at least 1 item after validation, not 0"
    assert "a cluster file is a mapping" in problems("- just a list\n")


def test_duplicate_names_reserved_names_and_shared_ports():
    said = problems("""\
        cluster-name: c
        etcd: {client-port: 2379, peer-port: 2380}
        discovery: {port: 61616}
        nodes:
          - {name: n1, port: 61616}
          - {name: n1, port: 2379}
          - {name: etcd}
        """)
    assert "c.yaml:7: nodes[2].name: 'etcd' is reserved for the launcher's own processes" in said
    # the model-wide checks run once the fields are valid
    said = problems("""\
        cluster-name: c
        etcd: {client-port: 2379, peer-port: 2380}
        discovery: {port: 61616}
        nodes:
          - {name: n1, port: 61616}
          - {name: n1, port: 2379}
        """)
    assert said.splitlines() == [
        "c.yaml:5: nodes[0].port: port 61616 is already used by discovery.port",
        "c.yaml:6: nodes[1].name: duplicate node name 'n1' (also nodes[0])",
        "c.yaml:6: nodes[1].port: port 2379 is already used by etcd.client-port",
    ]


def test_the_ha_coordinator_takes_a_port_and_a_reserved_name():
    said = problems("""\
        cluster-name: c
        ha-coordinator: {port: 61616}
        nodes:
          - {name: n1, port: 61616}
          - {name: ha-coordinator}
        """)
    assert "nodes[1].name: 'ha-coordinator' is reserved for the launcher's own processes" in said
    said = problems("""\
        cluster-name: c
        ha-coordinator: {port: 61616}
        nodes:
          - {name: n1, port: 61616}
        """)
    assert said == "c.yaml:4: nodes[0].port: port 61616 is already used by ha-coordinator.port"
    spec = load_cluster_spec_text("cluster-name: c\nha-coordinator: {}\nnodes: [{name: n1}]\n", "c.yaml")
    assert spec.ha_coordinator.port == 61646  # the HA coordinator's default port


def test_node_config_problems_are_named_where_they_are_in_the_cluster_file():
    said = problems("""\
        cluster-name: c
        node-defaults:
          address-settings:
            "#":
              max-delivery-attempts: zero
          securty-enabled: true
        nodes:
          - name: n1
          - name: n2
            config:
              journal: {synk: false}
        """)
    assert said.splitlines() == [
        'c.yaml:5: node-defaults.address-settings."#".max-delivery-attempts: Input should be a valid integer, '
        "unable to parse string as an integer",
        "c.yaml:6: node-defaults.securty-enabled: unknown key (did you mean 'security-enabled'?)",
        "c.yaml:11: nodes[1].config.journal.synk: unknown key (did you mean 'sync'?)",
    ]


def test_keys_the_launcher_writes_are_refused_with_where_to_say_them():
    said = problems("""\
        cluster-name: c
        node-defaults:
          acceptors: [{port: 1}]
        nodes:
          - name: n1
            config:
              discovery-groups: {}
              data-directory: /x
        """)
    assert said.splitlines() == [
        "c.yaml:3: node-defaults.acceptors: set by the launcher: each node has one acceptor on 127.0.0.1:nodes[].port",
        "c.yaml:7: nodes[0].config.discovery-groups: set by the launcher: nodes discover each other through the "
        "launched etcd (tune it under discovery:)",
        "c.yaml:8: nodes[0].config.data-directory: set by the launcher: each node's data directory is "
        "<run-directory>/<node>/data",
    ]


def test_cross_key_checks_of_the_node_config_point_at_the_node():
    said = problems("""\
        cluster-name: c
        nodes:
          - name: n1
            config:
              security-enabled: true
        """)
    assert said == "c.yaml:4: nodes[0].config.users: security-enabled is true but no users are configured"


def test_deep_merge():
    base = {"a": {"x": 1, "y": [1, 2]}, "b": 1}
    merged = deep_merge(base, {"a": {"y": [3], "z": 2}, "c": None})
    assert merged == {"a": {"x": 1, "y": [3], "z": 2}, "b": 1, "c": None}
    assert base == {"a": {"x": 1, "y": [1, 2]}, "b": 1}  # not modified


def test_node_config_the_launcher_writes(tmp_path):
    spec = ClusterSpec.parse({
        "cluster-name": "c",
        "discovery": {"broadcast-period": 500, "refresh-timeout": 2000},
        "node-defaults": {"address-settings": {"#": {"max-delivery-attempts": 3, "redelivery-delay": 10}}},
        "nodes": [{"name": "n1", "port": 7001,
                   "config": {"address-settings": {"#": {"redelivery-delay": 20}}, "journal": {"sync": False}}}],
    })
    data = node_config_data(spec, spec.nodes[0], etcd_endpoint="127.0.0.1:1234", run_dir=tmp_path)
    config = build_config(data, spec.base_dir)
    assert config.name == "n1"
    assert config.data_directory == tmp_path / "n1" / "data"
    assert [(a.host, a.port) for a in config.acceptors] == [("127.0.0.1", 7001)]
    group = config.discovery_groups["cluster"]
    assert (group.etcd.endpoints, group.cluster_name, group.refresh_timeout) == (("127.0.0.1:1234",), "c", 2000)
    assert config.broadcast_groups["cluster"].discovery_group_ref == "cluster"
    assert config.broadcast_groups["cluster"].broadcast_period == 500
    settings = config.address_settings["#"]
    assert (settings.max_delivery_attempts, settings.redelivery_delay) == (3, 20)  # node over defaults, key by key
    assert config.journal.sync is False
    service = build_config(discovery_config_data(spec, etcd_endpoint="127.0.0.1:1234", run_dir=tmp_path), spec.base_dir)
    assert service.discovery.discovery_group_ref == "cluster"
    assert service.discovery_groups["cluster"].cluster_name == "c"


def test_relative_paths_in_node_configs_are_relative_to_the_cluster_file(tmp_path):
    (tmp_path / "ca.pem").write_text("x")
    (tmp_path / "c.yaml").write_text("cluster-name: c\nnodes:\n"
                                     "  - name: n1\n    config: {journal: {trust-path: ca.pem}}\n")
    spec = load_cluster_spec(tmp_path / "c.yaml")
    config = build_config(node_config_data(spec, spec.nodes[0], etcd_endpoint="127.0.0.1:1", run_dir=tmp_path),
                          spec.base_dir)
    assert config.journal.trust_path == tmp_path / "ca.pem"


def test_missing_from_topology():
    nodes = [ProcessRecord(name=n, role="router", pid=1, start_mark=0, log="", node_id=f"id-{n}") for n in "abc"]
    assert missing_from_topology(nodes, {"id-a", "id-c", "other"}) == ["b"]
    assert missing_from_topology(nodes, {"id-a", "id-b", "id-c"}) == []


async def test_a_port_in_use_is_refused_before_anything_starts(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        spec = ClusterSpec.parse({"cluster-name": "c", "etcd": {"client-port": 0, "peer-port": 0},
                                  "discovery": {"port": 0}, "nodes": [{"name": "n1", "port": port}]})
        with pytest.raises(ClusterUpError, match=rf"port\(s\) in use on 127.0.0.1: {port} \(nodes\[0\].port \(n1\)\)"):
            await LocalCluster(spec, tmp_path / "run").up()
    assert not (tmp_path / "run").exists()


async def test_status_and_down_where_nothing_was_started(tmp_path):
    from meshmq.launcher import ClusterError

    with pytest.raises(ClusterError, match="no cluster was started in"):
        await LocalCluster.attach(tmp_path).status()
    assert await LocalCluster.attach(tmp_path).down() == []


# --- a secured cluster: tls and node-defaults' security keys -----------------------------


def test_the_secured_example():
    spec = load_cluster_spec(ROOT / "deploy/local/secured-3.yaml")
    assert spec.ca_dir == ROOT / "run" / "ca"  # relative to the file; git ignores run/
    assert [(n.name, n.port) for n in spec.nodes] == [("n1", 0), ("n2", 0), ("n3", 0)]
    assert (spec.etcd.client_port, spec.etcd.peer_port, spec.discovery.port) == (0, 0, 0)
    node = build_config(node_config_data(spec, spec.nodes[0], etcd_endpoint="127.0.0.1:1", run_dir=ROOT / "run"),
                        spec.base_dir)
    assert node.security_enabled and node.cluster_password
    assert all(u.password.startswith("scrypt$") for u in node.users)  # hashes, the plain ones in comments


def test_tls_issues_certificates_and_security_keys_reach_discovery(tmp_path):
    from meshmq.launcher.tls import Certificate

    spec = ClusterSpec.parse({
        "cluster-name": "c", "tls": {"ca-dir": "ca"},
        "node-defaults": {"security-enabled": True, "users": [{"username": "u", "password": "p", "roles": ["r"]}],
                          "security-settings": {"#": {"send": ["r"]}}, "cluster-password": "s3cret",
                          "address-settings": {"#": {"max-delivery-attempts": 3}}},
        "nodes": [{"name": "n1", "config": {"users": [{"username": "only-n1", "password": "p"}]}}],
    }, base_dir=tmp_path)
    assert spec.ca_dir == tmp_path / "ca"
    (tmp_path / "n1.pem").write_text("x")
    (tmp_path / "n1-key.pem").write_text("x")
    (tmp_path / "ca.pem").write_text("x")
    certificate = Certificate(tmp_path / "n1.pem", tmp_path / "n1-key.pem", tmp_path / "ca.pem")
    node = build_config(node_config_data(spec, spec.nodes[0], etcd_endpoint="127.0.0.1:1", run_dir=tmp_path,
                                         certificate=certificate), spec.base_dir)
    acceptor = node.acceptors[0]
    assert (acceptor.ssl_enabled, acceptor.cert_path, acceptor.key_path) == (True, certificate.cert, certificate.key)
    assert acceptor.trust_path == certificate.ca  # what the node's cluster links trust
    plain = build_config(node_config_data(spec, spec.nodes[0], etcd_endpoint="127.0.0.1:1", run_dir=tmp_path),
                         spec.base_dir)
    assert not plain.acceptors[0].ssl_enabled
    data = discovery_config_data(spec, etcd_endpoint="127.0.0.1:1", run_dir=tmp_path, certificate=certificate)
    assert "address-settings" not in data  # node-defaults' security keys only
    service = build_config(data, spec.base_dir)
    assert service.discovery.listen.ssl_enabled and service.discovery.listen.cert_path == certificate.cert
    assert (service.security_enabled, service.cluster_password) == (True, "s3cret")
    assert [u.username for u in service.users] == ["u"]  # not a node's own users


def test_security_without_a_cluster_password_is_refused_for_the_discovery_service():
    said = problems("""\
        cluster-name: c
        node-defaults:
          security-enabled: true
          users: [{username: u, password: p}]
        nodes: [{name: n1}]
        """)
    assert said.startswith("c.yaml:2: node-defaults.cluster-password: required when node-defaults has "
                           "security-enabled: true: without it the launched discovery service would accept any "
                           "caller, so it refuses to start"), said


def test_tls_needs_a_ca_dir():
    said = problems("cluster-name: c\ntls: {}\nnodes: [{name: n1}]\n")
    assert "c.yaml:2: tls.ca-dir: required key is missing" in said
    assert "tls.ca-dr: unknown key (did you mean 'ca-dir'?)" in problems(
        "cluster-name: c\ntls: {ca-dr: x}\nnodes: [{name: n1}]\n")


async def test_a_missing_ca_is_refused_before_anything_starts(tmp_path):
    spec = ClusterSpec.parse({"cluster-name": "c", "tls": {"ca-dir": "no-ca"}, "nodes": [{"name": "n1"}]},
                             base_dir=tmp_path, source="c.yaml")
    with pytest.raises(ClusterUpError) as info:
        await LocalCluster(spec, tmp_path / "run").up()
    assert str(info.value) == (f"c.yaml: tls.ca-dir: no CA in {tmp_path / 'no-ca'} (missing ca.pem, ca-key.pem): "
                               f"create one with `meshmq certs ca --dir {tmp_path / 'no-ca'}`, "
                               "or point tls.ca-dir at an existing one")
    assert not (tmp_path / "run" / "cluster.json").exists()


def test_the_client_uri_of_a_tls_cluster():
    from meshmq.launcher.state import ClusterState

    nodes = [ProcessRecord(name=n, role="router", pid=1, start_mark=0, log="", endpoint=f"127.0.0.1:{p}")
             for n, p in (("a", 1), ("b", 2))]
    assert ClusterState("c", "/r", processes=nodes).url == "(meshmq://127.0.0.1:1,meshmq://127.0.0.1:2)"
    tls = ClusterState("c", "/r", processes=nodes, trust_store="/x y/ca.pem")
    assert tls.url == ("(meshmq://127.0.0.1:1,meshmq://127.0.0.1:2)"
                       "?sslEnabled=true&trustStorePath=/x%20y/ca.pem")
