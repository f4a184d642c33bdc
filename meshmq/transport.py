"""How meshmq processes talk gRPC: frame limits, channel and server options,
TLS credentials, listeners, the metadata keys, how servicers are
served (undecodable requests refused cleanly) and the caller checks
(`UserCheck`, `ClusterIdentityCheck`), in one place.

Every channel (client SDK to router, router to journal, anyone to discovery)
and every server (router acceptors, journal, discovery) is built from these,
so both ends of a link agree on frame sizes and keep-alives by construction.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import inspect
import logging
import math
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from pathlib import Path

import grpc
from google.protobuf import message_factory
from google.protobuf.descriptor import ServiceDescriptor

from meshmq.aio import wait_for
from meshmq.security.cluster_proof import CHALLENGE_METHOD, answer_challenge, cluster_key, proof_problem
from meshmq.v1 import identity_pb2 as ipb

# Largest gRPC message a router accepts from a client. Bodies above
# minLargeMessageSize travel in chunks and batches are a fraction of the
# confirmation window, so only a misconfigured or hostile client comes near it;
# it gets RESOURCE_EXHAUSTED on that stream and the node goes on serving.
MAX_CLIENT_FRAME = 16 * 2**20

# Between services (router <-> journal): group-commit batches can be large.
MAX_INTERNAL_FRAME = 256 * 2**20

# Call metadata carrying a client's credentials on every RPC, so sessions and
# management calls are checked the same way.
USERNAME_KEY = "x-meshmq-username"
PASSWORD_KEY = "x-meshmq-password"


_KEEPALIVE = [
    # A peer that vanished without closing (kill -9 of its host, a partition)
    # is noticed within keepalive_time + keepalive_timeout, idle or not: a
    # consumer waiting for messages, a producer held by a BLOCK address.
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_timeout_ms", 5_000),
    # Any ping's deadline (gRPC's default is 60 s): no keep-alive ping goes out while a
    # flow-control (BDP) ping is unanswered, so a peer frozen mid-ping (SIGSTOP, a
    # partition) would otherwise be noticed only after a minute.
    ("grpc.http2.ping_timeout_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
]
# The server's side of the same: accept those pings on a stream that carries
# no data (gRPC's default is one per 5 minutes; more is "too many pings" and
# the connection is closed with GOAWAY, which cut idle sessions after ~30 s).
# Clients ping at most once a second (client/failover.py); half that here, so a
# ping that arrives a little early is no strike (two strikes and gRPC hangs up).
_ACCEPT_KEEPALIVE = [
    ("grpc.http2.min_ping_interval_without_data_ms", 500),  # GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS
]
# Reconnect soon after the peer comes back (gRPC's default backoff grows to 120 s).
RECONNECT_BACKOFF_MS = {
    "grpc.initial_reconnect_backoff_ms": 100,
    "grpc.max_reconnect_backoff_ms": 1_000,
    # Despite its name, gRPC reads this one as the *minimum connect timeout*:
    # the time each connection attempt (TCP and TLS handshakes) is given. At
    # 100 ms a TLS handshake over a 120 ms round trip, or on a loaded host,
    # failed every attempt until the backoff outgrew it. A refused connection
    # still fails at once and is retried after the backoff above.
    "grpc.min_reconnect_backoff_ms": 5_000,
}
_RECONNECT = list(RECONNECT_BACKOFF_MS.items())


def credentials_metadata(username: str, password: str) -> tuple[tuple[str, str], ...]:
    """The call metadata that authenticates a user (empty without a username)."""
    if not username:
        return ()
    return ((USERNAME_KEY, username), (PASSWORD_KEY, password))


def peer_host(peer: str) -> str:
    """The address part of a gRPC peer (``ipv4:10.0.0.7:51234`` -> ``10.0.0.7``,
    ``ipv6:[::1]:5000`` -> ``::1``); other forms (``unix:...``) whole."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv4":
        return rest.rpartition(":")[0] or rest
    if kind == "ipv6":
        host = rest.rpartition(":")[0] if rest.startswith("[") else rest
        return host.strip("[]") or rest
    return peer


def channel_options(
    *,
    max_send: int = MAX_INTERNAL_FRAME,
    max_receive: int = MAX_INTERNAL_FRAME,
    keepalive: list[tuple[str, int]] | None = None,
) -> list[tuple[str, int]]:
    """Options for a channel to a meshmq service (`keepalive` replaces the
    services' own, for a client's clientFailureCheckPeriod)."""
    return [
        ("grpc.max_send_message_length", max_send),
        ("grpc.max_receive_message_length", max_receive),
        *(_KEEPALIVE if keepalive is None else keepalive),
        *_RECONNECT,
    ]


def server_options(*, max_receive: int = MAX_INTERNAL_FRAME, max_send: int = MAX_INTERNAL_FRAME) -> list[tuple[str, int]]:
    """Options for a meshmq gRPC server (a router's acceptors take MAX_CLIENT_FRAME).

    SO_REUSEPORT off (gRPC turns it on): with it a second process binds a port
    already in use without a word and the kernel splits the connections between
    the two (two routers configured on one port would share its clients); off,
    the second one's bind fails and `bind_listener` says which listener."""
    return [
        ("grpc.so_reuseport", 0),
        ("grpc.max_send_message_length", max_send),
        ("grpc.max_receive_message_length", max_receive),
        *_KEEPALIVE,
        *_ACCEPT_KEEPALIVE,
    ]


def _read(path: str | Path | None) -> bytes | None:
    return Path(path).read_bytes() if path else None


def server_credentials(
    cert_path: str | Path, key_path: str | Path, trust_path: str | Path | None = None, need_client_auth: bool = False
) -> grpc.ServerCredentials:
    """Credentials for a listener; with need_client_auth, clients must present a cert signed by trust_path."""
    if need_client_auth and not trust_path:
        raise ValueError("need-client-auth requires trust-path (the CA that signs client certificates)")
    return grpc.ssl_server_credentials(
        [(_read(key_path), _read(cert_path))],
        root_certificates=_read(trust_path),
        require_client_auth=need_client_auth,
    )


def channel_credentials(
    trust_path: str | Path | None = None, cert_path: str | Path | None = None, key_path: str | Path | None = None
) -> grpc.ChannelCredentials:
    """Credentials for a client channel; trust_path None means the system's CA bundle."""
    return grpc.ssl_channel_credentials(
        root_certificates=_read(trust_path), private_key=_read(key_path), certificate_chain=_read(cert_path)
    )


def open_channel(
    target: str, *, credentials: grpc.ChannelCredentials | None = None, options: list[tuple[str, int]] | None = None
) -> grpc.aio.Channel:
    """A channel to a meshmq service: TLS when credentials are given, plain otherwise."""
    options = channel_options() if options is None else options
    if credentials is None:
        return grpc.aio.insecure_channel(target, options=options)
    return grpc.aio.secure_channel(target, credentials, options=options)


def bind_listener(server: grpc.aio.Server, listener, what: str) -> str:
    """Bind `server` to a config Listener (host, port, ssl-*); returns the bound host:port.

    Port 0 picks a free port; the returned endpoint has the real one.
    """
    target = f"{listener.host}:{listener.port}"
    try:
        if listener.ssl_enabled:
            creds = server_credentials(listener.cert_path, listener.key_path, listener.trust_path,
                                       listener.need_client_auth)
            port = server.add_secure_port(target, creds)
        else:
            port = server.add_insecure_port(target)
    except RuntimeError:  # grpcio's "Failed to bind": in use (server_options turns SO_REUSEPORT off), or no such host
        port = 0
    if port == 0:
        raise RuntimeError(f"{what} cannot listen on {target}: the port is in use or the host is not this machine's")
    return f"{listener.host}:{port}"


# --------------------------------------------------------------------------- serving


class _Undecodable:
    """What a request that is not the message it claims to be deserializes to."""

    __slots__ = ("problem",)

    def __init__(self, problem: str) -> None:
        self.problem = problem


class RateLimitedLog:
    """One warning per `period_s` at most, saying how many were not logged:
    a client sending garbage must not be able to flood the log."""

    def __init__(self, logger: logging.Logger, period_s: float = 10.0) -> None:
        self._log = logger
        self._period = period_s
        self._last = -math.inf
        self._suppressed = 0

    def warning(self, message: str, *args) -> None:
        now = time.monotonic()
        if now - self._last < self._period:
            self._suppressed += 1
            return
        more = f" ({self._suppressed} more since the last report)" if self._suppressed else ""
        self._log.warning(message + more, *args)
        self._last, self._suppressed = now, 0


_undecodable_log = RateLimitedLog(logging.getLogger("meshmq.transport"))


def _safe_deserializer(cls):
    def deserialize(data: bytes):
        try:
            return cls.FromString(data)
        except Exception as exc:  # noqa: BLE001 - any failure to decode is the sender's
            return _Undecodable(f"{cls.DESCRIPTOR.name}: {exc}" if str(exc) else cls.DESCRIPTOR.name)

    return deserialize


async def _refuse(context: grpc.aio.ServicerContext, method: str, bad: _Undecodable) -> None:
    from meshmq.errors import BrokerError, Reason, abort_with

    _undecodable_log.warning("undecodable %s request from %s: %s", method, context.peer(), bad.problem)
    await abort_with(context, BrokerError(Reason.INVALID_REQUEST, f"{method}: the request could not be decoded ({bad.problem})"))


def _checked_stream(requests, bad: list[_Undecodable]):
    """The request stream up to the first undecodable request, which ends it
    (as if the client had stopped sending) and is kept in `bad`."""

    async def checked():
        async for req in requests:
            if isinstance(req, _Undecodable):
                bad.append(req)
                return
            yield req

    return checked()


def _wrap(method: str, behaviour, client_streaming: bool, server_streaming: bool):
    """`behaviour` with undecodable requests refused: INVALID_ARGUMENT, reason
    INVALID_REQUEST. (Callers are checked before this, by a CallerCheck or UserCheck
    interceptor: a stranger learns nothing, not even that a request was malformed.)"""
    if not client_streaming and not server_streaming:
        async def unary(request, context):
            if isinstance(request, _Undecodable):
                await _refuse(context, method, request)
            return await behaviour(request, context)

        return unary
    if not client_streaming:
        async def server_stream(request, context):
            if isinstance(request, _Undecodable):
                await _refuse(context, method, request)
            async for response in behaviour(request, context):
                yield response

        return server_stream
    if inspect.isasyncgenfunction(behaviour):
        async def streams(requests, context):
            bad: list[_Undecodable] = []
            async for response in behaviour(_checked_stream(requests, bad), context):
                yield response
            if bad:
                await _refuse(context, method, bad[0])

        return streams

    async def client_stream(requests, context):
        bad: list[_Undecodable] = []
        result = await behaviour(_checked_stream(requests, bad), context)
        if bad:
            await _refuse(context, method, bad[0])
        return result

    return client_stream


# gRPC's handler factory for each (client_streaming, server_streaming).
_HANDLER_FACTORIES = {
    (False, False): grpc.unary_unary_rpc_method_handler,
    (False, True): grpc.unary_stream_rpc_method_handler,
    (True, False): grpc.stream_unary_rpc_method_handler,
    (True, True): grpc.stream_stream_rpc_method_handler,
}


def add_servicer(server: grpc.aio.Server, servicer, service: ServiceDescriptor) -> None:
    """Serve `servicer`'s methods for `service` (a protobuf service descriptor),
    like the generated `add_*Servicer_to_server`, except that a request that
    cannot be decoded is refused with INVALID_ARGUMENT and reason
    INVALID_REQUEST and one rate-limited log line, instead of gRPC's UNKNOWN
    with a traceback per call."""
    factories = _HANDLER_FACTORIES
    handlers = {}
    for m in service.methods:
        request_cls = message_factory.GetMessageClass(m.input_type)
        response_cls = message_factory.GetMessageClass(m.output_type)
        kind = (m.client_streaming, m.server_streaming)
        handlers[m.name] = factories[kind](
            _wrap(f"{service.name}/{m.name}", getattr(servicer, m.name), *kind),
            request_deserializer=_safe_deserializer(request_cls),
            response_serializer=response_cls.SerializeToString,
        )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service.full_name, handlers),))


# --------------------------------------------------------------------------- caller identity


_refusal_log = RateLimitedLog(logging.getLogger("meshmq.transport"))
# How long a refusal on a request stream reads (and drops) what the caller sends (see
# _refuse_unread): until it half-closes, or sends nothing more for REFUSAL_IDLE_S once it
# started, or REFUSAL_READ_WAIT_S in all.
REFUSAL_READ_WAIT_S = 1.0
REFUSAL_IDLE_S = 0.1


class CallerCheck(grpc.aio.ServerInterceptor, abc.ABC):
    """Refuses every call whose caller `admits` rejects, with UNAUTHENTICATED
    (reason UNAUTHENTICATED) and one rate-limited log line, before the method
    runs: the request is not even decoded, so a stranger learns nothing (not
    even that its bytes were malformed). Subclasses say who is admitted and
    what a refused caller lacks. Install with ``grpc.aio.server(interceptors=[check])``.
    """

    service = "this service"
    # Whether `admits` may check a user's password: ~70 ms of scrypt (which
    # releases the GIL), so it runs in a thread — a client trying wrong
    # passwords must not stall the event loop for everyone else. A cluster
    # credential alone is one constant-time compare, done in place.
    checks_passwords = True

    @abc.abstractmethod
    def admits(self, method: str, metadata: Mapping[str, str]) -> bool:
        """Whether the caller of `method` may go on."""

    @abc.abstractmethod
    def needs(self, method: str) -> str:
        """What a refused caller of `method` lacks, for the refusal's message."""

    async def intercept_service(self, continuation, handler_call_details: grpc.HandlerCallDetails):
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        metadata = dict(handler_call_details.invocation_metadata or ())
        if handler is None:
            return handler
        if self.checks_passwords:
            admitted = await asyncio.to_thread(self.admits, method, metadata)
        else:
            admitted = self.admits(method, metadata)
        if admitted:
            return handler
        return _refusing(handler, method, f"{self.service} requires {self.needs(method)}")


class UserCheck(grpc.aio.ServerInterceptor):
    """A router with security enabled: every call carries a configured user's
    username and password. `identify(metadata, source)` names the user or
    returns None; it gets the caller's address (`source`, from the call's
    peer), which only the call's context knows, so the check runs as the first
    step of the call rather than in the interceptor: a throttled caller waits
    there (meshmq/security/login_throttle.py), the request still unread."""

    def __init__(self, identify: Callable[[Mapping[str, str], str], Awaitable[str | None]], *, service: str,
                 own_check: Collection[str] = ()) -> None:
        self._identify = identify
        self.service = service
        # Methods that check their caller themselves (the cluster link takes the cluster credential).
        self._own_check = frozenset(own_check)

    def needs(self, method: str) -> str:
        """What a refused caller lacks, for the refusal's message (as a CallerCheck's)."""
        return "a valid username and password"

    async def intercept_service(self, continuation, handler_call_details: grpc.HandlerCallDetails):
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or method in self._own_check:
            return handler
        metadata = dict(handler_call_details.invocation_metadata or ())

        async def admitted(context: grpc.aio.ServicerContext) -> bool:
            return await self._identify(metadata, peer_host(context.peer())) is not None

        return _checked(handler, method, admitted, f"{self.service} requires {self.needs(method)}")


class ClusterIdentityCheck(CallerCheck):
    """The check of every service the cluster's processes call each other on
    (journal, discovery, HA coordinator, a router's node-to-node methods): a
    proof of the cluster credential (meshmq/security/cluster_proof.py). It
    also answers `ClusterIdentity.Challenge` itself, the one call a caller
    makes before it has a proof.

    `readers` admits other callers on `read_methods` (full gRPC method paths,
    ``/meshmq.v1.Discovery/List``): the discovery service lets a configured
    user list and watch the nodes. Install it on any service's server with
    ``grpc.aio.server(interceptors=[check])``.
    """

    def __init__(self, user: str, password: str | None, *, service: str,
                 readers: Callable[[Mapping[str, str]], bool] | None = None,
                 read_methods: Collection[str] = (), only_methods: Collection[str] | None = None) -> None:
        """`only_methods`: check only these (a router's node-to-node calls), admit
        every other; `password` None admits nobody to them (security on, no cluster password)."""
        self._user = user
        self._password = password
        self._key = cluster_key(user, password) if password is not None else None
        self.service = service
        self._readers = readers
        self.checks_passwords = readers is not None
        self._read_methods = frozenset(read_methods)
        self._only = None if only_methods is None else frozenset(only_methods)

    async def intercept_service(self, continuation, handler_call_details: grpc.HandlerCallDetails):
        if handler_call_details.method == CHALLENGE_METHOD:
            return self._challenge_handler()
        return await super().intercept_service(continuation, handler_call_details)

    def _challenge_handler(self) -> grpc.RpcMethodHandler:
        """Answers a caller's challenge (admitted without a credential: the
        answer is what proves this service to the caller)."""

        async def challenge(request: ipb.ChallengeRequest, context: grpc.aio.ServicerContext) -> ipb.ChallengeReply:
            from meshmq.errors import BrokerError, Reason, abort_with

            if self._key is None:
                await abort_with(context, BrokerError(Reason.UNAUTHENTICATED, f"{self.service} has no cluster-password"))
            return answer_challenge(self._key, request.cluster_user, request.client_nonce)

        return grpc.unary_unary_rpc_method_handler(
            challenge, request_deserializer=ipb.ChallengeRequest.FromString,
            response_serializer=ipb.ChallengeReply.SerializeToString)

    def admits(self, method: str, metadata: Mapping[str, str]) -> bool:
        if self._only is not None and method not in self._only:
            return True
        if self._key is not None and proof_problem(metadata, self._key, self._user) is None:
            return True
        return self._readers is not None and method in self._read_methods and self._readers(metadata)

    def needs(self, method: str) -> str:
        if self._password is None:
            return ("the cluster credential, but has no cluster-password to check it against: with "
                    "security-enabled true it takes no calls from other nodes")
        needs = "the cluster credential (cluster-user / cluster-password)"
        if self._readers is not None and method in self._read_methods:
            needs += " or a user's username and password"
        return needs


def _refusing(handler: grpc.RpcMethodHandler, method: str, message: str) -> grpc.RpcMethodHandler:
    """A handler of the same kind as `handler` that refuses the call unread."""

    async def refuse(request, context: grpc.aio.ServicerContext) -> None:
        await _refuse_unread(request, context, method, message, handler.request_streaming)

    factory = _HANDLER_FACTORIES[(handler.request_streaming, handler.response_streaming)]
    # No request deserializer: bytes from a stranger are not parsed.
    return factory(refuse, request_deserializer=None, response_serializer=handler.response_serializer)


async def _refuse_unread(request, context: grpc.aio.ServicerContext, method: str, message: str,
                         request_streaming: bool) -> None:
    """Refuse a caller with UNAUTHENTICATED, its request unparsed.

    On a request stream it first drops what the caller sends, bytes unparsed,
    until the caller half-closes, goes quiet for REFUSAL_IDLE_S after its first
    message, or REFUSAL_READ_WAIT_S in all: grpcio's asyncio client reports a
    status that lands while one of its writes (a message or the half-close) is
    in flight as ``INTERNAL: Internal error from Core`` instead of ours
    (grpc/grpc#36066). Answering after the first message only was not enough:
    under 20 concurrent refused links, those that had sent a second message or
    not yet half-closed got INTERNAL. Waiting for the half-close alone cost a
    caller that sends its hello and then waits for the answer (a cluster link,
    an announcement) the whole second. A refused caller must see
    ``UNAUTHENTICATED`` with the reason.
    """
    from meshmq.errors import BrokerError, Reason, abort_with

    _refusal_log.warning("refused %s from %s: %s", method, context.peer(), message)
    if request_streaming:
        with contextlib.suppress(Exception):
            await _drain(request)
    await abort_with(context, BrokerError(Reason.UNAUTHENTICATED, f"{method}: {message}"))


def _checked(handler: grpc.RpcMethodHandler, method: str,
             admitted: Callable[[grpc.aio.ServicerContext], Awaitable[bool]], message: str) -> grpc.RpcMethodHandler:
    """`handler` behind `admitted(context)`: the request's bytes are decoded
    (with `handler`'s own deserializer) only once the caller is admitted; a
    refused caller gets `_refuse_unread`."""
    decode = handler.request_deserializer or (lambda raw: raw)
    streaming_in, streaming_out = handler.request_streaming, handler.response_streaming
    behaviour = {(False, False): handler.unary_unary, (False, True): handler.unary_stream,
                 (True, False): handler.stream_unary, (True, True): handler.stream_stream}[(streaming_in,
                                                                                           streaming_out)]

    def request(raw):
        if not streaming_in:
            return decode(raw)

        async def decoded():
            async for item in raw:
                yield decode(item)

        return decoded()

    if inspect.isasyncgenfunction(behaviour):
        async def run(raw, context: grpc.aio.ServicerContext):
            if not await admitted(context):
                await _refuse_unread(raw, context, method, message, streaming_in)
                return
            async for response in behaviour(request(raw), context):
                yield response
    else:
        async def run(raw, context: grpc.aio.ServicerContext):
            if not await admitted(context):
                await _refuse_unread(raw, context, method, message, streaming_in)
                return None
            return await behaviour(request(raw), context)

    factory = _HANDLER_FACTORIES[(streaming_in, streaming_out)]
    return factory(run, request_deserializer=None, response_serializer=handler.response_serializer)


async def _drain(requests) -> None:
    """Read a request stream, dropping every message, until it ends, goes quiet
    for REFUSAL_IDLE_S after its first message, or REFUSAL_READ_WAIT_S passed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + REFUSAL_READ_WAIT_S
    it = aiter(requests)
    started = False
    while (left := deadline - loop.time()) > 0:
        try:
            await wait_for(anext(it), left if not started else min(left, REFUSAL_IDLE_S))
        except (StopAsyncIteration, TimeoutError):
            return
        started = True


async def read_hello(request_iterator, context: grpc.aio.ServicerContext, what: str):
    """The first request of a node-to-node stream (a cluster link, a backup's
    replication stream), which must be its hello: (the iterator for the rest,
    the hello), or None when the caller went away or started otherwise (then
    refused with INVALID_REQUEST, saying that `what` starts with hello)."""
    from meshmq.errors import BrokerError, Reason, abort_with

    it = request_iterator.__aiter__()
    try:
        first = await it.__anext__()
    except StopAsyncIteration:
        return None
    if first.WhichOneof("kind") != "hello":
        await abort_with(context, BrokerError(Reason.INVALID_REQUEST, f"{what} starts with hello"))
        return None
    return it, first.hello
