"""`<run>/cluster.json`: what `meshmq cluster up` started, for `status` and
`down` in another shell (or a fresh `LocalCluster` in a test).

It is written as each process starts (not only once everything is ready), so
a launch that fails or is interrupted half-way can still be stopped.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from urllib.parse import quote

from meshmq.launcher.processes import Identity

STATE_FILE = "cluster.json"
FORMAT_VERSION = 1


@dataclass
class ProcessRecord:
    """One process of the cluster. `role` is "etcd", "discovery", "ha-coordinator", "gateway" or "router"."""

    name: str
    role: str
    pid: int
    start_mark: float
    log: str
    endpoint: str = ""
    node_id: str = ""
    config: str = ""
    ready_file: str = ""
    data_directory: str = ""
    # False for a router that reported ready as a passive node (a shared-store backup waiting for its store).
    active: bool = True
    # etcd's peer port (its client port is in `endpoint`): a restart binds both again.
    peer_port: int = 0
    # Where its Prometheus metrics are served ("" = not served, or not ready yet): from its ready file.
    metrics: str = ""

    @property
    def ident(self) -> Identity:
        return Identity(self.pid, self.start_mark)

    @property
    def url(self) -> str:
        return f"meshmq://{self.endpoint}"


@dataclass
class ClusterState:
    """The cluster as launched. `status` is "starting", "up", "failed" or "down"."""

    cluster_name: str
    run_dir: str
    spec_file: str = ""
    status: str = "starting"
    started_at: float = 0.0
    ready_at: float = 0.0
    stopped_at: float = 0.0
    # Seconds from the start of `up` to each stage (etcd, listening, in topology).
    timings: dict[str, float] = field(default_factory=dict)
    # The CA certificate clients trust (tls.ca-dir's ca.pem); "" = the listeners are plain.
    trust_store: str = ""
    processes: list[ProcessRecord] = field(default_factory=list)

    @property
    def etcd(self) -> ProcessRecord | None:
        return next((p for p in self.processes if p.role == "etcd"), None)

    @property
    def discovery(self) -> ProcessRecord | None:
        return next((p for p in self.processes if p.role == "discovery"), None)

    @property
    def ha_coordinator(self) -> ProcessRecord | None:
        return next((p for p in self.processes if p.role == "ha-coordinator"), None)

    @property
    def gateway(self) -> ProcessRecord | None:
        return next((p for p in self.processes if p.role == "gateway"), None)

    @property
    def nodes(self) -> list[ProcessRecord]:
        """The routers, in the cluster file's order."""
        return [p for p in self.processes if p.role == "router"]

    def process(self, name: str) -> ProcessRecord:
        """Any recorded process by name (a node, "discovery", "ha-coordinator", "gateway" or "etcd")."""
        for p in self.processes:
            if p.name == name:
                return p
        have = ", ".join(p.name for p in self.processes)
        raise KeyError(f"no process {name!r} in cluster {self.cluster_name} (have: {have})")

    def node(self, name: str) -> ProcessRecord:
        for p in self.nodes:
            if p.name == name:
                return p
        have = ", ".join(p.name for p in self.nodes)
        raise KeyError(f"no node {name!r} in cluster {self.cluster_name} (have: {have})")

    @property
    def client_options(self) -> str:
        """The URI options a client needs to reach the nodes: with TLS,
        `sslEnabled=true&trustStorePath=<ca.pem>`; "" otherwise."""
        if not self.trust_store:
            return ""
        return f"sslEnabled=true&trustStorePath={quote(self.trust_store, safe='/')}"

    @property
    def url(self) -> str:
        """A client URI listing every node: `(meshmq://a,meshmq://b,...)`, with `client_options`."""
        options = self.client_options
        return "(" + ",".join(p.url for p in self.nodes if p.endpoint) + ")" + (f"?{options}" if options else "")

    def replace(self, record: ProcessRecord) -> None:
        self.processes = [record if p.name == record.name else p for p in self.processes]
        if record not in self.processes:
            self.processes.append(record)

    # --- the file ----------------------------------------------------------------

    def save(self, run_dir: Path) -> None:
        data = {"format": FORMAT_VERSION, **asdict(self)}
        path = Path(run_dir) / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        os.replace(tmp, path)

    @classmethod
    def load(cls, run_dir: Path) -> ClusterState:
        """FileNotFoundError when nothing was launched there; ValueError when the file is not ours."""
        path = Path(run_dir) / STATE_FILE
        try:
            data = json.loads(path.read_text())
            if data.pop("format", None) != FORMAT_VERSION:
                raise ValueError(f"unknown format (expected {FORMAT_VERSION})")
            known = {f.name for f in fields(ProcessRecord)}
            processes = [ProcessRecord(**{k: v for k, v in p.items() if k in known}) for p in data.pop("processes")]
            known = {f.name for f in fields(cls)}
            return cls(**{k: v for k, v in data.items() if k in known}, processes=processes)
        except FileNotFoundError:
            raise
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
            raise ValueError(f"{path} is not a meshmq cluster state file: {exc}") from None

