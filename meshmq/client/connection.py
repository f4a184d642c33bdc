"""Connecting to a router, and its management calls."""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections.abc import AsyncGenerator, Callable, Sequence

import grpc

from meshmq.aio import wait_for
from meshmq.errors import ConnectionFailedError, MeshMQError, NotActiveError, from_rpc_error
from meshmq.transport import MAX_CLIENT_FRAME, channel_credentials, channel_options, credentials_metadata, open_channel
from meshmq.v1 import broker_pb2_grpc as bgrpc
from meshmq.v1 import management_pb2 as mgpb
from meshmq.v1 import management_pb2_grpc as mggrpc
from meshmq.v1 import messages_pb2 as mpb

from .failover import FailoverListener, Incidents, failover_candidates, keepalive_options, reconnect_delays
from .loadbalance import LoadBalancingPolicy, policy_from_name
from .rebalance import rebalance_plan
from .session import Session
from .temporary_queue import TemporaryQueue
from .trust import may_receive_credentials, session_candidates, topology_is_verified
from .options import ClientOptions, Server
from .uri import ParsedURI, parse_uri

log = logging.getLogger("meshmq.client")

_ROUTING = {"anycast": mpb.ANYCAST, "multicast": mpb.MULTICAST}
# Either of these would make gRPC check a server's certificate against another
# name than the host the node was announced with, and a node learned from the
# topology must prove that name (trust.py): never set them on a client channel.
_NAME_OVERRIDES = ("grpc.ssl_target_name_override", "grpc.default_authority")


def _channel_options(options: ClientOptions) -> list[tuple[str, int]]:
    return [
        o for o in channel_options(max_send=MAX_CLIENT_FRAME, keepalive=keepalive_options(options))
        if o[0] not in _NAME_OVERRIDES
    ]


def _server(connector: str) -> Server:
    host, _, port = connector.rpartition(":")
    return Server(host.strip("[]"), int(port))


class _Node:
    """A channel to one router and the stubs on it: TLS whenever the connection
    has TLS credentials (URI hosts and topology nodes alike), verified for the
    server's own host name."""

    def __init__(self, server: Server, tls: grpc.ChannelCredentials | None, options: list[tuple[str, int]]) -> None:
        self.server = server
        self.channel = open_channel(server.target, credentials=tls, options=options)
        self.broker = bgrpc.BrokerStub(self.channel)
        self.management = mggrpc.ManagementStub(self.channel)


class _SessionHost:
    """A connection as its sessions see it (session.py's SessionHost), so a session
    reaches no further into the connection than this."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self.metadata = connection._metadata
        self.options = connection.uri.options
        self.incidents = connection._incidents
        self.admin = connection._admin
        self.failover_candidates = connection._failover_candidates
        self.connection_id = connection.connection_id
        self.temporary_queues = connection._temporary_queues
        self.create_temporary_queue = connection.create_temporary_queue

    def broker(self, server: Server) -> bgrpc.BrokerStub:
        return self._connection._node(server).broker


class Connection:
    """A client's view of one router or a cluster of them.

    The first contact goes to the URI's servers in order (initialConnectAttempts
    rounds, with the retry backoff). Each new session then goes to the node the
    load-balancing policy picks: over the cluster topology the connected node
    reports (it pushes every change), or over the URI's list when
    useTopologyForLoadBalancing=false. `topology` is what the cluster reported;
    sessions go only to the part of it that may receive this client's
    credentials (trust.py: all of it with TLS or without a username, else the
    URI's own hosts).
    """

    def __init__(self, parsed: ParsedURI) -> None:
        self.uri = parsed
        opts = parsed.options
        self.policy: LoadBalancingPolicy = policy_from_name(opts.connectionLoadBalancingPolicyClassName)
        self._metadata = credentials_metadata(opts.username, opts.password)
        self._tls = (
            channel_credentials(opts.trustStorePath or None, opts.keyStorePath or None, opts.keyPath or None)
            if opts.sslEnabled
            else None
        )
        # Whether topology nodes may get the password at all (trust.py); warned once when they are left out.
        self._topology_verified = topology_is_verified(opts)
        self._warned_unverified = False
        self._warned_unreachable: set[str] = set()
        self._nodes: dict[str, _Node] = {}
        self._channel_options = _channel_options(opts)
        self._sessions: list[Session] = []
        self.topology: list[Server] = []
        # From the pushed topology: each node id's connector now, and the backup last named
        # for it (failover.py: where a session lost with that node goes).
        self._connector_of: dict[str, Server] = {}
        self._backup_of: dict[str, Server] = {}
        self._incidents = Incidents()
        self._watch: asyncio.Task | None = None
        self.admin: Admin | None = None
        self.node: mgpb.NodeInfo | None = None
        self._topology_changed = asyncio.Event()
        self._rng = random.Random()
        self.rebalances = 0  # rebalance requests followed (rebalance-cluster-clients on the nodes)
        # Sent with every session (OpenSession.connection_id): the routers know its sessions as one
        # connection, whose temporary queues are theirs (temporary_queue.py).
        self.connection_id = uuid.uuid4().hex
        self._temporary_queues: dict[str, TemporaryQueue] = {}
        self._anchor: Session | None = None  # the session that keeps them (temporary_queue.py)
        self._anchor_lock = asyncio.Lock()
        self._session_host = _SessionHost(self)

    def _node(self, server: Server) -> _Node:
        node = self._nodes.get(server.target)
        if node is None:
            node = self._nodes[server.target] = _Node(server, self._tls, self._channel_options)
        return node

    def _admin(self, server: Server) -> Admin:
        """Management calls to one node, with this connection's credentials and callTimeout."""
        return Admin(self._node(server).management, self._metadata, self.uri.options.callTimeout / 1000)

    def add_failover_listener(self, listener: FailoverListener) -> None:
        """Call `listener(event, error)` at FAILURE_DETECTED, then FAILOVER_COMPLETED or
        FAILOVER_FAILED, once per node whose sessions fail over (reconnectAttempts != 0)."""
        self._incidents.listeners.append(listener)

    def remove_failover_listener(self, listener: FailoverListener) -> None:
        self._incidents.listeners.remove(listener)

    def _failover_candidates(self, lost_on: Server, node_id: str, *, redirect: str = "") -> list[Server]:
        """Where a session lost on `lost_on` tries next (failover.py), among the nodes
        that may receive this connection's credentials (trust.py)."""
        others = list(self.uri.servers) + [s for s in self.topology if s not in self.uri.servers]
        found = failover_candidates(
            lost_on,
            node_id,
            members=self._connector_of,
            backups=self._backup_of,
            others=others,
            any_node=self.uri.any_node_failover,
        )
        if redirect:
            found.insert(0, _server(redirect))  # a scale-down names where its messages went
        if not self._metadata:
            return found
        return [s for s in found if may_receive_credentials(s, self.uri.servers, verified=self._topology_verified)]

    async def _discover(self) -> tuple[Server, ...]:
        """The nodes announced in etcd right now (discovery serves the first contact only)."""
        from meshmq.config.models import DiscoveryGroup, EtcdSettings
        from meshmq.discovery import DiscoveryCore, TopologyWatcher  # hosted in-process, as the router hosts it

        d = self.uri.discovery
        group = DiscoveryGroup(
            etcd=EtcdSettings(endpoints=d.endpoints),
            cluster_name=d.cluster_name,
            refresh_timeout=d.refresh_timeout,
            initial_wait_timeout=d.initial_wait_timeout,
        )
        core = DiscoveryCore.for_group(group)
        watcher = TopologyWatcher(
            core, d.cluster_name, refresh_timeout_ms=d.refresh_timeout, initial_wait_timeout_ms=d.initial_wait_timeout
        )
        watcher.start()
        try:
            nodes = await watcher.wait_ready(1, d.initial_wait_timeout)
        except MeshMQError as exc:
            raise ConnectionFailedError(
                f"no meshmq node found in cluster {d.cluster_name!r} at etcd {','.join(d.endpoints)} "
                f"within initialWaitTimeout={d.initial_wait_timeout} ms: {exc}"
            ) from None
        finally:
            await watcher.close()
            await core.close()
        return tuple(sorted((_server(n.connector) for n in nodes), key=lambda s: s.target))

    async def _first_contact(self) -> None:
        opts = self.uri.options
        servers = self.uri.servers or await self._discover()
        errors = []
        for delay in reconnect_delays(opts, opts.initialConnectAttempts):
            if delay:
                await asyncio.sleep(delay)
            round_ = list(servers)
            for server in round_:
                admin = self._admin(server)
                try:
                    self.node = await admin.node_info()
                except NotActiveError as exc:
                    # A passive backup: it names the node that serves its store; try that one
                    # too, unless credentials would go to a host nobody verified (trust.py).
                    errors.append(f"{server.target}: {exc}")
                    if exc.live and all(s.target != exc.live for s in round_):
                        live = _server(exc.live)
                        if not self._metadata or may_receive_credentials(live, self.uri.servers,
                                                                         verified=self._topology_verified):
                            round_.append(live)
                    continue
                except ConnectionFailedError as exc:
                    errors.append(f"{server.target}: {exc}")
                    continue
                self.admin = admin
                self._watch = asyncio.create_task(self._watch_topology(self._node(server)))
                if self.uri.warm_backup:
                    self._warm_next(server)
                return
        await self._close_channels()
        tried = "; ".join(errors[-len(round_):])
        raise ConnectionFailedError(f"cannot reach a meshmq router ({tried})")

    async def _watch_topology(self, node: _Node) -> None:
        """Keep `topology` current from a node's pushes.

        When that node goes away, the last known topology stays in use and the
        watch moves to another member of it, after retryInterval (growing by
        retryIntervalMultiplier up to maxRetryInterval).
        """
        opts = self.uri.options
        delay = opts.retryInterval / 1000
        while True:
            rebalance: int | None = None  # this node's count of rebalance requests, from its first push
            try:
                async for snapshot in node.management.WatchTopology(mgpb.WatchTopologyRequest(), metadata=self._metadata):
                    self._learn(snapshot)
                    self._warn_if_unverified()
                    if rebalance is not None and snapshot.rebalance > rebalance:
                        self._rebalance()
                    rebalance = snapshot.rebalance
                    self._topology_changed.set()
                    delay = opts.retryInterval / 1000
            except grpc.RpcError as exc:
                if exc.code() == grpc.StatusCode.CANCELLED:
                    return
                log.info("topology updates from %s stopped: %s", node.server.target, exc.code().name)
            # The watch carries the credentials too: it moves only to a node that may have them.
            # (A backup the topology named comes after the members: it serves once it took over.)
            known = [*self.topology, *(b for b in self._backup_of.values() if b not in self.topology)]
            others = [
                s for s in known
                if s.target != node.server.target
                and may_receive_credentials(s, self.uri.servers, verified=self._topology_verified)
            ] or list(self.uri.servers)
            if not others:
                return
            await asyncio.sleep(delay)
            delay = min(delay * opts.retryIntervalMultiplier, opts.maxRetryInterval / 1000)
            node = self._node(others[0])

    def _learn(self, snapshot: mgpb.Topology) -> None:
        self.topology = [_server(m.connector) for m in snapshot.members]
        self._connector_of = {m.node_id: _server(m.connector) for m in snapshot.members if m.node_id}
        for m in snapshot.members:
            if m.node_id and m.backup_connector:
                self._backup_of[m.node_id] = _server(m.backup_connector)

    def _rebalance(self) -> None:
        """A node joined and the node this connection watches asks its clients to spread
        again (rebalance-cluster-clients): move sessions per rebalance.py, each at its
        next quiet moment (Session.request_move). Followed only by connections that balance
        over the topology (useTopologyForLoadBalancing; failover: URIs' updateClusterClients)."""
        if not self.uri.options.useTopologyForLoadBalancing:
            return
        sessions = [s for s in self._sessions if not s._closed and s._failure is None]
        nodes = self.candidates()
        if not sessions or not nodes:
            return
        by_target = {n.target: n for n in nodes}
        placement = [s.server.target for s in sessions]
        plan = rebalance_plan(placement, list(by_target), self._rng)
        self.rebalances += 1
        moving = [(s, by_target[t]) for s, t, now in zip(sessions, plan, placement) if t != now]
        log.info("rebalance: %d of %d sessions move (%s)", len(moving), len(sessions),
                 ", ".join(f"{s.server.target}->{t.target}" for s, t in moving) or "none")
        for s, target in moving:
            s.request_move(target)

    def _warm_next(self, connected: Server) -> None:
        """failover:(...)?backup=true: keep a channel to the next listed node connected,
        so a failover there does not wait for a TCP (and TLS) handshake."""
        listed = list(self.uri.servers)
        if connected in listed and len(listed) > 1:
            spare = listed[(listed.index(connected) + 1) % len(listed)]
            self._node(spare).channel.get_state(try_to_connect=True)

    def _candidates(self):
        return session_candidates(
            self.topology,
            self.uri.servers,
            use_topology=self.uri.options.useTopologyForLoadBalancing,
            verified=self._topology_verified,
        )

    def candidates(self) -> list[Server]:
        """The servers the next session may go to."""
        return list(self._candidates().servers)

    def _warn_if_unverified(self) -> None:
        withheld = self._candidates().withheld
        if withheld and not self._warned_unverified:
            self._warned_unverified = True
            log.warning(
                "topology-based load balancing is unauthenticated without TLS: the cluster reported %s, which "
                "nothing proves to be a cluster member, so sessions (and the password of user %r) go only to the "
                "hosts named in the URI (%s). To balance over the whole cluster, connect with sslEnabled=true and "
                "a trustStorePath holding the cluster's CA (each node then proves its announced host name), "
                "or list every node in the URI",
                ", ".join(s.target for s in withheld),
                self.uri.options.username,
                ", ".join(s.target for s in self.uri.servers),
            )

    async def session(self, *, transacted: bool = False) -> Session:
        """A new session on the node the load-balancing policy picks.

        If that node cannot be reached (down, or it failed the TLS handshake),
        the next candidates are tried in order, each once, as Artemis's
        ServerLocator does; other errors (e.g. a refused login) are raised at once.
        """
        servers = self.candidates()
        if not servers:
            raise ConnectionFailedError("no meshmq node to open a session on")
        first = self.policy.select(len(servers))
        errors = []
        for i in range(len(servers)):
            server = servers[(first + i) % len(servers)]
            s = Session(self._session_host, server, transacted)
            try:
                await s._open()
            except ConnectionFailedError as exc:
                await s.close()
                # Once per node at WARNING: a node that keeps failing (e.g. its certificate is not
                # from the trusted CA) would otherwise log at every other session.
                level = logging.INFO if server.target in self._warned_unreachable else logging.WARNING
                self._warned_unreachable.add(server.target)
                more = ", trying the next node" if i + 1 < len(servers) else ""
                log.log(level, "cannot open a session on %s%s: %s", server.target, more, exc)
                errors.append(f"{server.target}: {exc}")
                continue
            except Exception:
                await s.close()
                raise
            self._sessions.append(s)
            return s
        raise ConnectionFailedError(f"cannot open a session on any node ({'; '.join(errors)})")

    async def create_temporary_queue(self) -> TemporaryQueue:
        """A new temporary queue of this connection (JMS createTemporaryQueue):
        it lives until its `delete()` or until this connection closes; anyone
        may send to it by its name, and any session of this connection, on any
        node, may consume from it (temporary_queue.py)."""
        async with self._anchor_lock:
            if self._anchor is None or not self._anchor.holds_open():
                self._anchor = await self.session()
        tq = TemporaryQueue(uuid.uuid4().hex, self)
        self._temporary_queues[tq.name] = tq
        try:
            await self._anchor._hold_temporary_queue(tq)
        except BaseException:
            self._temporary_queues.pop(tq.name, None)
            raise
        return tq

    def forget_temporary_queue(self, name: str) -> None:
        self._temporary_queues.pop(name, None)

    async def wait_for_topology(self, size: int, timeout: float = 10.0) -> list[Server]:
        """Wait until the pushed topology has `size` members (tests and tools)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while len(self.topology) != size:
            self._topology_changed.clear()
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise ConnectionFailedError(f"topology has {len(self.topology)} members, expected {size}")
            try:
                await wait_for(self._topology_changed.wait(), remaining)
            except asyncio.TimeoutError:
                pass
        return self.topology

    async def _close_channels(self) -> None:
        for node in self._nodes.values():
            await node.channel.close()
        self._nodes.clear()

    async def close(self) -> None:
        for s in self._sessions:
            await s.close()
        if self._watch is not None:
            self._watch.cancel()
        await self._close_channels()

    async def __aenter__(self) -> Connection:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()


async def connect(uri: str) -> Connection:
    """Connect to the router(s) named by `uri` (e.g. `meshmq://127.0.0.1:61616`)."""
    conn = Connection(parse_uri(uri))
    await conn._first_contact()
    return conn


class Admin:
    """Management calls: the same ones the admin gateway uses."""

    def __init__(self, stub: mggrpc.ManagementStub, metadata, timeout: float) -> None:
        self._stub = stub
        self._md = metadata
        self._timeout = timeout

    async def _call(self, method, request):
        try:
            return await method(request, metadata=self._md, timeout=self._timeout)
        except grpc.RpcError as exc:
            raise from_rpc_error(exc) from None

    async def node_info(self) -> mgpb.NodeInfo:
        return await self._call(self._stub.GetNodeInfo, mgpb.GetNodeInfoRequest())

    async def list_addresses(self) -> list[mgpb.AddressInfo]:
        return list((await self._call(self._stub.ListAddresses, mgpb.ListAddressesRequest())).addresses)

    async def list_queues(self, address: str = "") -> list[mgpb.QueueInfo]:
        return list((await self._call(self._stub.ListQueues, mgpb.ListQueuesRequest(address=address))).queues)

    async def cluster_state(self) -> mgpb.ClusterState:
        """This node's cluster bridges and the remote bindings it knows."""
        return await self._call(self._stub.GetClusterState, mgpb.GetClusterStateRequest())

    async def queue(self, name: str) -> mgpb.QueueInfo | None:
        return next((q for q in await self.list_queues() if q.name == name), None)

    async def list_consumers(self, queue: str = "") -> list[mgpb.ConsumerInfo]:
        return list((await self._call(self._stub.ListConsumers, mgpb.ListConsumersRequest(queue=queue))).consumers)

    async def list_connections(self) -> list[mgpb.ConnectionInfo]:
        """The node's client connections, each with its sessions, producers and consumers."""
        return list((await self._call(self._stub.ListConnections, mgpb.ListConnectionsRequest())).connections)

    async def close_connection(self, connection_id: str) -> int:
        """End every session of one connection (the client sees it fail); how many sessions."""
        resp = await self._call(self._stub.CloseConnection, mgpb.CloseConnectionRequest(connection_id=connection_id))
        return resp.sessions_closed

    async def send_message(self, message: mpb.Message) -> mgpb.SendMessageResponse:
        """Send one message as this connection's user (an operator's test
        message): its id and the queues that stored it, once stored."""
        return await self._call(self._stub.SendMessage, mgpb.SendMessageRequest(message=message))

    async def address_settings(self, address: str) -> mgpb.AddressSettingsInfo:
        """The address-settings in force for `address`, each with the match it came from."""
        return await self._call(self._stub.GetAddressSettings, mgpb.GetAddressSettingsRequest(address=address))

    async def link_configurations(self) -> list[mgpb.LinkConfiguration]:
        """The node's cluster connections, network connectors and tree connector as configured."""
        resp = await self._call(self._stub.ListLinkConfigurations, mgpb.ListLinkConfigurationsRequest())
        return list(resp.links)

    async def create_queue(
        self, name: str, *, address: str = "", routing_type: str = "anycast", filter: str = "", durable: bool = True,
        last_value_key: str | None = None, non_destructive: bool | None = None, exclusive: bool | None = None,
        group_rebalance: bool | None = None, group_rebalance_pause_dispatch: bool | None = None,
        group_buckets: int | None = None, group_first_key: str | None = None,
    ) -> mgpb.QueueInfo:
        """Create a queue. `last_value_key`, `non_destructive`, `exclusive` and
        the `group_*` ones (message groups) are Artemis's queue attributes
        (docs/broker.md); None takes the address settings' default
        (default-last-value-key, default-non-destructive, default-exclusive-queue,
        default-group-rebalance, default-group-rebalance-pause-dispatch,
        default-group-buckets, default-group-first-key)."""
        if routing_type not in _ROUTING:
            raise ValueError(f"routing_type must be 'anycast' or 'multicast', got {routing_type!r}")
        req = mgpb.CreateQueueRequest(
            name=name, address=address or name, routing_type=_ROUTING[routing_type], filter=filter, durable=durable,
            last_value_key=last_value_key, non_destructive=non_destructive, exclusive=exclusive,
            group_rebalance=group_rebalance, group_rebalance_pause_dispatch=group_rebalance_pause_dispatch,
            group_buckets=group_buckets, group_first_key=group_first_key,
        )
        return await self._call(self._stub.CreateQueue, req)

    async def delete_queue(self, name: str, *, force: bool = False) -> int:
        resp = await self._call(self._stub.DeleteQueue, mgpb.DeleteQueueRequest(name=name, force=force))
        return resp.messages_removed

    async def purge_queue(self, name: str) -> int:
        return (await self._call(self._stub.PurgeQueue, mgpb.PurgeQueueRequest(name=name))).messages_removed

    async def create_address(self, name: str, *, routing_types: Sequence[str] = ("anycast",)) -> mgpb.AddressInfo:
        """Create an address, or return it when it exists with these routing types."""
        for rt in routing_types:
            if rt not in _ROUTING:
                raise ValueError(f"routing types must be 'anycast' or 'multicast', got {rt!r}")
        req = mgpb.CreateAddressRequest(name=name, routing_types=[_ROUTING[rt] for rt in routing_types])
        return await self._call(self._stub.CreateAddress, req)

    async def delete_address(self, name: str, *, force: bool = False) -> int:
        """Delete an address (with `force`, its queues and their messages too); returns the messages removed."""
        resp = await self._call(self._stub.DeleteAddress, mgpb.DeleteAddressRequest(name=name, force=force))
        return resp.messages_removed

    async def browse(self, queue: str, *, offset: int = 0, limit: int = 100, filter: str = "",
                     body_preview_bytes: int = 256) -> mgpb.BrowseMessagesResponse:
        """A page of `queue`'s messages in delivery order, without consuming them."""
        req = mgpb.BrowseMessagesRequest(queue=queue, offset=offset, limit=limit, filter=filter,
                                         body_preview_bytes=body_preview_bytes)
        return await self._call(self._stub.BrowseMessages, req)

    async def browse_queue(self, queue: str, *, filter: str = "", page_size: int = 0
                           ) -> AsyncGenerator[mgpb.BrowsePage, None]:
        """Pages of all of `queue`'s messages a consumer would meet, in that order,
        with whole bodies, read as the caller iterates (session.create_browser
        wraps it). No deadline: the pass lasts as long as the caller takes;
        closing the iterator ends it on the router."""
        call = self._stub.BrowseQueue(mgpb.BrowseQueueRequest(queue=queue, filter=filter, page_size=page_size),
                                      metadata=self._md)
        try:
            async for page in call:
                yield page
        except grpc.RpcError as exc:
            raise from_rpc_error(exc) from None
        finally:
            call.cancel()

    async def move_messages(self, queue: str, to_queue: str, *, filter: str = "", limit: int = 0,
                            on_progress: Callable[[mgpb.OperationProgress], None] | None = None
                            ) -> mgpb.OperationProgress:
        """Move `queue`'s waiting messages (those `filter` selects, at most
        `limit`; 0 = all) to `to_queue`. Returns the final progress;
        `on_progress` sees each one as it comes."""
        req = mgpb.MoveMessagesRequest(queue=queue, to_queue=to_queue, filter=filter, limit=limit)
        return await self._stream(self._stub.MoveMessages, req, on_progress)

    async def retry_messages(self, queue: str, *, filter: str = "", message_id: int = 0,
                             on_progress: Callable[[mgpb.OperationProgress], None] | None = None
                             ) -> mgpb.OperationProgress:
        """Send a dead-letter (or expiry) queue's messages (those `filter`
        selects, or only `message_id`) back to the queues they died on, or, where
        such a queue is gone, to their original address. Returns the final
        progress with every message's outcome (`outcomes`, in the order they
        were taken; `on_progress` sees each batch's); `kept` were left where
        they were, each outcome saying why. Raises MESSAGE_NOT_FOUND when
        `queue` holds no message `message_id`."""
        req = mgpb.RetryMessagesRequest(queue=queue, filter=filter, message_id=message_id)
        return await self._stream(self._stub.RetryMessages, req, on_progress)

    async def set_max_disk_usage(self, percent: int) -> mgpb.NodeInfo:
        """Change the node's max-disk-usage (until it restarts; -1 = no check): the node
        scans its disk at once and answers with its alarm state."""
        return await self._call(self._stub.SetMaxDiskUsage, mgpb.SetMaxDiskUsageRequest(max_disk_usage=percent))

    async def pause_queue(self, name: str) -> mgpb.QueueInfo:
        return await self._call(self._stub.PauseQueue, mgpb.PauseQueueRequest(name=name))

    async def resume_queue(self, name: str) -> mgpb.QueueInfo:
        return await self._call(self._stub.ResumeQueue, mgpb.PauseQueueRequest(name=name))

    async def reset_all_groups(self, queue: str) -> int:
        """Unpin every message group of `queue` (Artemis's resetAllGroups): the
        next message of each group picks a consumer afresh. Returns how many were pinned."""
        return (await self._call(self._stub.ResetAllGroups, mgpb.ResetAllGroupsRequest(queue=queue))).groups_reset

    async def _stream(self, method, request, on_progress) -> mgpb.OperationProgress:
        # No deadline: a long operation reports progress for as long as it runs.
        last = mgpb.OperationProgress()
        outcomes = []
        try:
            async for last in method(request, metadata=self._md):
                outcomes.extend(last.outcomes)
                if on_progress is not None:
                    on_progress(last)
        except grpc.RpcError as exc:
            raise from_rpc_error(exc) from None
        final = mgpb.OperationProgress(done=last.done, total=last.total, finished=last.finished, kept=last.kept)
        final.outcomes.extend(outcomes)  # each progress carries its batch's: the final one, all of them
        return final
