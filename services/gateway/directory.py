"""Which routers the gateway shows, and a management client for each.

The members come from the configured discovery group (live and backup nodes
as they announce themselves), the static connectors, or — with neither — the
node's own acceptor (the embedded default). Every call goes to one router with
the caller's credentials and the gateway's call-timeout, so a router that is
down or slow costs one timeout for its own row, never the whole page.
"""

from __future__ import annotations

import asyncio
import logging
import time

import grpc
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from meshmq.client.connection import Admin
from meshmq.config.models import BrokerConfig
from meshmq.discovery import DiscoveryAPI, TopologyWatcher
from meshmq.discovery.groups import group_watcher
from meshmq.errors import MeshMQError, from_rpc_error
from meshmq.security.cluster_identity import cluster_prover
from meshmq.transport import channel_credentials, channel_options, open_channel
from meshmq.v1 import discovery_pb2 as dpb
from meshmq.v1 import ha_coordinator_pb2 as hpb
from meshmq.v1 import ha_coordinator_pb2_grpc as hagrpc
from meshmq.v1 import management_pb2_grpc as mggrpc

log = logging.getLogger("meshmq.gateway")

T = TypeVar("T")

# How long a router that stopped answering and left discovery stays on the pages (as down).
REMEMBER_S = 600.0


@dataclass(frozen=True)
class Member:
    """A router as discovery (or the config) names it, before asking it anything."""

    connector: str
    name: str = ""
    node_id: str = ""
    # "live", "backup" or "" (static / own acceptor: the node itself says).
    role: str = ""
    group_name: str = ""
    backup_connector: str = ""


@dataclass
class Reply:
    """One router's answer to one call: the value, or why there is none."""

    member: Member
    value: object = None
    error: MeshMQError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _role_name(role: int) -> str:
    name = dpb.NodeRole.Name(role) if role in dpb.NodeRole.values() else ""
    return name.removeprefix("NODE_ROLE_").lower() if name and name != "NODE_ROLE_UNSPECIFIED" else ""


class RouterDirectory:
    def __init__(self, config: BrokerConfig) -> None:
        self._config = config
        self._call_timeout_s = config.gateway.call_timeout / 1000
        # Named by their connector until they answer (a node down keeps that name).
        self._static = [Member(config.connectors[ref], name=ref) for ref in config.gateway.static_connectors]
        if not self._static and config.gateway.discovery_group_ref is None:
            own = config.acceptors[0]
            host = "127.0.0.1" if own.host in ("0.0.0.0", "::", "") else own.host
            self._static = [Member(f"{host}:{own.port}", name=config.name)]
        self._api: DiscoveryAPI | None = None
        self._watcher: TopologyWatcher | None = None
        self._channels: dict[str, object] = {}
        self._prover = cluster_prover(config)
        self._stubs: dict[str, mggrpc.ManagementStub] = {}
        self._coordinator: hagrpc.HaCoordinatorStub | None = None
        self._remembered: dict[str, tuple[Member, float]] = {}
        trust = config.gateway.trust_path
        self._tls = channel_credentials(trust) if trust is not None else None

    @property
    def description(self) -> str:
        parts = []
        if self._config.gateway.discovery_group_ref:
            parts.append(f"discovery group {self._config.gateway.discovery_group_ref}")
        if self._static:
            parts.append("routers " + ", ".join(m.connector for m in self._static))
        return "; ".join(parts)

    def set_own_connector(self, connector: str) -> None:
        """The embedded gateway learns its router's bound endpoint (port 0 picked at start)."""
        if self._config.gateway.discovery_group_ref is None and not self._config.gateway.static_connectors:
            self._static = [Member(connector, name=self._config.name)]

    async def start(self) -> None:
        ref = self._config.gateway.discovery_group_ref
        if ref is not None:
            self._api, self._watcher = group_watcher(self._config, ref)

    async def close(self) -> None:
        if self._watcher is not None:
            await self._watcher.close()
        if self._api is not None:
            await self._api.close()
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()
        self._stubs.clear()
        self._coordinator = None

    def members(self) -> list[Member]:
        """Every router known now: discovered ones (live first, then backups), then static
        ones, then those seen in the last REMEMBER_S that discovery no longer lists (a node
        killed a moment ago shows as down instead of vanishing)."""
        found: list[Member] = []
        if self._watcher is not None:
            for n in sorted(self._watcher.nodes(), key=lambda n: (n.role, n.node_name, n.connector)):
                found.append(Member(n.connector, name=n.node_name, node_id=n.node_id, role=_role_name(n.role),
                                    group_name=n.group_name, backup_connector=n.backup_connector))
        listed = {m.connector for m in found}
        found.extend(m for m in self._static if m.connector not in listed)
        listed |= {m.connector for m in self._static}
        now = time.monotonic()
        for connector, (member, when) in list(self._remembered.items()):
            if now - when > REMEMBER_S:
                del self._remembered[connector]
            elif connector not in listed:
                found.append(member)
        return found

    def remember(self, member: Member) -> None:
        """A router that answered (or named itself as a passive backup) just now."""
        self._remembered[member.connector] = (member, time.monotonic())

    def admin(self, connector: str, metadata) -> Admin:
        stub = self._stubs.get(connector)
        if stub is None:
            channel = self._channels[connector] = open_channel(connector, credentials=self._tls,
                                                               options=channel_options())
            stub = self._stubs[connector] = mggrpc.ManagementStub(channel)
        return Admin(stub, metadata, self._call_timeout_s)

    async def quorums(self) -> tuple[list[hpb.QuorumState], str]:
        """The HA coordinator's quorums under gateway.ha-namespace, and why there are
        none ("" when no coordinator is configured or it answered). Read with the
        cluster credential: the coordinator admits only the cluster's own processes."""
        target = self._config.gateway.ha_coordinator
        if not target:
            return [], ""
        if self._coordinator is None:
            channel = self._channels[f"ha:{target}"] = open_channel(target, credentials=self._tls,
                                                                    options=channel_options())
            self._coordinator = hagrpc.HaCoordinatorStub(channel)
        try:
            metadata = await self._prover.metadata(self._channels[f"ha:{target}"], f"HA coordinator {target}",
                                                   timeout_s=self._call_timeout_s)
            reply = await self._coordinator.ListQuorums(
                hpb.ListQuorumsRequest(namespace=self._config.gateway.ha_namespace),
                metadata=metadata, timeout=self._call_timeout_s)
        except grpc.RpcError as exc:
            return [], f"HA coordinator {target}: {from_rpc_error(exc)}"
        return list(reply.quorums), ""

    async def ask(self, member: Member, metadata, call: Callable[[Admin], Awaitable[T]]) -> Reply:
        try:
            return Reply(member, await call(self.admin(member.connector, metadata)))
        except MeshMQError as exc:
            return Reply(member, error=exc)

    async def ask_all(self, metadata, call: Callable[[Admin], Awaitable[T]],
                      members: list[Member] | None = None) -> list[Reply]:
        """`call` on every router at once; each reply carries its value or its error."""
        members = self.members() if members is None else members
        return list(await asyncio.gather(*(self.ask(m, metadata, call) for m in members)))
