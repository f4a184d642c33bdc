"""Reaching a configured discovery group from any process: the routers (their
topology, cluster connections and scale-down) and the admin gateway (the
nodes it shows) open a group the same way."""

from __future__ import annotations

from meshmq.config.discovery import DiscoveryGroup
from meshmq.config.models import BrokerConfig
from meshmq.security.cluster_identity import cluster_prover, node_channel_credentials

from .api import DiscoveryAPI
from .core import DiscoveryCore
from .grpc_client import GrpcDiscoveryClient
from .watcher import TopologyWatcher


def discovery_for(config: BrokerConfig, group_name: str | DiscoveryGroup) -> DiscoveryAPI:
    """How this process reaches a discovery group (its name in the config, or
    one a network connector's discovery: URI describes): a discovery service,
    or etcd / the static list hosted here (then this process holds its own lease)."""
    group = config.discovery_groups[group_name] if isinstance(group_name, str) else group_name
    if group.discovery_service:
        return GrpcDiscoveryClient(group.discovery_service, credentials=node_channel_credentials(config),
                                   prover=cluster_prover(config))
    return DiscoveryCore.for_group(group)


def group_watcher(config: BrokerConfig, group_ref: str | DiscoveryGroup, api: DiscoveryAPI | None = None
                  ) -> tuple[DiscoveryAPI, TopologyWatcher]:
    """A started watcher of discovery group `group_ref`'s nodes (and the API it
    reads, to close after it): the router's topology, its cluster connections'
    discovery-group-ref, network connectors and scale-down all watch a group this way."""
    group = config.discovery_groups[group_ref] if isinstance(group_ref, str) else group_ref
    api = api or discovery_for(config, group_ref)
    watcher = TopologyWatcher(api, group.cluster_name, refresh_timeout_ms=group.refresh_timeout,
                              initial_wait_timeout_ms=group.initial_wait_timeout)
    watcher.start()
    return api, watcher
