"""deploy/docker-compose.yml and deploy/local/symmetric-3.yaml describe the same
cluster, and the compose file stays within what both Compose v2 and
docker-compose 1.29 accept. The files are parsed and compared here;
tests/deploy/test_compose_up.py brings the stack up for real."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import yaml
from sqlalchemy.engine import make_url

from meshmq.config.loader import load_config_text
from meshmq.launcher import load_cluster_spec
from meshmq.security.exposure import start_problems

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "docker-compose.yml"
LOCAL = ROOT / "deploy" / "local" / "symmetric-3.yaml"
DOCKERFILE = ROOT / "Dockerfile"

# What the compose file has beyond the local example: the database of n1's, n1's backup, the gateway and the one-shot Spark report.
# shared store, n1's backup, the gateway, the one-shot Spark report, and, on request
# (profiles), Prometheus and Grafana (deploy/monitoring/).
EXTRAS = {"postgres": "postgres", "n1-backup": "router", "gateway": "gateway", "report": "report",
          "spark-master": "spark-master", "spark-worker": "spark-worker",
          "prometheus": "prometheus", "grafana": "grafana"}
# Services that run an image another service builds (the report's: Java and pyspark).
REPORT_IMAGE = "meshmq-report:local"


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())  # resolves the `<<: *meshmq` merge keys


def role_of(service: dict) -> str:
    """The service's role, from its label, checked against what it runs."""
    role = service["labels"]["meshmq.role"]
    command = service.get("command")
    if role == "etcd":
        assert command[0] == "etcd"
    elif role == "postgres":
        assert service["build"]["target"] == "postgres" and command is None  # the image's own entrypoint
    elif role == "prometheus":
        assert service["build"]["target"] == "prometheus" and command is None and service["profiles"] == ["monitoring"]
    elif role == "grafana":
        assert "build" not in service and service["profiles"] == ["grafana"]  # Debian has no Grafana: a registry image
    elif role == "report":
        assert command[:2] == ["sh", "-c"] and report_argv(service)[:4] == ["exec", "meshmq", "analytics", "report"]
    elif role in ("spark-master", "spark-worker"):
        kind = "Master" if role == "spark-master" else "Worker"
        assert service["image"] == REPORT_IMAGE and service["profiles"] == ["report"], role
        assert command[:2] == ["spark-class", f"org.apache.spark.deploy.{kind.lower()}.{kind}"], command
    else:
        assert command[:3] == ["meshmq", "serve", role], command
    return role


def report_argv(service: dict) -> list[str]:
    """The report service's command line, as its `sh -c` script runs it."""
    return shlex.split(service["command"][2])


def mounted(service: dict, target: str) -> Path:
    """The host file bind-mounted (read-only) at `target` in the container."""
    [source] = [v.split(":")[0] for v in service["volumes"] if v.split(":")[1] == target]
    assert f"{source}:{target}:ro" in service["volumes"]
    return (COMPOSE.parent / source).resolve()


def node_text(service: dict) -> tuple[Path, str]:
    target = service["command"][service["command"].index("--config") + 1]
    path = mounted(service, target)
    return path, path.read_text()


def node_config(service: dict):
    path, text = node_text(service)
    return load_config_text(text, source=str(path.relative_to(ROOT)))


PORT = re.compile(r"^127\.0\.0\.1:\$\{MESHMQ_PORT_[A-Z0-9_]+:-(\d+)\}:(\d+)$")


def published(service: dict) -> list[int]:
    """The ports published on the host's loopback: by default the container's
    own port (MESHMQ_PORT_<SERVICE> moves one, as the compose test does)."""
    ports = []
    for spec in service.get("ports", []):
        match = PORT.match(spec)
        assert match, f"{spec!r}: expected 127.0.0.1:${{MESHMQ_PORT_<SERVICE>:-<port>}}:<port>"
        assert match[1] == match[2], spec
        ports.append(int(match[2]))
    return ports


def test_same_services_names_and_roles():
    spec = load_cluster_spec(LOCAL)
    local = {"etcd": "etcd", "discovery": "discovery", **{n.name: "router" for n in spec.nodes}}
    roles = {name: role_of(s) for name, s in compose()["services"].items()}
    assert roles == {**local, **EXTRAS}


def test_same_ports_cluster_name_discovery_timings_and_node_defaults():
    spec = load_cluster_spec(LOCAL)
    services = compose()["services"]
    assert published(services["etcd"]) == [spec.etcd.client_port]
    discovery = node_config(services["discovery"])
    assert published(services["discovery"]) == [spec.discovery.port] == [discovery.discovery.listen.port]
    assert discovery.discovery_groups["cluster"].cluster_name == spec.cluster_name
    for name in [n.name for n in spec.nodes] + ["n1-backup"]:
        service = services[name]
        config = node_config(service)
        assert config.name == name
        assert published(service) == [a.port for a in config.acceptors]
        assert config.acceptors[0].host == service["hostname"] == name  # announced under the service name
        [group] = config.discovery_groups.values()
        assert group.etcd.endpoints == ("etcd:2379",)
        assert (group.cluster_name, group.refresh_timeout) == (spec.cluster_name, spec.discovery.refresh_timeout)
        [broadcast] = config.broadcast_groups.values()
        assert broadcast.broadcast_period == spec.discovery.broadcast_period
        content = yaml.safe_load(node_text(service)[1])
        for key, value in spec.node_defaults.items():
            assert content[key] == value, f"{name}: {key} differs from node-defaults in {LOCAL.name}"
        assert any(v.endswith(":/var/lib/meshmq") for v in service["volumes"])  # its own data directory
        assert config.data_directory == Path("/var/lib/meshmq")
    for node in spec.nodes:
        assert published(services[node.name]) == [node.port]


def test_every_meshmq_service_writes_security_off_out_since_it_listens_beyond_loopback():
    """In a container the acceptors bind the service's name and the listeners 0.0.0.0:
    security off has to be written, or the service refuses to start."""
    for name, service in compose()["services"].items():
        role = role_of(service)
        if role in ("etcd", "postgres", "report", "spark-master", "spark-worker", "prometheus", "grafana"):
            continue
        config = node_config(service)
        assert "security_enabled" in config.model_fields_set and not config.security_enabled, name
        assert start_problems(config, role) == [], name
        unwritten = load_config_text(node_text(service)[1].replace("security-enabled: false", ""))
        assert start_problems(unwritten, role), f"{name} would start with security left out"


def test_n1_and_its_backup_share_one_store_on_the_postgres_service():
    services = compose()["services"]
    live, backup = node_config(services["n1"]), node_config(services["n1-backup"])
    assert live.journal.url == backup.journal.url
    url = make_url(live.journal.url)
    env = services["postgres"]["environment"]
    assert (url.get_backend_name(), url.host, url.port) == ("postgresql", "postgres", 5432)
    assert (url.username, url.password, url.database) == (env["POSTGRES_USER"], env["POSTGRES_PASSWORD"], env["POSTGRES_DB"])
    assert live.ha_policy.shared_store.master is not None and backup.ha_policy.shared_store.slave is not None
    assert "postgres" in services["n1"]["depends_on"] and "n1" in services["n1-backup"]["depends_on"]
    # the report reads the same database
    command = report_argv(services["report"])
    store = make_url(command[command.index("--store") + 1])
    # and runs on the profile's Spark cluster
    assert command[command.index("--master") + 1] == "spark://spark-master:7077"
    assert (store.host, store.username, store.password, store.database) == (url.host, url.username, url.password, url.database)


def test_only_keys_compose_v2_and_docker_compose_1_29_both_know():
    doc = compose()
    # no `name` (1.29 refuses it), no top-level `configs`/`secrets` with inline content
    assert {k for k in doc if not k.startswith("x-")} <= {"services", "volumes", "networks"}
    targets = set(re.findall(r"^FROM \S+ AS (\S+)$", DOCKERFILE.read_text(), flags=re.M))
    for name, service in doc["services"].items():
        assert not {"configs", "secrets"} & service.keys(), name
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (COMPOSE.parent / source).exists(), f"{name}: {source} is missing"
        if name == "grafana":  # the one service from a registry image (Debian ships no Grafana)
            continue
        if service.get("image") == REPORT_IMAGE and "build" not in service:  # the report service builds it
            assert doc["services"]["report"]["image"] == REPORT_IMAGE, name
            continue
        build = service["build"]
        assert not {"dockerfile_inline", "secrets", "additional_contexts"} & build.keys(), name
        assert (build["context"], build["dockerfile"], build["network"]) == ("..", "Dockerfile", "host"), name
        assert build["target"] in targets, name
        assert build["args"]["BASE_IMAGE"].startswith("${BASE_IMAGE:-"), name
    # each optional part is a profile
    assert {n: s["profiles"] for n, s in doc["services"].items() if s.get("profiles")} == {
        "report": ["report"], "spark-master": ["report"], "spark-worker": ["report"],
        "prometheus": ["monitoring"], "grafana": ["grafana"]}


def test_prometheus_scrapes_every_router_and_the_gateway_and_its_rules_use_documented_metrics():
    """deploy/monitoring/: Prometheus's targets are the compose routers' metrics
    endpoints and the gateway; every meshmq_ series the rules and the Grafana
    dashboard use is one docs/metrics.md lists."""
    services = compose()["services"]
    monitoring = COMPOSE.parent / "monitoring"
    prometheus = yaml.safe_load((monitoring / "prometheus.yml").read_text())
    targets = {t for job in prometheus["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]}
    routers = {f"{n}:{node_config(s).metrics.port}" for n, s in services.items() if role_of(s) == "router"}
    assert targets == routers | {"gateway:8161"}
    assert all(node_config(s).metrics.enabled for s in services.values() if role_of(s) == "router")
    rules = yaml.safe_load((monitoring / "meshmq-rules.yml").read_text())
    exprs = [r["expr"] for g in rules["groups"] for r in g["rules"]]
    assert all(r["annotations"]["summary"] for g in rules["groups"] for r in g["rules"])
    dashboard = json.loads((monitoring / "grafana" / "dashboards" / "meshmq.json").read_text())
    exprs += [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    documented = (ROOT / "docs" / "metrics.md").read_text()
    used = {m for e in exprs for m in re.findall(r"meshmq_[a-z_]+", e)}
    base = {re.sub(r"_(bucket|sum|count)$", "", m) for m in used}
    missing = sorted(m for m in base if f"`{m}`" not in documented and f"`{m.removesuffix('_total')}`" not in documented)
    assert not missing, f"not in docs/metrics.md: {missing}"
