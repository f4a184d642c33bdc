"""`docker-compose up` of deploy/docker-compose.yml, for real (docs/docker.md).

Installs what it needs from Debian (scripts/ensure_docker.sh: docker.io,
docker-compose 1.29, debootstrap; starts dockerd when none answers), builds
the Debian base image once (scripts/docker_base.sh -> meshmq-base:bookworm,
kept between runs with the build cache: a warm run takes about a minute or two),
builds every image FROM it with host networking (skipped when the images were
built from the same inputs: tests/deploy/image_cache.py), brings the stack up under a
project name of its own with every port published on a free loopback port,
waits for the health checks, talks to the routers through the SDK from the
host, and always ends with `down -v --remove-orphans`, then checks that no
container, network or volume of the project is left.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest
import yaml

from meshmq.client import connect
from meshmq.ports import free_port
from tests.deploy import image_cache
from tests.fixtures.nodes import eventually, wait_for

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "docker-compose.yml"
BASE_IMAGE = "meshmq-base:bookworm"
HEALTH_DEADLINE_S = 240
OPT = "?useTopologyForLoadBalancing=false"  # n1, n2 ... resolve only inside the compose network

# Building (cold: the base image, apt and pip inside the builds) is most of the time.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]


def run(*args: str, timeout: float, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(args, cwd=ROOT, env=env, timeout=timeout, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(args[:4])} ... exited {result.returncode}:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
    return result


def docker(*args: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
    exe = "/usr/bin/docker" if os.path.exists("/usr/bin/docker") else "docker"  # the engine's own client
    return run(exe, *args, timeout=timeout, check=check)


def docker_out(*args: str) -> str:
    """stdout of a docker command that must succeed (image_cache's way to the engine)."""
    return docker(*args).stdout


# build argument (deploy/docker-compose.yml x-build.args) -> the variable of build_env() it comes from
BUILD_ARGS = {
    "BASE_IMAGE": "BASE_IMAGE",
    "EXTRA_CA_CERTS": "MESHMQ_BUILD_CA_CERTS",
    "MESHMQ_PIP_INDEX_URL": "MESHMQ_PIP_INDEX_URL",
    "MESHMQ_PIP_EXTRA_INDEX_URL": "MESHMQ_PIP_EXTRA_INDEX_URL",
}




def build_env() -> dict[str, str]:
    """The host's way to Debian and PyPI, for the builds: the extra CA certificates
    this machine trusts (a TLS-intercepting proxy's) and its pip index, if any."""
    env = dict(os.environ, BASE_IMAGE=BASE_IMAGE)
    extra = sorted(Path("/usr/local/share/ca-certificates").glob("**/*.crt"))
    if extra:
        env["MESHMQ_BUILD_CA_CERTS"] = "\n".join(p.read_text().strip() for p in extra)
    for name in ("INDEX_URL", "EXTRA_INDEX_URL"):
        if os.environ.get(f"PIP_{name}"):
            env[f"MESHMQ_PIP_{name}"] = os.environ[f"PIP_{name}"]
    return env


class Stack:
    """One compose project of deploy/docker-compose.yml."""

    def __init__(self, report_dir: Path) -> None:
        self.project = f"meshmqtest{uuid.uuid4().hex[:8]}"
        self.env = build_env()
        self.report_dir = report_dir
        self.env["MESHMQ_REPORT_DIR"] = str(report_dir)
        self.ports = {name: free_port() for name in ("ETCD", "DISCOVERY", "N1", "N1_BACKUP", "N2", "N3", "GATEWAY",
                                                       "PROMETHEUS")}
        self.env.update({f"MESHMQ_PORT_{name}": str(port) for name, port in self.ports.items()})
        self.doc = yaml.safe_load(COMPOSE.read_text())

    def compose(self, *args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
        return run("docker-compose", "-f", str(COMPOSE), "-p", self.project, *args,
                   timeout=timeout, env=self.env, check=check)

    def build(self, *services: str, profile: str | None = None) -> bool:
        """`compose build` of `services` (every default one when none), unless
        their images were built from the same inputs; True if it built."""
        names = list(services) or self.default_services()
        images = sorted({self.doc["services"][name]["image"] for name in names if "build" in self.doc["services"][name]})
        args = {key: self.env.get(var, "") for key, var in BUILD_ARGS.items()}
        base_id = image_cache.image_id(docker_out, BASE_IMAGE) or ""
        digest = image_cache.inputs_digest(ROOT, args, base_id)
        if image_cache.up_to_date(docker_out, images, digest):
            return False
        self.compose(*(["--profile", profile] if profile else []), "build", *services, timeout=1800)
        image_cache.remember(docker_out, images, digest)
        return True

    def default_services(self) -> list[str]:
        return [name for name, s in self.doc["services"].items() if not s.get("profiles")]

    def container(self, service: str) -> str:
        ids = docker("ps", "-aq", "--filter", f"label=com.docker.compose.project={self.project}",
                     "--filter", f"label=com.docker.compose.service={service}").stdout.split()
        assert len(ids) == 1, f"{service}: containers {ids}"
        return ids[0]

    def health(self) -> dict[str, str]:
        """service -> health ("healthy", "starting", ...) or state ("exited", ...) without a health check."""
        out = {}
        for cid in docker("ps", "-aq", "--filter", f"label=com.docker.compose.project={self.project}").stdout.split():
            [info] = json.loads(docker("inspect", cid).stdout)
            service = info["Config"]["Labels"]["com.docker.compose.service"]
            state = info["State"]
            out[service] = state["Health"]["Status"] if state.get("Health") and state["Status"] == "running" else state["Status"]
        return out

    def exec(self, service: str, *command: str) -> str:
        return docker("exec", self.container(service), *command, timeout=60).stdout

    def leftovers(self) -> dict[str, list[str]]:
        label = f"label=com.docker.compose.project={self.project}"
        return {
            "containers": docker("ps", "-aq", "--filter", label).stdout.split(),
            "networks": docker("network", "ls", "-q", "--filter", label).stdout.split(),
            "volumes": docker("volume", "ls", "-q", "--filter", label).stdout.split(),
        }


def wait_healthy(stack: Stack, services: list[str]) -> None:
    """Until every one of `services` is healthy; fails at once, with the logs, when one is
    unhealthy or gone, and at HEALTH_DEADLINE_S."""
    last: dict[str, str] = {}

    def all_healthy() -> bool:
        last.clear()
        last.update(stack.health())
        if any(h in ("unhealthy", "exited", "dead") for h in last.values()):
            raise TimeoutError("a service failed")
        return all(last.get(s) == "healthy" for s in services)

    try:
        wait_for(all_healthy, HEALTH_DEADLINE_S, "every service to be healthy", interval=1)
    except TimeoutError:
        logs = stack.compose("logs", "--no-color", "--tail=40", timeout=60, check=False).stdout
        raise AssertionError(f"not healthy after {HEALTH_DEADLINE_S}s or failed: {last}\n{logs[-12000:]}") from None


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    if os.geteuid() != 0 and not shutil.which("docker-compose"):
        pytest.fail("needs root to install docker.io/docker-compose/debootstrap and start dockerd "
                    "(scripts/ensure_docker.sh); the test command runs as root")
    timings = {}
    t0 = time.monotonic()
    run("bash", "scripts/ensure_docker.sh", timeout=900)
    timings["engine"] = time.monotonic() - t0
    t = time.monotonic()
    run("bash", "scripts/docker_base.sh", BASE_IMAGE, timeout=1800)
    timings["base image"] = time.monotonic() - t
    s = Stack(tmp_path_factory.mktemp("compose-report"))
    try:
        t = time.monotonic()
        timings["build" if s.build() else "build (inputs unchanged, skipped)"] = time.monotonic() - t
        t = time.monotonic()
        s.compose("up", "-d", timeout=600)
        wait_healthy(s, s.default_services())
        timings["up + healthy"] = time.monotonic() - t
        print("compose stack timings (s): " + ", ".join(f"{k} {v:.0f}" for k, v in timings.items()))
        yield s
    finally:
        t = time.monotonic()
        s.compose("down", "-v", "--remove-orphans", "--timeout", "20", timeout=300, check=False)
        print(f"compose down -v: {time.monotonic() - t:.0f}s")
    assert s.leftovers() == {"containers": [], "networks": [], "volumes": []}


def test_every_service_is_healthy_and_n1s_backup_waits_on_the_shared_store(stack):
    assert set(stack.health()) == set(stack.default_services())
    live = json.loads(stack.exec("n1", "cat", "/run/meshmq/ready.json"))
    backup = json.loads(stack.exec("n1-backup", "cat", "/run/meshmq/ready.json"))
    assert (live["name"], live["active"]) == ("n1", True)
    assert (backup["name"], backup["active"]) == ("n1-backup", False)
    # n1's store is the postgres service's database: the lease row names n1
    lease = stack.exec("postgres", "psql", "-U", "meshmq", "-d", "meshmq", "-tAc", "SELECT count(*) FROM meshmq_ha_lease")
    assert int(lease.strip()) == 1


async def test_sent_to_n1_from_the_host_arrives_at_a_consumer_on_n2(stack):
    queue = "compose.orders"
    n1 = f"meshmq://127.0.0.1:{stack.ports['N1']}{OPT}"
    n2 = f"meshmq://127.0.0.1:{stack.ports['N2']}{OPT}"
    async with await connect(n2) as at_n2:
        consumer = await (await at_n2.session()).create_consumer(queue)
        async with await connect(n1) as at_n1:
            async def n1_knows_the_consumer():
                state = await at_n1.admin.cluster_state()
                return any(rb.queue == queue and rb.consumer_filters for rb in state.remote_bindings)

            await eventually(n1_knows_the_consumer, 30, "n1 to learn of the consumer on n2")
            producer = await (await at_n1.session()).create_producer(queue)
            for i in range(5):
                await producer.send(b"from the host", properties={"n": i}, routing_type="anycast")
        got = [await consumer.receive(10) for _ in range(5)]
        assert [int(m.properties["n"]) for m in got if m is not None] == list(range(5))
        for m in got:
            m.ack()


async def test_a_queue_on_n3_keeps_what_it_is_sent_until_it_is_consumed(stack):
    url = f"meshmq://127.0.0.1:{stack.ports['N3']}{OPT}"
    async with await connect(url) as conn:
        session = await conn.session()
        producer = await session.create_producer("compose.local")
        await producer.send(b"kept", routing_type="anycast")
        consumer = await session.create_consumer("compose.local")
        msg = await consumer.receive(10)
        assert msg is not None and msg.body == b"kept"
        msg.ack()


# ---------------------------------------------------------------------------
# The gateway and the metrics every meshmq service serves.

def metrics_ports(stack: Stack) -> dict[str, int]:
    """service -> the port its node config serves /metrics on, for those that enable it."""
    out = {}
    for name, service in stack.doc["services"].items():
        if service.get("profiles"):
            continue
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./") and source.endswith(".yaml"):
                metrics = (yaml.safe_load((COMPOSE.parent / source).read_text()) or {}).get("metrics") or {}
                if metrics.get("enabled"):
                    out[name] = int(metrics.get("port", 9100))
    return out


def test_every_service_with_metrics_enabled_serves_a_prometheus_scrape(stack):
    ports = metrics_ports(stack)
    assert ports, "no node config in deploy/compose/ enables metrics"
    for service, port in ports.items():
        body = stack.exec(service, "python3", "-c",
                          f"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:{port}/metrics', timeout=10).read().decode())")
        assert "# TYPE" in body and "meshmq_" in body, f"{service}: {body[:500]}"


def http(url: str, *, body: dict | None = None, token: str = "") -> tuple[int, str, str]:
    """(status, final URL after redirects, text) of a GET, or a POST of `body` as JSON."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = None
    if body is not None:
        data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
    with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=10) as r:
        return r.status, r.url, r.read().decode()


def test_the_gateway_answers_on_the_host_and_shows_the_routers(stack):
    assert "gateway" in stack.default_services(), "the gateway must start with a plain `up`"
    base = f"http://127.0.0.1:{stack.ports['GATEWAY']}"
    status, _, text = http(f"{base}/healthz")
    assert status == 200 and json.loads(text)["status"] == "ok"
    status, url, text = http(f"{base}/")  # the console sends a stranger to its log-in page
    assert status == 200 and urllib.parse.urlsplit(url).path == "/login" and "<form" in text.lower()
    status, _, text = http(f"{base}/metrics")
    assert status == 200 and "# TYPE" in text
    # dev mode's built-in admin; the routers as the gateway sees them through discovery
    _, _, text = http(f"{base}/api/v1/auth/token", body={"username": "admin", "password": "admin"})
    token = json.loads(text)["token"]

    def live_routers() -> set[str]:
        nodes = json.loads(http(f"{base}/api/v1/nodes", token=token)[2])
        return {n["name"] for n in nodes if n["up"]}

    # the waiting backup is not up: it serves nothing
    wait_for(lambda: live_routers() == {"n1", "n2", "n3"}, 30, "the gateway to show n1, n2 and n3 up")


@pytest.mark.timeout(3600)  # the report image's build (up to 1800 s cold) and its run (1500 s) fit
async def test_the_report_profile_runs_spark_over_n1s_store(stack):
    """The one-shot `report` service (profile report): its image (Java, pyspark,
    the JDBC jar) builds on first use, then it reads n1's store on postgres,
    run on the profile's Spark standalone master and worker."""
    queue = "compose.report"
    async with await connect(f"meshmq://127.0.0.1:{stack.ports['N1']}{OPT}") as conn:
        session = await conn.session()
        producer = await session.create_producer(queue)
        for _ in range(20):
            await producer.send(b"counted", routing_type="anycast")
        consumer = await session.create_consumer(queue)
        for _ in range(8):
            msg = await consumer.receive(10)
            assert msg is not None
            msg.ack()

    def acknowledged_in_the_store() -> bool:
        out = stack.exec("postgres", "psql", "-U", "meshmq", "-d", "meshmq", "-tAc",
                         f"SELECT count(*) FROM events WHERE queue = '{queue}' AND kind = 'ACKNOWLEDGED'")
        return int(out.strip()) == 8

    await eventually(acknowledged_in_the_store, 30, "the 8 acknowledgements in n1's store", interval=0.5)
    stack.build("report", profile="report")
    try:
        # Spark's master, worker, driver and executor on the machine's cores: 3–6 minutes here, longer
        # than 600 s on CI's loaded run once; the bound is against a hang.
        stack.compose("--profile", "report", "run", "--rm", "-T", "report", timeout=1500)
        # It ran on the profile's Spark cluster: the master lists it, finished, with the worker's cores.
        master = json.loads(stack.exec("spark-master", "python3", "-c", "import urllib.request; print(urllib."
                                       "request.urlopen('http://127.0.0.1:8080/json/', timeout=10).read().decode())"))
        assert [w["state"] for w in master["workers"]] == ["ALIVE"]
        assert [a["name"] for a in master["completedapps"]] == ["meshmq-analytics"], master
    finally:
        stack.compose("--profile", "report", "rm", "-fsv", "spark-worker", "spark-master", timeout=120, check=False)
    summary = json.loads((stack.report_dir / "summary.json").read_text())
    [row] = [r for r in summary["throughput"]["by_address"] if r["address"] == queue]
    assert (row["enqueued"], row["acknowledged"]) == (20, 8)
    assert [n["node_name"] for n in summary["nodes"]] == ["n1"]
    assert (stack.report_dir / "report.html").is_file()


def test_the_monitoring_profile_scrapes_the_stack_and_loads_the_alert_rules(stack):
    """Profile monitoring: Prometheus built from the Debian base scrapes every
    router and the gateway on the compose network and loads meshmq's rules."""
    stack.build("prometheus", profile="monitoring")
    stack.compose("--profile", "monitoring", "up", "-d", "--no-deps", "prometheus", timeout=300)
    base = f"http://127.0.0.1:{stack.ports['PROMETHEUS']}"
    try:
        def scraped() -> dict[str, str] | None:
            try:
                targets = json.loads(http(f"{base}/api/v1/targets")[2])["data"]["activeTargets"]
            except OSError:
                return None  # not listening yet
            health = {t["labels"]["instance"]: t["health"] for t in targets}
            wanted = ("n1:9100", "n2:9100", "n3:9100", "gateway:8161")
            return health if all(health.get(w) == "up" for w in wanted) else None

        health = wait_for(scraped, 120, "Prometheus to scrape n1, n2, n3 and the gateway", interval=1)
        assert set(health) == {"n1:9100", "n1-backup:9100", "n2:9100", "n3:9100", "gateway:8161"}
        groups = json.loads(http(f"{base}/api/v1/rules")[2])["data"]["groups"]
        alerts = {r["name"] for g in groups for r in g["rules"] if r["type"] == "alerting"}
        assert {"MeshmqNodeDown", "MeshmqBridgeDown", "MeshmqDiskAlarm", "MeshmqMemoryAlarm"} <= alerts
        assert all(r["health"] == "ok" for g in groups for r in g["rules"]), groups
        # A router series with the node label, as the dashboard and the rules select it.
        query = urllib.parse.quote('meshmq_bridge_connected{node="n1"}')
        result = wait_for(lambda: json.loads(http(f"{base}/api/v1/query?query={query}")[2])["data"]["result"],
                          60, "n1's bridge series in Prometheus", interval=1)
        assert {r["metric"]["node"] for r in result} == {"n1"}
    finally:
        stack.compose("--profile", "monitoring", "rm", "-fsv", "prometheus", timeout=120, check=False)


# Last: it takes n1 away from the stack.
async def test_kill_9_of_n1_its_backup_serves_n1s_messages(stack):
    queue = "compose.failover"
    async with await connect(f"meshmq://127.0.0.1:{stack.ports['N1']}{OPT}") as conn:
        producer = await (await conn.session()).create_producer(queue)
        for i in range(3):
            await producer.send(b"durable", properties={"n": i}, routing_type="anycast")  # confirmed = stored
    # (docker kill is a manual stop, which restart: on-failure leaves alone; were n1 restarted, it
    # would wait for its lease and ask for failback, and the backup still serves until then)
    docker("kill", "--signal", "KILL", stack.container("n1"))

    async def backup_is_active():
        ready = json.loads(stack.exec("n1-backup", "cat", "/run/meshmq/ready.json"))
        return ready.get("active")

    await eventually(backup_is_active, 60, "n1-backup to take n1's store over", interval=0.5)
    async with await connect(f"meshmq://127.0.0.1:{stack.ports['N1_BACKUP']}{OPT}") as conn:
        consumer = await (await conn.session()).create_consumer(queue)
        got = [await consumer.receive(10) for _ in range(3)]
        assert [int(m.properties["n"]) for m in got if m is not None] == [0, 1, 2]
        for m in got:
            m.ack()
