"""Several nodes on one machine: `meshmq cluster up|status|down` and its Python API.

    from meshmq.launcher import LocalCluster, load_cluster_spec

    spec = load_cluster_spec("deploy/local/symmetric-3.yaml").with_free_ports()
    cluster = LocalCluster(spec, run_dir)
    state = await cluster.up()              # etcd, discovery, every node; ready = all in the topology
    state.node("n1").endpoint, state.node("n1").node_id, state.node("n1").pid, state.url
    status = await LocalCluster.attach(run_dir).status()    # from <run>/cluster.json
    await cluster.down()                    # nodes, discovery, etcd: SIGTERM, then SIGKILL after a deadline

`docs/cluster-launcher.md` describes the cluster file and the run directory.
The package is named for what it does — it launches local processes — and
leaves the name "cluster" to cluster connections; the command keeps its name.
"""

from meshmq.launcher.launcher import (
    ClusterError,
    ClusterStatus,
    ClusterUpError,
    LocalCluster,
    ProcessStatus,
    StoppedProcess,
)
from meshmq.launcher.spec import ClusterSpec, load_cluster_spec, load_cluster_spec_text
from meshmq.launcher.state import ClusterState, ProcessRecord

__all__ = [
    "ClusterError",
    "ClusterSpec",
    "ClusterState",
    "ClusterStatus",
    "ClusterUpError",
    "LocalCluster",
    "ProcessRecord",
    "ProcessStatus",
    "StoppedProcess",
    "load_cluster_spec",
    "load_cluster_spec_text",
]
