"""Connecting to a router, and its management calls."""

from __future__ import annotations

import asyncio
import logging

import grpc

from meshmq.errors import ConnectionFailedError, MeshMQError, from_rpc_error
from meshmq.transport import MAX_CLIENT_FRAME, channel_credentials, channel_options, credentials_metadata, open_channel
from meshmq.v1 import broker_pb2_grpc as bgrpc
from meshmq.v1 import management_pb2 as mgpb
from meshmq.v1 import management_pb2_grpc as mggrpc
from meshmq.v1 import messages_pb2 as mpb

from .loadbalance import LoadBalancingPolicy, policy_from_name
from .session import Session
from .uri import ParsedURI, Server, parse_uri

log = logging.getLogger("meshmq.client")

_ROUTING = {"anycast": mpb.ANYCAST, "multicast": mpb.MULTICAST}
_OPTIONS = channel_options(max_send=MAX_CLIENT_FRAME)


def _server(connector: str) -> Server:
    host, _, port = connector.rpartition(":")
    return Server(host.strip("[]"), int(port))


class _Node:
    """A channel to one router and the stubs on it."""

    def __init__(self, server: Server, options) -> None:
        self.server = server
        creds = None
        if options.sslEnabled:
            creds = channel_credentials(options.trustStorePath or None, options.keyStorePath or None, options.keyPath or None)
        self.channel = open_channel(server.target, credentials=creds, options=_OPTIONS)
        self.broker = bgrpc.BrokerStub(self.channel)
        self.management = mggrpc.ManagementStub(self.channel)


class Connection:
    """A client's view of one router or a cluster of them.

    The first contact goes to the URI's servers in order (initialConnectAttempts
    rounds, with the retry backoff). Each new session then goes to the node the
    load-balancing policy picks: over the cluster topology the connected node
    reports (it pushes every change), or over the URI's list when
    useTopologyForLoadBalancing=false.
    """

    def __init__(self, parsed: ParsedURI) -> None:
        self.uri = parsed
        opts = parsed.options
        self.policy: LoadBalancingPolicy = policy_from_name(opts.connectionLoadBalancingPolicyClassName)
        self._metadata = credentials_metadata(opts.username, opts.password)
        self._nodes: dict[str, _Node] = {}
        self._sessions: list[Session] = []
        self.topology: list[Server] = []
        self._watch: asyncio.Task | None = None
        self.admin: Admin | None = None
        self.node: mgpb.NodeInfo | None = None
        self._topology_changed = asyncio.Event()

    def _node(self, server: Server) -> _Node:
        node = self._nodes.get(server.target)
        if node is None:
            node = self._nodes[server.target] = _Node(server, self.uri.options)
        return node

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
        delay = opts.retryInterval / 1000
        errors = []
        for attempt in range(opts.initialConnectAttempts):
            for server in servers:
                admin = Admin(self._node(server).management, self._metadata, opts.callTimeout / 1000)
                try:
                    self.node = await admin.node_info()
                except ConnectionFailedError as exc:
                    errors.append(f"{server.target}: {exc}")
                    continue
                self.admin = admin
                self._watch = asyncio.create_task(self._watch_topology(self._node(server)))
                return
            if attempt + 1 < opts.initialConnectAttempts:
                await asyncio.sleep(delay)
                delay = min(delay * opts.retryIntervalMultiplier, opts.maxRetryInterval / 1000)
        await self._close_channels()
        tried = "; ".join(errors[-len(servers):])
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
            try:
                async for snapshot in node.management.WatchTopology(mgpb.WatchTopologyRequest(), metadata=self._metadata):
                    self.topology = [_server(m.connector) for m in snapshot.members]
                    self._topology_changed.set()
                    delay = opts.retryInterval / 1000
            except grpc.RpcError as exc:
                if exc.code() == grpc.StatusCode.CANCELLED:
                    return
                log.info("topology updates from %s stopped: %s", node.server.target, exc.code().name)
            others = [s for s in self.topology if s.target != node.server.target] or list(self.uri.servers)
            if not others:
                return
            await asyncio.sleep(delay)
            delay = min(delay * opts.retryIntervalMultiplier, opts.maxRetryInterval / 1000)
            node = self._node(others[0])

    def candidates(self) -> list[Server]:
        """The servers the next session may go to."""
        if (self.uri.options.useTopologyForLoadBalancing or not self.uri.servers) and self.topology:
            return self.topology
        return list(self.uri.servers)

    async def session(self, *, transacted: bool = False) -> Session:
        """A new session on the node the load-balancing policy picks."""
        servers = self.candidates()
        server = servers[self.policy.select(len(servers))]
        s = Session(self._node(server).broker, self._metadata, self.uri.options, transacted)
        await s._open()
        self._sessions.append(s)
        return s

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
                await asyncio.wait_for(self._topology_changed.wait(), remaining)
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

    async def queue(self, name: str) -> mgpb.QueueInfo | None:
        return next((q for q in await self.list_queues() if q.name == name), None)

    async def list_consumers(self, queue: str = "") -> list[mgpb.ConsumerInfo]:
        return list((await self._call(self._stub.ListConsumers, mgpb.ListConsumersRequest(queue=queue))).consumers)

    async def create_queue(
        self, name: str, *, address: str = "", routing_type: str = "anycast", filter: str = "", durable: bool = True
    ) -> mgpb.QueueInfo:
        if routing_type not in _ROUTING:
            raise ValueError(f"routing_type must be 'anycast' or 'multicast', got {routing_type!r}")
        req = mgpb.CreateQueueRequest(
            name=name, address=address or name, routing_type=_ROUTING[routing_type], filter=filter, durable=durable
        )
        return await self._call(self._stub.CreateQueue, req)

    async def delete_queue(self, name: str, *, force: bool = False) -> int:
        resp = await self._call(self._stub.DeleteQueue, mgpb.DeleteQueueRequest(name=name, force=force))
        return resp.messages_removed

    async def purge_queue(self, name: str) -> int:
        return (await self._call(self._stub.PurgeQueue, mgpb.PurgeQueueRequest(name=name))).messages_removed
