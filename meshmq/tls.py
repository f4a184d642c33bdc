"""Listeners and TLS: binding a gRPC server to a configured listener, and
credentials for every listener and channel, from PEM files."""

from __future__ import annotations

from pathlib import Path

import grpc


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
