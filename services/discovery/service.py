"""Discovery as a process of its own (`meshmq serve discovery`)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import grpc

from meshmq.config.models import BrokerConfig
from meshmq.discovery import DiscoveryCore
from meshmq.metrics import serving
from meshmq.runtime import serve_until_signalled
from meshmq.security import cluster_identity
from meshmq.security.authentication import Authenticator
from meshmq.service_registry import Service

from .config import served_group
from .server import READ_METHODS, DiscoveryServicer, add_discovery_service

log = logging.getLogger("meshmq")


def identity_check(config: BrokerConfig) -> list[grpc.aio.ServerInterceptor]:
    """With a cluster password, every call needs the cluster credential, except
    that a configured user may also List and Watch: clients find nodes that way,
    but only the cluster's own processes may Announce."""
    users = Authenticator(True, ((u.username, u.password) for u in config.users))
    return cluster_identity.server_interceptors(config, "discovery", readers=lambda md: users.identify(md) is not None,
                                                read_methods=READ_METHODS)


async def run_discovery(
    config: BrokerConfig, *, ready_file: str | None = None, on_ready: Callable[[dict], None] | None = None
) -> None:
    """The discovery service on discovery.listen, serving one discovery group.
    An unreachable etcd stops it at start (after initial-wait-timeout) with
    DiscoveryUnavailableError naming the endpoints."""
    group_name, group = served_group(config.discovery_groups, config.discovery)
    cluster_identity.check_service_start(config, "discovery", log)
    core = DiscoveryCore.for_group(group)
    try:
        await core.start()
        servicer = DiscoveryServicer(core)
        async with serving(config.metrics, service="discovery", node=config.name) as metrics:
            metrics.put("discovery", servicer.fill_metrics)
            # Leases held for nodes are not revoked at the stop: the nodes are alive and join
            # again (here or at another instance); unclaimed ones lapse.
            await serve_until_signalled(
                config.discovery.listen, "discovery", lambda server: add_discovery_service(server, servicer),
                identity_check(config),
                {"backend": core.description, "discovery_group": group_name, "cluster_name": group.cluster_name},
                ready_file=ready_file, on_ready=on_ready, grace_s=1, detail=core.description, metrics=metrics)
    finally:
        await core.close()

DISCOVERY = Service(
    name="discovery",
    summary="The discovery service alone, listening on discovery.listen.",
    run=run_discovery,
    ready_line=lambda info: (
        f"meshmq discovery listening on {', '.join(info['endpoints'])} ({info['backend']}, cluster {info['cluster_name']})"
    ),
)
