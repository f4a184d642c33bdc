"""deploy/docker-compose.yml and deploy/local/symmetric-3.yaml describe the same
cluster (there is no Docker engine here: both files are parsed and compared)."""

from __future__ import annotations

from pathlib import Path

import yaml

from meshmq.launcher import load_cluster_spec
from meshmq.config.loader import load_config_text

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "docker-compose.yml"
LOCAL = ROOT / "deploy" / "local" / "symmetric-3.yaml"


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())  # resolves the `<<: *meshmq` merge keys


def role_of(service: dict) -> str:
    """The service's role, from its label, checked against what it runs."""
    role = service["labels"]["meshmq.role"]
    command = service["command"]
    if role == "etcd":
        assert command[0] == "etcd"
    else:
        assert command[:3] == ["meshmq", "serve", role], command
    return role


def node_config(doc: dict, service: dict):
    [mount] = service["configs"]
    assert mount["target"] == service["command"][service["command"].index("--config") + 1]
    return load_config_text(doc["configs"][mount["source"]]["content"], source=f"compose config {mount['source']}")


def published(service: dict) -> list[int]:
    return [int(p.rsplit(":", 2)[1]) for p in service.get("ports", [])]


def test_same_services_names_and_roles():
    spec = load_cluster_spec(LOCAL)
    local = {"etcd": "etcd", "discovery": "discovery", **{n.name: "router" for n in spec.nodes}}
    doc = compose()
    assert {name: role_of(s) for name, s in doc["services"].items()} == local
    assert doc["name"] == spec.cluster_name


def test_same_ports_cluster_name_discovery_timings_and_node_defaults():
    spec = load_cluster_spec(LOCAL)
    doc = compose()
    services = doc["services"]
    assert published(services["etcd"]) == [spec.etcd.client_port]
    discovery = node_config(doc, services["discovery"])
    assert published(services["discovery"]) == [spec.discovery.port] == [discovery.discovery.listen.port]
    assert discovery.discovery_groups["cluster"].cluster_name == spec.cluster_name
    for node in spec.nodes:
        service = services[node.name]
        config = node_config(doc, service)
        assert config.name == node.name
        assert published(service) == [node.port] == [a.port for a in config.acceptors]
        assert config.acceptors[0].host == service["hostname"] == node.name  # announced under the service name
        [group] = config.discovery_groups.values()
        assert group.etcd.endpoints == ("etcd:2379",)
        assert (group.cluster_name, group.refresh_timeout) == (spec.cluster_name, spec.discovery.refresh_timeout)
        [broadcast] = config.broadcast_groups.values()
        assert broadcast.broadcast_period == spec.discovery.broadcast_period
        content = yaml.safe_load(doc["configs"][service["configs"][0]["source"]]["content"])
        for key, value in spec.node_defaults.items():
            assert content[key] == value, f"{node.name}: {key} differs from node-defaults in {LOCAL.name}"
        assert any(v.endswith(":/var/lib/meshmq") for v in service["volumes"])  # its own journal
        assert config.data_directory == Path("/var/lib/meshmq")
