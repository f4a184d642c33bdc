"""How meshmq processes talk gRPC: frame limits, channel and server options,
TLS credentials, listeners and the metadata keys, in one place.

Every channel (client SDK to router, router to journal, anyone to discovery)
and every server (router acceptors, journal, discovery) is built from these,
so both ends of a link agree on frame sizes and keep-alives by construction.
"""

from __future__ import annotations

from pathlib import Path

import grpc

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
