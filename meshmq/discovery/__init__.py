"""Who is in the cluster: one package for the SDK, the routers and the discovery service.

`DiscoveryAPI` is what callers use. Two transports satisfy it:
`DiscoveryCore` hosted in the caller's process (over the etcd or the
static-connectors backend; the node then talks to etcd itself and its own
process holds its lease, so a kill -9 of the node stops the keep-alives), and
`GrpcDiscoveryClient` when discovery runs as its own process
(`meshmq serve discovery`, whose gRPC servicer is `services/discovery/`).
Both take and return the protobuf messages of `proto/meshmq/v1/discovery.proto`.

On top of either:

* `Announcer` keeps one node in the topology: join, a keep-alive every
  broadcast-period, an announcement again when etcd lost the lease, a leave on
  a graceful stop.
* `TopologyWatcher` keeps one cluster's topology up to date from a watch
  stream, resumes it after the stream breaks, and keeps the last known
  topology meanwhile (`TopologyState` is its pure core).

Every failure reaches the caller as a `DiscoveryError` subclass; an outage of
etcd or of the discovery service is logged once when it starts and once when
it ends (`OutageLog`), however many keep-alives fail in between.

The modules, one job each: `errors`, `timing` (defaults and request timeout),
`retry` (`Backoff`, `OutageLog`), `api` (the protocols), `topology`
(`TopologyState`), `watcher`, `announcer`, `grpc_client`, `core`
(`DiscoveryCore`, `join_problems`), `backend` (the backends' interface),
`etcd_backend`, `static_backend`. The backends are imported when a core is
built for them, not here (etcd's client is not needed to watch over gRPC).
"""

from .announcer import Announcer
from .api import DiscoveryAPI, Membership, WatchSource
from .core import DiscoveryCore, join_problems
from .errors import DiscoveryConfigError, DiscoveryError, DiscoveryUnavailableError, NodeIdInUseError
from .grpc_client import GrpcDiscoveryClient
from .retry import Backoff, OutageLog, outage_log
from .timing import BROADCAST_PERIOD_MS, INITIAL_WAIT_TIMEOUT_MS, REFRESH_TIMEOUT_MS, REQUEST_TIMEOUT_S
from .topology import TopologyState
from .watcher import Subscription, TopologyWatcher

__all__ = [
    "BROADCAST_PERIOD_MS",
    "INITIAL_WAIT_TIMEOUT_MS",
    "REFRESH_TIMEOUT_MS",
    "REQUEST_TIMEOUT_S",
    "Announcer",
    "Backoff",
    "DiscoveryAPI",
    "DiscoveryConfigError",
    "DiscoveryCore",
    "DiscoveryError",
    "DiscoveryUnavailableError",
    "GrpcDiscoveryClient",
    "Membership",
    "NodeIdInUseError",
    "OutageLog",
    "Subscription",
    "TopologyState",
    "TopologyWatcher",
    "WatchSource",
    "join_problems",
    "outage_log",
]
