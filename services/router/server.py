"""The router's gRPC face: the Broker session service, Management, the
listeners (acceptors) and the expiry reaper, around one Broker."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence

import grpc

from meshmq import __version__
from meshmq.activation import EpochGrant, local_grant
from meshmq.config.address_settings import AddressSettingsResolver
from meshmq.config import defaults
from meshmq.config.models import BrokerConfig
from meshmq.errors import BrokerError, Reason, abort_with
from meshmq.hosted import HostedService, NodeFacts
from meshmq.journal_client import JournalAPI
from meshmq.security.authentication import Authenticator
from meshmq.security.authorization import Authorizer
from meshmq.security.cluster_proof import CHALLENGE_METHOD
from meshmq.security.passwords import is_hashed
from meshmq.transport import (MAX_CLIENT_FRAME, ClusterIdentityCheck, UserCheck, add_servicer, bind_listener,
                              server_options)
from meshmq.v1 import broker_pb2 as bpb
from meshmq.v1 import broker_pb2_grpc as bgrpc
from meshmq.v1 import cluster_pb2 as cpb
from meshmq.v1 import management_pb2 as mgpb

from .queue_kinds import resolve as resolve_kind
from .access import access_for
from .broker import Broker
from .client_connections import ClientConnection, ClientConnections
from .cluster.link_identity import link_identity
from .cluster.link_service import ClusterServicer
from .cluster.grouping import Grouping, LocalHandler, RemoteHandler, store_rows
from .cluster.grouping import reaper as grouping_reaper
from .cluster.manager import ClusterConnections
from .cluster.scale_down import choose_target, scale_down
from .network.connectors import NetworkConnectors
from .event_retention import EventLogStatus, EventRetention
from .management import ManagementServicer
from .node_configuration import NodeConfiguration
from .slow_consumers import SlowConsumerReaper
from .memory_release import MemoryRelease
from .disk_usage import DiskScan
from .requests import InvalidCommand, open_session, session_command
from .queue import now_ms
from .routing import ANYCAST, MULTICAST
from .session import ServerSession
from .client_topology import ClientTopology

log = logging.getLogger("meshmq.router")

_LOW_WATER = 4


class BrokerServicer(bgrpc.BrokerServicer):
    def __init__(self, broker: Broker, auth: Authenticator, authorizer: Authorizer,
                 min_client_protocol_version: int) -> None:
        self.broker = broker
        self.auth = auth
        self.authorizer = authorizer
        self.sessions: dict[str, ServerSession] = {}
        self.min_client_protocol_version = min_client_protocol_version
        self.connections = ClientConnections(self._delete_temporary_queue)

    async def Session(self, request_iterator, context: grpc.aio.ServicerContext) -> None:
        try:
            user = self.auth.authenticate(context)
        except BrokerError as exc:
            await abort_with(context, exc)
            return
        it = request_iterator.__aiter__()
        try:
            opening = open_session(await it.__anext__())
        except StopAsyncIteration:
            return
        except BrokerError as exc:
            await abort_with(context, exc)
            return
        oldest = self.min_client_protocol_version
        if opening.protocol_version < oldest:
            await abort_with(context, BrokerError(
                Reason.UNSUPPORTED_VERSION,
                f"this router accepts session protocol {oldest} or newer (min-client-protocol-version); the client "
                f"speaks {opening.protocol_version}: upgrade its SDK"))
            return
        session = ServerSession(
            self.broker, uuid.uuid4().hex, opening.client_id, opening.transacted, user,
            access_for(self.authorizer, user),
        )
        session.peer = context.peer() or ""
        session.since = now_ms()
        session.connection = self.connections.join(session.id, user, opening.connection_id)
        self.sessions[session.id] = session
        session.send(
            bpb.SessionResponse(
                opened=bpb.SessionOpened(node_id=self.broker.node_id, session_id=session.id, version=__version__,
                                         protocol_version=defaults.PROTOCOL_VERSION, min_protocol_version=oldest)
            )
        )
        reader = asyncio.create_task(self._read(session, it))
        try:
            out = session.out
            while True:
                resp = await out.get()
                if resp is None:
                    break
                await context.write(resp)
                if not session.writable.is_set() and out.qsize() <= _LOW_WATER:
                    session.writable.set()
        finally:
            reader.cancel()
            session.close()
            self.sessions.pop(session.id, None)
            self.connections.leave(session.id, session.connection)
        if session.ended_by is not None:  # CloseConnection (connections.py)
            await abort_with(context, session.ended_by)

    def _delete_temporary_queue(self, name: str, conn: ClientConnection) -> None:
        """The connection's last session here ended: its temporary queue `name` goes
        (unless it went already, or the name is someone else's queue now). What
        it holds goes first to the connection's copies of it on other nodes,
        if it has any (the connection may live on there)."""
        q = self.broker.queues.get(name)
        if q is not None and q.owner is not None and q.owner.connection is conn:
            self.broker.redistribution.hand_over(q)
            self.broker.delete_queue(name, force=True)

    async def _read(self, session: ServerSession, it) -> None:
        try:
            async for req in it:
                try:
                    await session.handle(session_command(req))
                except InvalidCommand as exc:
                    session.error(exc, producer_id=exc.producer_id, consumer_id=exc.consumer_id)
                except BrokerError as exc:
                    session.error(exc)
                except Exception:
                    log.exception("session %s: request failed", session.id)
                    session.error(BrokerError(Reason.INTERNAL, "internal error; see the router log"))
            await session.drain()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the client went away mid-stream
            log.debug("session %s ended: %s", session.id, exc)
        finally:
            session.out.put_nowait(None)


# Methods that take the cluster credential instead of a user's (other nodes call them, not users):
# links, quorum votes and what classic replication asks the lives, a colocated live's backup
# request, and a backup's replication stream. All are checked by one ClusterIdentityCheck before
# they run, so a refused caller gets UNAUTHENTICATED (never INTERNAL) and the log one line per 10 s.
QUORUM_METHODS = ("/meshmq.v1.QuorumVotes/Vote", "/meshmq.v1.QuorumVotes/ForgetCopy",
                  "/meshmq.v1.QuorumVotes/Members", "/meshmq.v1.BackupHosting/RequestBackup")
# The challenge is how a caller proves itself without a user (meshmq/security/cluster_proof.py).
CLUSTER_CREDENTIAL_METHODS = ("/meshmq.v1.Cluster/Link", "/meshmq.v1.Cluster/Propose", *QUORUM_METHODS, "/meshmq.v1.Replication/Attach",
                              CHALLENGE_METHOD)


class RouterNode:
    """One broker node: a Broker behind its acceptors."""

    def __init__(self, config: BrokerConfig, journal: JournalAPI, services: Sequence[HostedService] = ()) -> None:
        self.config = config
        self.journal = journal
        # More gRPC services on the acceptors, made at start (meshmq/hosted.py): the HA
        # coordinator's quorum votes and backup hosting, a live's replication stream.
        self._services = tuple(services)
        memory_limit = defaults.effective_global_max_size(config.global_max_size)
        log.info("global-max-size %d bytes (%d MiB; %s)", memory_limit.bytes, memory_limit.bytes >> 20, memory_limit.why)
        address_settings = self._address_settings = AddressSettingsResolver.from_config(config)
        self.broker = Broker(
            name=config.name,
            journal=journal,
            address_settings=address_settings,
            id_cache_size=config.id_cache_size,
            persist_id_cache=config.persist_id_cache,
            id_cache_max_bytes=config.id_cache_max_bytes,
            persistence_enabled=config.persistence_enabled,
            global_max_size=memory_limit.bytes,
            event_log=config.journal.event_log_enabled,
            wildcard_syntax=config.wildcard_addresses.syntax if config.wildcard_addresses.routing_enabled else None,
            address_queue_scan_period=config.address_queue_scan_period,
        )
        self.server: grpc.aio.Server | None = None
        self.endpoints: list[str] = []
        self.topology = ClientTopology(rebalance_on_join=config.rebalance_cluster_clients)
        self._reaper: asyncio.Task | None = None
        # Measures consumers only when some address settings set a slow-consumer-threshold.
        self._slow = (SlowConsumerReaper(self.broker, address_settings.slow_consumer_tick)
                      if address_settings.checks_slow_consumers else None)
        self._slow_task: asyncio.Task | None = None
        self._grouping_reaper: asyncio.Task | None = None
        self._pruner: asyncio.Task | None = None
        self._releaser: asyncio.Task | None = None
        self.disk = DiskScan(self.broker.memory, config.data_directory, config.sqlite_journal_file(),
                             config.max_disk_usage, config.disk_scan_period)
        self._disk_task: asyncio.Task | None = None
        self.cluster = ClusterConnections(config, self.broker)
        self.network = NetworkConnectors(config, self.broker)
        self.links: ClusterServicer | None = None
        # Users' log-ins (and their throttle, whose counts the metrics read); made at start.
        self.auth: Authenticator | None = None
        # Where a backup waits to take this node's store over ("" = none known; ha-policy).
        self.backup_connector = ""
        j = config.journal
        self.event_log = EventLogStatus(enabled=j.event_log_enabled and config.persistence_enabled,
                                        retention_ms=j.event_retention)

    async def start(self, grant: EpochGrant = local_grant) -> list[str]:
        await self.broker.start(grant)
        self._start_grouping()
        self.event_log.kept_from = self.broker.events_kept_from
        self._declare_configured()
        auth = Authenticator.from_config(self.config)
        self.auth = auth
        # With security on, a caller without a valid user is refused before any method runs.
        checks: list = [UserCheck(auth.identify_caller, service=f"router {self.config.name}",
                                  own_check=CLUSTER_CREDENTIAL_METHODS)] if auth.enabled else []
        if self.config.cluster_password is not None or self.config.security_enabled:
            # Other nodes' calls take the cluster credential instead, checked here too.
            checks.append(ClusterIdentityCheck(self.config.cluster_user, self.config.cluster_password,
                                               service=f"router {self.config.name}",
                                               only_methods=CLUSTER_CREDENTIAL_METHODS))
        self.server = grpc.aio.server(options=server_options(max_receive=MAX_CLIENT_FRAME), interceptors=checks)
        authorizer = Authorizer.from_config(self.config)
        plain = [u.username for u in self.config.users if not is_hashed(u.password)]
        if self.config.security_enabled and plain:
            log.warning("users %s have plain-text passwords in the configuration: store salted hashes instead "
                        "(`meshmq user hash`, docs/security.md)", ", ".join(plain))
        if self.config.security_enabled and not authorizer.active:
            log.warning("security-enabled is true but there are no security-settings: every authenticated user "
                        "may do everything (docs/security.md shows how to grant permissions to roles)")
        self.sessions = BrokerServicer(self.broker, auth, authorizer, self.config.min_client_protocol_version)
        add_servicer(self.server, self.sessions, bpb.DESCRIPTOR.services_by_name["Broker"])
        add_servicer(
            self.server, ManagementServicer(self.broker, auth, self.topology, authorizer,
                                            bridges=lambda: [*self.cluster.links(), *self.network.links.values()],
                                            ha_policy=self.config.ha_role, ha_group=self.config.ha_group,
                                            backup=lambda: self.backup_connector, event_log=self.event_log,
                                            sessions=lambda: list(self.sessions.sessions.values()),
                                            configuration=NodeConfiguration(self.config, self._address_settings)),
            mgpb.DESCRIPTOR.services_by_name["Management"],
        )
        live_only = self.config.ha_policy.live_only
        sd = live_only.scale_down if live_only is not None else None  # told even when this node's own is disabled
        self.links = ClusterServicer(self.broker, members=self.cluster.members,
                                     group_name=sd.group_name or "" if sd else "",
                                     linked_from=self.cluster.linked_from, network=self.network.accept)
        add_servicer(self.server, self.links, cpb.DESCRIPTOR.services_by_name["Cluster"])
        grouping = self.broker.grouping
        if grouping is not None and grouping.local is not None:
            links = self.links
            grouping.local.on_removed = lambda ids: links.groups_removed(grouping.address, ids)
        facts = NodeFacts(node_id=lambda: self.broker.node_id, node_name=self.config.name,
                          members=self.cluster.members)
        for hosted in self._services:
            add_servicer(self.server, *hosted(facts))
        for acc in self.config.acceptors:
            self.endpoints.append(bind_listener(self.server, acc, f"acceptor {acc.name!r}"))
        await self.server.start()
        self.cluster.start(self.endpoints)
        self.network.start(link_identity(self.config, self.cluster.own_connector))
        await self.topology.replace([self.member()])
        self._reaper = asyncio.create_task(self._expiry_loop())
        if self._slow is not None:
            self._slow_task = asyncio.create_task(self._slow.run(), name="slow-consumers")
        self._releaser = asyncio.create_task(MemoryRelease(lambda: self.broker.memory.bytes).run(),
                                             name="memory-release")
        self._disk_task = asyncio.create_task(self.disk.run(), name="disk-scan")
        if self.broker.persistence_enabled and self.event_log.retention_ms > 0:  # (also pruned when not written)
            retention = EventRetention(self.broker.batch, self.broker.stored, self.event_log,
                                       self.config.journal.event_retention_scan_period)
            self._pruner = asyncio.create_task(retention.run(), name="event-retention")
        log.info("node %s (%s) listening on %s", self.config.name, self.broker.node_id, ", ".join(self.endpoints))
        return self.endpoints

    def _start_grouping(self) -> None:
        """Clustered grouping (grouping-handler): the LOCAL handler takes the
        decisions stored before a restart; a REMOTE one finds the LOCAL node
        through its links' welcomes."""
        gh = self.config.grouping_handler
        recovered = self.broker.recovered_group_bindings
        if recovered:
            del self.broker.recovered_group_bindings  # taken (the class's empty default shows again)
        if gh is None:
            return
        own = lambda: self.broker.node_id  # noqa: E731
        if gh.type == "LOCAL":
            local = LocalHandler(gh.name, gh.group_timeout,
                                 store_rows(gh.name, self.broker.batch, self.broker.persistence_enabled))
            for handler, group_id, node_id in recovered:
                if handler == gh.name:
                    local.restore(group_id, node_id)
            self.broker.grouping = Grouping(gh, own, local=local)
            self._grouping_reaper = asyncio.create_task(grouping_reaper(local, gh.reaper_period),
                                                        name="grouping-reaper")
            log.info("grouping handler %s: LOCAL for address %r, %d decisions recovered", gh.name, gh.address,
                     len(local.decisions))
        else:
            remote = RemoteHandler(gh.name, gh.address, gh.timeout, gh.group_timeout, own,
                                   lambda: self.cluster.grouping_local(gh.address))
            self.broker.grouping = Grouping(gh, own, remote=remote)
            log.info("grouping handler %s: REMOTE for address %r (timeout %d ms)", gh.name, gh.address, gh.timeout)

    def member(self) -> mgpb.TopologyMember:
        """This node as clients see it in the topology (its first acceptor, and its backup's when it has one)."""
        return mgpb.TopologyMember(node_id=self.broker.node_id, name=self.config.name, connector=self.endpoints[0],
                                   backup_connector=self.backup_connector)

    def _declare_configured(self) -> None:
        """Create the addresses and queues the config declares (broker.xml <addresses>)."""
        b = self.broker
        for addr_name, addr in self.config.addresses.items():
            for rt, queues in ((ANYCAST, addr.anycast), (MULTICAST, addr.multicast)):
                if queues is None:
                    continue
                b.ensure_address(addr_name, rt, auto_created=False)
                for q in queues:
                    existing = b.queues.get(q.name)
                    attributes = resolve_kind(
                        b.settings(addr_name), q.last_value_key, q.last_value, q.non_destructive, q.exclusive,
                        group_rebalance=q.group_rebalance, group_rebalance_pause_dispatch=q.group_rebalance_pause_dispatch,
                        group_buckets=q.group_buckets, group_first_key=q.group_first_key,
                    )
                    if existing is None:
                        b.create_queue(q.name, addr_name, rt, q.filter or "", durable=q.durable, attributes=attributes)
                    elif (existing.filter_text != (q.filter or "") or existing.address != addr_name
                          or existing.attributes != attributes):
                        log.warning("queue %s exists with another definition; keeping the stored one", q.name)

    async def _expiry_loop(self) -> None:
        period = self.config.message_expiry_scan_period / 1000
        if period <= 0:
            return
        while True:
            await asyncio.sleep(period)
            n = self.broker.delivery.expire_scan()
            if n:
                log.info("expiry reaper expired %d messages", n)

    async def wait(self) -> None:
        """Until the server stops or the broker halts (fenced, or its journal failed)."""
        halted = asyncio.create_task(self.broker.halted.wait())
        stopped = asyncio.create_task(self.server.wait_for_termination())
        await asyncio.wait([halted, stopped], return_when=asyncio.FIRST_COMPLETED)
        halted.cancel()
        stopped.cancel()

    async def close_sessions(self, redirect: bpb.Redirect | None = None, timeout: float = 10.0) -> None:
        """End every client session (their deliveries go back to their queues),
        first telling each client where to reconnect when `redirect` is given."""
        for session in list(self.sessions.sessions.values()):
            if redirect is not None:
                session.out.put_nowait(bpb.SessionResponse(redirect=redirect))
            session.out.put_nowait(None)
        deadline = asyncio.get_running_loop().time() + timeout
        while self.sessions.sessions and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)

    async def scale_down(self) -> None:
        """ha-policy live-only scale-down: everything to another node (raises ScaleDownFailed)."""
        endpoint, node_id = await choose_target(self.config, self.broker, self.endpoints)
        await self.cluster.stop()  # its links would forward on their own meanwhile
        await self.network.stop()
        await self.close_sessions(bpb.Redirect(node_id=node_id, connector=endpoint, reason="scale-down"))
        await scale_down(self.config, self.broker, endpoint)

    async def stop(self, grace: float = 2.0) -> None:
        for task in (self._reaper, self._pruner, self._releaser, self._slow_task, self._grouping_reaper,
                     self._disk_task):
            if task is not None:
                task.cancel()
        if self.broker.grouping is not None and self.broker.grouping.remote is not None:
            await self.broker.grouping.remote.close()
        await self.cluster.stop()
        await self.network.stop()
        if self.links is not None:
            self.links.close()
        if self.server is not None:
            started = asyncio.get_running_loop().time()
            try:
                await self.server.stop(grace)
            except asyncio.CancelledError:
                # grpc cancels streams still open after the grace period and lets
                # that CancelledError escape; only re-raise if *we* are being cancelled.
                if asyncio.current_task().cancelling():
                    raise
            # Near the grace means some stream outlived the stop (an operator's hint, and the tests').
            log.info("gRPC server stopped in %.2fs (grace %.1fs)", asyncio.get_running_loop().time() - started, grace)
        self.journal.stop_confirming()  # no client is left to confirm to
        await self.broker.stop()
