"""Connecting to a router, and its management calls."""

from __future__ import annotations

import grpc

from meshmq.errors import ConnectionFailedError, MeshMQError, from_rpc_error
from meshmq.journal_client import channel_options
from meshmq.limits import MAX_CLIENT_FRAME
from meshmq.tls import channel_credentials
from meshmq.v1 import broker_pb2_grpc as bgrpc
from meshmq.v1 import management_pb2 as mgpb
from meshmq.v1 import management_pb2_grpc as mggrpc
from meshmq.v1 import messages_pb2 as mpb

from .session import Session
from .uri import ParsedURI, parse_uri

_ROUTING = {"anycast": mpb.ANYCAST, "multicast": mpb.MULTICAST}
_OPTIONS = channel_options(max_send=MAX_CLIENT_FRAME)


class Connection:
    """A channel to one router; sessions and management calls share it."""

    def __init__(self, parsed: ParsedURI) -> None:
        self.uri = parsed
        opts = parsed.options
        if opts.sslEnabled:
            creds = channel_credentials(opts.trustStorePath or None, opts.keyStorePath or None, opts.keyPath or None)
            self._channel = grpc.aio.secure_channel(parsed.target, creds, options=_OPTIONS)
        else:
            self._channel = grpc.aio.insecure_channel(parsed.target, options=_OPTIONS)
        md = []
        if opts.username:
            md += [("x-meshmq-username", opts.username), ("x-meshmq-password", opts.password)]
        self._metadata = tuple(md)
        self._broker = bgrpc.BrokerStub(self._channel)
        self.admin = Admin(mggrpc.ManagementStub(self._channel), self._metadata, opts.callTimeout / 1000)
        self._sessions: list[Session] = []

    async def _check(self) -> None:
        try:
            self.node = await self.admin.node_info()
        except ConnectionFailedError as exc:
            await self._channel.close()
            raise ConnectionFailedError(f"cannot reach a meshmq router at {self.uri.target}: {exc}") from None
        except MeshMQError:
            await self._channel.close()
            raise

    async def session(self, *, transacted: bool = False) -> Session:
        s = Session(self._broker, self._metadata, self.uri.options, transacted)
        await s._open()
        self._sessions.append(s)
        return s

    async def close(self) -> None:
        for s in self._sessions:
            await s.close()
        await self._channel.close()

    async def __aenter__(self) -> Connection:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()


async def connect(uri: str) -> Connection:
    """Connect to the router named by `uri` (e.g. `meshmq://127.0.0.1:61616`)."""
    conn = Connection(parse_uri(uri))
    await conn._check()
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
