"""`LocalCluster`: a cluster file brought up as local processes on loopback.

    etcd ──▶ discovery service + N routers (started together) ──▶ ready when every
    router wrote its ready file and discovery's List shows every node id

Each process runs in its own session (it outlives `meshmq cluster up`), logs
to `<run>/<name>.log`, and is recorded with its pid and start time in
`<run>/<name>.pid` and `<run>/cluster.json`, which `status` and `down` read —
from this object, a fresh one, or another shell. `down` stops routers first
(they leave the topology at once), then discovery, then etcd.

The API is asyncio (as the SDK is); from plain code, `asyncio.run(cluster.up())`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from meshmq.launcher import processes
from meshmq.launcher.etcd import EtcdServer
from meshmq.launcher.spec import (
    ClusterSpec,
    build_config,
    discovery_config_data,
    ha_coordinator_config_data,
    gateway_config_data,
    load_cluster_spec,
    node_config_data,
    with_metrics,
)
from meshmq.launcher.state import STATE_FILE, ClusterState, ProcessRecord
from meshmq.launcher.tls import Certificate, ca_problem, issue_certificates
from meshmq.security.certs import CA_CERT, CertError

if TYPE_CHECKING:
    from meshmq.discovery import GrpcDiscoveryClient

# Default seconds `down` waits after SIGTERM before SIGKILL (a router leaves
# the topology and closes its journal within a second or two).
STOP_DEADLINE_S = 15.0
# How long `status` waits for a router's NodeInfo (s).
STATUS_CALL_S = 3
# How often `up` looks at ready files, exits and the topology.
POLL_S = 0.05
LOG_TAIL_LINES = 30

Progress = Callable[[str], None]


class ClusterError(RuntimeError):
    """A launch, status or stop that cannot be done; the message says why and what to do."""


class ClusterUpError(ClusterError):
    """`up` failed; everything it had started was stopped (logs are kept)."""


@dataclass(frozen=True)
class ProcessStatus:
    """One line of `status`. `in_topology` is None for etcd and discovery, and
    for nodes when the discovery service cannot be asked."""

    name: str
    role: str
    pid: int
    alive: bool
    endpoint: str
    node_id: str
    in_topology: bool | None
    log: str
    # A router's ha-policy as it answers now: "live-only", "shared-store master, active, epoch 3",
    # "shared-store slave, passive (live at HOST:PORT)"; "" for etcd and discovery, "?" when it cannot say.
    ha: str = ""
    # Its Prometheus metrics URL ("" for etcd, or a process that serves none).
    metrics: str = ""


@dataclass(frozen=True)
class ClusterStatus:
    state: ClusterState
    processes: tuple[ProcessStatus, ...]
    # Node ids in discovery's List; None when it could not be asked (then `topology_problem` says why).
    topology: frozenset[str] | None
    topology_problem: str = ""

    @property
    def healthy(self) -> bool:
        """Every process alive and every serving node in the topology (a passive backup is not in it)."""
        serving = [p for p in self.processes if p.role == "router" and "passive" not in p.ha]
        return all(p.alive for p in self.processes) and all(p.in_topology for p in serving)


@dataclass(frozen=True)
class StoppedProcess:
    """What `down` did: "stopped" (exited after SIGTERM), "killed" (SIGKILL
    after the deadline), "not running", or "still running after SIGKILL"."""

    name: str
    role: str
    pid: int
    outcome: str
    seconds: float


class LocalCluster:
    """The processes of one cluster file in one run directory.

    `LocalCluster(spec)` uses the spec's run directory; `run_dir` overrides
    it. `LocalCluster.attach(run_dir)` has no spec: it can only `status()`
    and `down()` what an earlier `up` recorded there.
    """

    def __init__(self, spec: ClusterSpec | None, run_dir: str | Path | None = None) -> None:
        if spec is None and run_dir is None:
            raise ValueError("give a cluster spec, a run directory, or both")
        self.spec = spec
        self.run_dir = Path(run_dir).expanduser().resolve() if run_dir is not None else spec.run_dir
        self.state: ClusterState | None = None

    @classmethod
    def from_file(cls, path: str | Path, run_dir: str | Path | None = None) -> LocalCluster:
        """The cluster a cluster file describes (ConfigError if the file is wrong)."""
        return cls(load_cluster_spec(path), run_dir)

    @classmethod
    def attach(cls, run_dir: str | Path) -> LocalCluster:
        return cls(None, run_dir)

    @property
    def state_file(self) -> Path:
        return self.run_dir / STATE_FILE

    def load_state(self) -> ClusterState:
        try:
            self.state = ClusterState.load(self.run_dir)
        except FileNotFoundError:
            raise ClusterError(f"no cluster was started in {self.run_dir} (no {STATE_FILE} there)") from None
        except ValueError as exc:
            raise ClusterError(f"{exc}; if no process of that cluster is running, remove the file") from None
        return self.state

    # --- up ------------------------------------------------------------------------

    async def up(self, *, timeout: float | None = None, progress: Progress | None = None) -> ClusterState:
        """Start etcd, the discovery service and every node; return once every
        node listens and is in discovery's topology. `timeout` (seconds)
        defaults to the file's ready-timeout. On failure: ClusterUpError with
        the failing process's log tail, and nothing left running."""
        if self.spec is None:
            raise ClusterError("this LocalCluster was attached to a run directory: it has no cluster file to start")
        spec = self.spec
        say = progress or (lambda _message: None)
        timeout = spec.ready_timeout / 1000 if timeout is None else timeout
        self._refuse_if_running()
        self._refuse_taken_ports(spec)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        # Its nodes' stores, configs (passwords), TLS keys and logs: the owner's only.
        self.run_dir.chmod(0o700)
        started = time.monotonic()
        deadline = started + timeout
        certificates = self._issue_certificates(spec)
        state = ClusterState(cluster_name=spec.cluster_name, run_dir=str(self.run_dir), spec_file=spec.source,
                             started_at=time.time(),
                             trust_store=str(spec.ca_dir / CA_CERT) if spec.ca_dir is not None else "")
        self.state = state
        state.save(self.run_dir)
        etcd: EtcdServer | None = None
        try:
            etcd = self._start_etcd(spec, state, deadline)
            state.timings["etcd"] = round(time.monotonic() - started, 3)
            say(f"etcd ready on {etcd.endpoint} (pid {etcd.pid})")
            spawned = self._spawn_services(spec, state, etcd.endpoint, certificates)
            await self._wait_ready(spec, state, spawned, started, deadline, timeout, say)
        except BaseException:
            if etcd is not None and state.etcd is None:  # interrupted before it was recorded
                etcd.stop()
            self._stop_recorded(state)
            state.status = "failed"
            state.stopped_at = time.time()
            state.save(self.run_dir)
            raise
        state.status = "up"
        state.ready_at = time.time()
        state.timings["ready"] = round(time.monotonic() - started, 3)
        state.save(self.run_dir)
        return state

    def _refuse_if_running(self) -> None:
        if not self.state_file.exists():
            return
        previous = self.load_state()
        running = [p for p in previous.processes if processes.alive(p.ident)]
        if running:
            pids = ", ".join(f"{p.name} {p.pid}" for p in running)
            raise ClusterError(f"cluster {previous.cluster_name} is already running from {self.run_dir} ({pids}); "
                               f"stop it first: meshmq cluster down --run-dir {self.run_dir}")

    @staticmethod
    def _refuse_taken_ports(spec: ClusterSpec) -> None:
        wanted = [("etcd.client-port", spec.etcd.client_port), ("etcd.peer-port", spec.etcd.peer_port),
                  ("discovery.port", spec.discovery.port),
                  *([("ha-coordinator.port", spec.ha_coordinator.port)] if spec.ha_coordinator else []),
                  *([("gateway.port", spec.gateway.port)] if spec.gateway else []),
                  *((f"nodes[{i}].port ({n.name})", n.port) for i, n in enumerate(spec.nodes))]
        taken = [f"{port} ({key})" for key, port in wanted if port and not processes.port_free(port)]
        if taken:
            raise ClusterUpError(f"port(s) in use on 127.0.0.1: {', '.join(taken)}. Another cluster or node may hold "
                                 "them: stop it, change the ports, or pick free ones (port 0, or --free-ports)")

    def _issue_certificates(self, spec: ClusterSpec) -> dict[str, Certificate]:
        """With tls: a certificate for the discovery service and each node, issued
        again at every up (meshmq/launcher/tls.py); none without."""
        if spec.ca_dir is None:
            return {}
        problem = ca_problem(spec.ca_dir)
        if problem:
            raise ClusterUpError(f"{spec.source}: tls.ca-dir: {problem}")
        directories = {"discovery": self.run_dir / "discovery", **{n.name: self.run_dir / n.name for n in spec.nodes},
                       **({"gateway": self.run_dir / "gateway"} if spec.gateway is not None else {})}
        try:
            return issue_certificates(spec.ca_dir, directories)
        except CertError as exc:
            raise ClusterUpError(f"{spec.source}: tls.ca-dir: {exc}") from None

    def _start_etcd(self, spec: ClusterSpec, state: ClusterState, deadline: float) -> EtcdServer:
        root = self.run_dir / "etcd"
        # Announcements are leases, gone with the processes: a stale one would
        # only delay a restarted node (it waits for its old lease to lapse).
        shutil.rmtree(root / "data", ignore_errors=True)
        etcd = EtcdServer(root, f"{spec.cluster_name}-etcd", log=self.run_dir / "etcd.log",
                          start_timeout=max(1.0, deadline - time.monotonic()))
        etcd.client_port, etcd.peer_port = spec.etcd.client_port, spec.etcd.peer_port
        try:
            etcd.start()  # blocks for about a second; nothing else runs yet
        except RuntimeError as exc:
            raise ClusterUpError(f"etcd did not start: {exc}\n(log: {etcd.log})") from None
        ident = processes.identify(etcd.pid)
        record = ProcessRecord(name="etcd", role="etcd", pid=ident.pid, start_mark=ident.start_mark,
                               log=str(etcd.log), endpoint=etcd.endpoint, data_directory=str(etcd.data),
                               peer_port=etcd.peer_port)
        self._record(state, record)
        return etcd

    def _spawn_services(self, spec: ClusterSpec, state: ClusterState, etcd_endpoint: str,
                        certificates: dict[str, Certificate]) -> list[tuple[ProcessRecord, subprocess.Popen]]:
        """Write each process's config, then start discovery and all nodes at once."""
        plans = [("discovery", "discovery", self.run_dir / "discovery",
                  discovery_config_data(spec, etcd_endpoint=etcd_endpoint, run_dir=self.run_dir,
                                        certificate=certificates.get("discovery")),
                  f"# discovery service of cluster {spec.cluster_name}")]
        if spec.ha_coordinator is not None:
            plans.append(("ha-coordinator", "ha-coordinator", self.run_dir / "ha-coordinator",
                          ha_coordinator_config_data(spec, etcd_endpoint=etcd_endpoint, run_dir=self.run_dir),
                          f"# HA coordinator of cluster {spec.cluster_name}"))
        if spec.gateway is not None:
            plans.append(("gateway", "gateway", self.run_dir / "gateway",
                          gateway_config_data(spec, etcd_endpoint=etcd_endpoint, run_dir=self.run_dir,
                                              certificate=certificates.get("gateway")),
                          f"# admin gateway of cluster {spec.cluster_name}"))
        for index, node in enumerate(spec.nodes):
            plans.append((node.name, "router", self.run_dir / node.name,
                          node_config_data(spec, node, etcd_endpoint=etcd_endpoint, run_dir=self.run_dir,
                                           certificate=certificates.get(node.name)),
                          f"# node {node.name} of cluster {spec.cluster_name} (nodes[{index}], node-defaults merged)"))
        spawned = []
        for name, role, directory, data, title in plans:
            directory.mkdir(parents=True, exist_ok=True)
            config_path = directory / ("node.yaml" if role == "router" else f"{role}.yaml")
            config = build_config(with_metrics(data), spec.base_dir)
            _write_config(config_path, config, title, spec.source)
            ready = directory / "ready.json"
            ready.unlink(missing_ok=True)
            record = ProcessRecord(name=name, role=role, pid=0, start_mark=0.0,
                                   log=str(self.run_dir / f"{name}.log"), config=str(config_path),
                                   ready_file=str(ready),
                                   data_directory=str(config.data_directory) if role == "router" else "")
            proc = self._spawn(record)
            self._record(state, record)
            spawned.append((record, proc))
        return spawned

    @staticmethod
    def _spawn(record: ProcessRecord) -> subprocess.Popen:
        """Start a recorded service process (discovery or a router) on its config."""
        # --quiet: the effective configuration is the config file itself, not repeated in the log.
        argv = [sys.executable, "-m", "meshmq.cli.main", "serve", record.role, "--config", record.config,
                "--ready-file", record.ready_file, "--quiet"]
        proc, ident = processes.spawn(argv, Path(record.log), cwd=Path(record.config).parent,
                                      env={**os.environ, "PYTHONUNBUFFERED": "1"})
        record.pid, record.start_mark = ident.pid, ident.start_mark
        return proc

    def _record(self, state: ClusterState, record: ProcessRecord) -> None:
        state.replace(record)
        (self.run_dir / f"{record.name}.pid").write_text(f"{record.pid}\n")
        state.save(self.run_dir)

    async def _wait_ready(self, spec: ClusterSpec, state: ClusterState,
                          spawned: list[tuple[ProcessRecord, subprocess.Popen]], started: float, deadline: float,
                          timeout: float, say: Progress) -> None:
        from meshmq.discovery import DiscoveryError
        from meshmq.v1 import discovery_pb2 as dpb

        client: GrpcDiscoveryClient | None = None
        problem = ""
        try:
            while True:
                for record, proc in spawned:
                    code = proc.poll()
                    if code is not None:
                        raise ClusterUpError(
                            f"{record.name} exited with code {code} before the cluster was ready; "
                            f"the end of {record.log}:\n{processes.log_tail(Path(record.log), LOG_TAIL_LINES)}\n"
                            f"Everything started was stopped; the logs are kept in {self.run_dir}.")
                    if not record.endpoint and Path(record.ready_file).exists():
                        info = json.loads(Path(record.ready_file).read_text())
                        record.endpoint, record.node_id = info["endpoints"][0], info.get("node_id", "")
                        record.active = info.get("active", True)
                        record.metrics = info.get("metrics", "")
                        state.save(self.run_dir)
                        node = f" (node {record.node_id})" if record.node_id else ""
                        passive = "" if record.active else " (passive: waits for its store)"
                        say(f"{record.name} listening on {record.endpoint}{node}{passive}")
                discovery = state.discovery
                if client is None and discovery is not None and discovery.endpoint:
                    client = discovery_client(state)
                nodes = state.nodes
                # Ready once every process listens (the gateway and HA coordinator too) and the nodes are listed.
                if client is not None and all(r.endpoint for r, _ in spawned):
                    state.timings.setdefault("listening", round(time.monotonic() - started, 3))
                    try:
                        listed = await client.list(dpb.ListNodesRequest(cluster_name=spec.cluster_name))
                        missing = missing_from_topology([n for n in nodes if n.active],
                                                        {n.node_id for n in listed.nodes})
                        problem = "not in the topology yet: " + ", ".join(missing) if missing else ""
                    except DiscoveryError as exc:
                        problem = f"discovery's List failed: {exc}"
                    if not problem:
                        active = [n for n in nodes if n.active]
                        if len(active) == len(nodes):
                            say(f"all {len(nodes)} nodes are in the topology of cluster {spec.cluster_name}")
                        else:
                            say(f"all {len(active)} active nodes are in the topology of cluster "
                                f"{spec.cluster_name}; {len(nodes) - len(active)} passive (backups)")
                        return
                if time.monotonic() > deadline:
                    raise ClusterUpError(self._not_ready(state, timeout, problem))
                await asyncio.sleep(POLL_S)
        finally:
            if client is not None:
                await client.close()

    def _not_ready(self, state: ClusterState, timeout: float, problem: str) -> str:
        waiting = [p for p in state.processes if p.role != "etcd" and not p.endpoint]
        lines = [f"cluster {state.cluster_name} was not ready after {timeout:g} s"]
        if waiting:
            lines[0] += ": not listening yet: " + ", ".join(p.name for p in waiting)
        elif problem:
            lines[0] += f": {problem}"
        for p in waiting or state.nodes:
            lines.append(f"--- the end of {p.log}:\n{processes.log_tail(Path(p.log), LOG_TAIL_LINES)}")
        lines.append(f"Everything started was stopped; the logs are kept in {self.run_dir}. "
                     "A slow machine may need a longer ready-timeout (or --timeout).")
        return "\n".join(lines)

    # --- status ----------------------------------------------------------------------

    async def status(self) -> ClusterStatus:
        """Each recorded process: alive?, endpoint, node id, in discovery's topology?"""
        state = self.load_state()
        topology, problem = await self._topology(state)
        rows = []
        for p in state.processes:
            in_topology, ha, node_id = None, "", p.node_id
            alive = processes.alive(p.ident)
            if p.role == "router":
                ha, node_id = await _ha_state(state, p) if alive and p.endpoint else ("-", p.node_id)
                if topology is not None and "passive" not in ha:
                    in_topology = bool(node_id) and node_id in topology
            rows.append(ProcessStatus(name=p.name, role=p.role, pid=p.pid, alive=alive, endpoint=p.endpoint,
                                      node_id=node_id, in_topology=in_topology, log=p.log, ha=ha,
                                      metrics=p.metrics))
        return ClusterStatus(state=state, processes=tuple(rows), topology=topology, topology_problem=problem)

    @staticmethod
    async def _topology(state: ClusterState) -> tuple[frozenset[str] | None, str]:
        from meshmq.discovery import DiscoveryError
        from meshmq.v1 import discovery_pb2 as dpb

        discovery = state.discovery
        if discovery is None or not discovery.endpoint or not processes.alive(discovery.ident):
            return None, "the discovery service is not running"
        try:
            client = discovery_client(state)
        except (OSError, ValueError) as exc:  # its config was removed or edited since up
            return None, f"cannot ask the discovery service: {exc}"
        try:
            listed = await client.list(dpb.ListNodesRequest(cluster_name=state.cluster_name))
        except DiscoveryError as exc:
            return None, f"discovery's List failed: {exc}"
        finally:
            await client.close()
        problem = "" if listed.available else f"etcd unreachable, last known topology: {listed.message}"
        return frozenset(n.node_id for n in listed.nodes), problem

    # --- one process: failure drills -------------------------------------------------

    def _named(self, name: str) -> tuple[ClusterState, ProcessRecord]:
        state = self.load_state()
        try:
            return state, state.process(name)
        except KeyError as exc:
            raise ClusterError(exc.args[0]) from None

    async def kill(self, name: str) -> ProcessRecord:
        """SIGKILL one process (a crash: no shutdown code runs). It stays
        recorded: `start` runs it again, `status` shows it dead, `down` skips it."""
        state, record = self._named(name)
        if not await asyncio.to_thread(processes.kill, record.ident):
            raise ClusterError(f"{name} (pid {record.pid}) is not running")
        (self.run_dir / f"{name}.pid").unlink(missing_ok=True)
        return record

    async def stop_process(self, name: str, timeout: float = STOP_DEADLINE_S) -> StoppedProcess:
        """SIGTERM one process (SIGKILL after `timeout` seconds), as `down` stops each."""
        state, record = self._named(name)
        [result] = await asyncio.to_thread(processes.stop, [record.ident], timeout)
        (self.run_dir / f"{name}.pid").unlink(missing_ok=True)
        return StoppedProcess(record.name, record.role, record.pid, result.outcome, result.seconds)

    async def start_process(self, name: str, *, timeout: float = 60.0) -> ProcessRecord:
        """Run one recorded process again, on its config, ports and data (etcd
        keeps its data, unlike at `up`), and record its new pid; return once it
        is ready (a router: listening, active or passive). A router that will
        only report ready once active (a master failing back) is waited for."""
        state, record = self._named(name)
        if processes.alive(record.ident):
            raise ClusterError(f"{name} is running (pid {record.pid}); stop or kill it first")
        if record.role == "etcd":
            etcd = EtcdServer(Path(record.data_directory).parent, f"{state.cluster_name}-etcd", log=Path(record.log),
                              start_timeout=timeout)
            etcd.client_port = int(record.endpoint.rpartition(":")[2])
            etcd.peer_port = record.peer_port
            try:
                await asyncio.to_thread(etcd.start)
            except RuntimeError as exc:
                raise ClusterError(f"etcd did not start again: {exc}") from None
            ident = processes.identify(etcd.pid)
            record.pid, record.start_mark = ident.pid, ident.start_mark
        else:
            if record.endpoint:
                _pin_port(record)
            Path(record.ready_file).unlink(missing_ok=True)
            proc = self._spawn(record)
            self._record(state, record)  # tracked from now on, ready or not
            deadline = time.monotonic() + timeout
            while not Path(record.ready_file).exists():
                if proc.poll() is not None:
                    raise ClusterError(f"{name} exited with code {proc.returncode}; the end of {record.log}:\n"
                                       f"{processes.log_tail(Path(record.log), LOG_TAIL_LINES)}")
                if time.monotonic() > deadline:
                    raise ClusterError(f"{name} was not ready after {timeout:g} s (it keeps running); see {record.log}")
                await asyncio.sleep(POLL_S)
            info = json.loads(Path(record.ready_file).read_text())
            record.endpoint, record.node_id = info["endpoints"][0], info.get("node_id", "")
            record.active = info.get("active", True)
            record.metrics = info.get("metrics", "")
        self._record(state, record)
        return record

    # --- down ------------------------------------------------------------------------

    async def down(self, *, timeout: float = STOP_DEADLINE_S, progress: Progress | None = None) -> list[StoppedProcess]:
        """Stop what `up` recorded: routers, then discovery, then etcd; each
        SIGTERM, then SIGKILL after `timeout` seconds. Keeps logs, configs and
        data; removes the pid files. Idempotent: nothing running, nothing done."""
        say = progress or (lambda _message: None)
        if not self.state_file.exists():
            return []
        state = self.load_state()
        done = await asyncio.to_thread(self._stop_recorded, state, timeout, say)
        state.status = "down"
        state.stopped_at = time.time()
        state.save(self.run_dir)
        return done

    def _stop_recorded(self, state: ClusterState, timeout: float = STOP_DEADLINE_S,
                       say: Progress = lambda _message: None) -> list[StoppedProcess]:
        done: list[StoppedProcess] = []
        for tier in ([state.gateway], state.nodes, [state.discovery, state.ha_coordinator], [state.etcd]):
            records = [r for r in tier if r is not None]
            for record, result in zip(records, processes.stop([r.ident for r in records], timeout)):
                done.append(StoppedProcess(record.name, record.role, record.pid, result.outcome, result.seconds))
                if result.outcome != "not running":
                    say(f"{record.name} (pid {record.pid}) {result.outcome} in {result.seconds:.1f} s")
                (self.run_dir / f"{record.name}.pid").unlink(missing_ok=True)
        return done


async def _ha_state(state: ClusterState, record: ProcessRecord) -> tuple[str, str]:
    """(what the router says of its ha-policy now, its node id), asking it for its NodeInfo."""
    import grpc

    from meshmq.errors import MeshMQError, NotActiveError, from_rpc_error
    from meshmq.transport import channel_credentials, open_channel
    from meshmq.v1 import management_pb2 as mgpb
    from meshmq.v1 import management_pb2_grpc as mggrpc

    credentials = channel_credentials(state.trust_store) if state.trust_store else None
    channel = open_channel(record.endpoint, credentials=credentials)
    try:
        info = await mggrpc.ManagementStub(channel).GetNodeInfo(mgpb.GetNodeInfoRequest(), timeout=STATUS_CALL_S)
    except grpc.RpcError as exc:
        err: MeshMQError = from_rpc_error(exc)
        if isinstance(err, NotActiveError):
            return f"passive (live at {err.live})" if err.live else "passive (no live)", record.node_id
        return "?", record.node_id  # e.g. a secured node: NodeInfo needs a user
    finally:
        await channel.close()
    if info.ha_policy == "live-only":
        return "live-only", info.node_id
    group = f", group {info.group_name}" if info.group_name else ""
    backup = f", backup at {info.backup_connector}" if info.backup_connector else ", no backup"
    return f"{info.ha_policy}, active, epoch {info.epoch}{group}{backup}", info.node_id


def discovery_client(state: ClusterState) -> GrpcDiscoveryClient:
    """A client of the launched discovery service that calls it as its config
    asks: proving cluster membership (when it has a cluster-password) and over
    TLS trusting the cluster CA (when its listener serves TLS). Both come from
    the discovery.yaml `up` wrote, so `status` works from any shell."""
    from meshmq.config.loader import load_config
    from meshmq.discovery import GrpcDiscoveryClient
    from meshmq.security.cluster_identity import cluster_prover
    from meshmq.transport import channel_credentials

    record = state.discovery
    config = load_config(record.config)
    tls = config.discovery.listen.ssl_enabled
    credentials = channel_credentials(state.trust_store or None) if tls else None
    return GrpcDiscoveryClient(record.endpoint, credentials=credentials, prover=cluster_prover(config))


def missing_from_topology(nodes: list[ProcessRecord], listed_ids: set[str]) -> list[str]:
    """Names of the nodes whose id discovery does not list (in file order)."""
    return [n.name for n in nodes if n.node_id not in listed_ids]


def _pin_port(record: ProcessRecord) -> None:
    """A process whose port was picked at run time (port 0 in its config)
    binds the same one when started again: clients and other nodes know it there."""
    from meshmq.config.loader import effective_config_yaml, load_config

    path = Path(record.config)
    config = load_config(path)
    port = int(record.endpoint.rpartition(":")[2])
    if record.role == "router":
        first = config.acceptors[0]
        if first.port != 0:
            return
        config = config.model_copy(update={"acceptors": (first.model_copy(update={"port": port}),
                                                         *config.acceptors[1:])})
    else:
        key = record.role.replace("-", "_")  # discovery, ha_coordinator, gateway: each has listen.port
        section = getattr(config, key)
        if section.listen.port != 0:
            return
        config = config.model_copy(update={key: section.model_copy(
            update={"listen": section.listen.model_copy(update={"port": port})})})
    header = "".join(line + "\n" for line in itertools.takewhile(lambda line: line.startswith("#"),
                                                                   path.read_text().splitlines()))
    path.write_text(header + effective_config_yaml(config, show_secrets=True))


def _write_config(path: Path, config, title: str, source: str) -> None:
    from meshmq.config.loader import effective_config_yaml

    header = (f"{title}\n# Written by `meshmq cluster up` from {source}; rewritten at every up: edit the cluster "
              "file instead.\n# The effective configuration, defaults included.\n")
    path.write_text(header + effective_config_yaml(config, show_secrets=True))
    path.chmod(0o600)  # it may hold passwords (users, journal.url)
