"""How meshmq processes talk gRPC: frame limits, channel and server options,
TLS credentials, listeners, the metadata keys and how servicers are
served (undecodable requests refused cleanly), in one place.

Every channel (client SDK to router, router to journal, anyone to discovery)
and every server (router acceptors, journal, discovery) is built from these,
so both ends of a link agree on frame sizes and keep-alives by construction.
"""

from __future__ import annotations

import inspect
import logging
import math
import time
from pathlib import Path

import grpc
from google.protobuf import message_factory
from google.protobuf.descriptor import ServiceDescriptor

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
    # is noticed within keepalive_time + keepalive_timeout.
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_timeout_ms", 5_000),
]
_RECONNECT = [
    # Reconnect soon after the peer comes back (gRPC's default backoff grows to 120 s).
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1_000),
]


def credentials_metadata(username: str, password: str) -> tuple[tuple[str, str], ...]:
    """The call metadata that authenticates a user (empty without a username)."""
    if not username:
        return ()
    return ((USERNAME_KEY, username), (PASSWORD_KEY, password))


def channel_options(*, max_send: int = MAX_INTERNAL_FRAME, max_receive: int = MAX_INTERNAL_FRAME) -> list[tuple[str, int]]:
    """Options for a channel to a meshmq service."""
    return [
        ("grpc.max_send_message_length", max_send),
        ("grpc.max_receive_message_length", max_receive),
        *_KEEPALIVE,
        *_RECONNECT,
    ]


def server_options(*, max_receive: int = MAX_INTERNAL_FRAME, max_send: int = MAX_INTERNAL_FRAME) -> list[tuple[str, int]]:
    """Options for a meshmq gRPC server (a router's acceptors take MAX_CLIENT_FRAME)."""
    return [
        ("grpc.max_send_message_length", max_send),
        ("grpc.max_receive_message_length", max_receive),
        *_KEEPALIVE,
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
    if listener.ssl_enabled:
        creds = server_credentials(listener.cert_path, listener.key_path, listener.trust_path, listener.need_client_auth)
        port = server.add_secure_port(target, creds)
    else:
        port = server.add_insecure_port(target)
    if port == 0:
        raise RuntimeError(f"{what} cannot listen on {target}")
    return f"{listener.host}:{port}"


# --------------------------------------------------------------------------- serving


class _Undecodable:
    """What a request that is not the message it claims to be deserializes to."""

    __slots__ = ("problem",)

    def __init__(self, problem: str) -> None:
        self.problem = problem


class _RateLimitedLog:
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


_undecodable_log = _RateLimitedLog(logging.getLogger("meshmq.transport"))


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
    """`behaviour` with undecodable requests refused: INVALID_ARGUMENT, reason INVALID_REQUEST."""
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


def add_servicer(server: grpc.aio.Server, servicer, service: ServiceDescriptor) -> None:
    """Serve `servicer`'s methods for `service` (a protobuf service descriptor),
    like the generated `add_*Servicer_to_server`, except that a request that
    cannot be decoded is refused with INVALID_ARGUMENT and reason
    INVALID_REQUEST and one rate-limited log line, instead of gRPC's UNKNOWN
    with a traceback per call."""
    factories = {
        (False, False): grpc.unary_unary_rpc_method_handler,
        (False, True): grpc.unary_stream_rpc_method_handler,
        (True, False): grpc.stream_unary_rpc_method_handler,
        (True, True): grpc.stream_stream_rpc_method_handler,
    }
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
