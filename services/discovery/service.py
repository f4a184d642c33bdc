"""Discovery as a process of its own (`meshmq serve discovery`)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import grpc

from meshmq.config.models import BrokerConfig
from meshmq.discovery import DiscoveryCore
from meshmq.runtime import report_ready, until_signalled
from meshmq.security import cluster_identity
from meshmq.security.authentication import Authenticator
from meshmq.service_registry import Service
from meshmq.transport import bind_listener, server_options

from .config import served_group
from .server import READ_METHODS, add_discovery_service

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
    problem = cluster_identity.service_problem(config, "discovery")
    if problem is not None:
        raise cluster_identity.ClusterIdentityError(problem)
    for warning in cluster_identity.start_warnings(config, "discovery"):
        log.warning(warning)
    core = DiscoveryCore.for_group(group)
    try:
        await core.start()
        server = grpc.aio.server(options=server_options(), interceptors=identity_check(config))
        add_discovery_service(server, core)
        endpoint = bind_listener(server, config.discovery.listen, "discovery")
        await server.start()
        info = {
            "service": "discovery",
            "endpoints": [endpoint],
            "backend": core.description,
            "discovery_group": group_name,
            "cluster_name": group.cluster_name,
        }
        report_ready(info, ready_file, on_ready)
        log.info("discovery service listening on %s, %s", endpoint, core.description)
        try:
            await until_signalled()
        finally:
            # Leases held for nodes are not revoked: the nodes are alive and join
            # again (here or at another instance); unclaimed ones lapse.
            await server.stop(1)
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
