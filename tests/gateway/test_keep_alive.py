"""An idle HTTP connection to the gateway: kept open longer than client pools
keep theirs (gateway.keep-alive-timeout), so a client reusing one never has its
request dropped by a server closing it at the same moment ("Server disconnected
without sending a response"); a shorter setting is honoured."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.fixtures.nodes import ServiceProcess, free_port, wait_for
from tests.gateway.conftest import security_yaml

REQUEST = b"GET /healthz HTTP/1.1\r\nHost: gateway\r\n\r\n"


def _config(extra: str = "") -> str:
    # No router behind it: /healthz answers from the gateway alone.
    return f"""
name: gateway
connectors:
  node: 127.0.0.1:{free_port()}
gateway:
  listen: {{host: 127.0.0.1, port: 0}}
  static-connectors: [node]
{extra}
{security_yaml()}
"""


@contextmanager
def _gateway(tmp_path, extra: str = "") -> Iterator[tuple[str, int]]:
    gateway = ServiceProcess(tmp_path, "gateway", "gateway", _config(extra)).start()
    try:
        host, port = gateway.endpoint.removeprefix("http://").rsplit(":", 1)
        yield host, int(port)
    finally:
        gateway.stop()


def _answer(sock: socket.socket) -> bytes:
    """One response on `sock` (headers and a Content-Length body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the gateway closed the connection instead of answering (got {data!r})"
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    while len(body) < length:
        body += sock.recv(65536)
    return head


def _closed_by_peer(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""


def test_an_idle_connection_outlives_a_client_pools_expiry_and_serves_the_next_request(tmp_path):
    """Idle 6 s — past the 5 s that httpx and Node's default agent keep an idle connection,
    and past uvicorn's own default — the connection is still open and answers on the same socket."""
    with _gateway(tmp_path) as (host, port), socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(REQUEST)
        assert _answer(sock).startswith(b"HTTP/1.1 200")
        time.sleep(6)  # the idle time under test, not a wait for something to happen
        assert not _closed_by_peer(sock), "the gateway closed a connection idle for 6 s"
        sock.sendall(REQUEST)
        assert _answer(sock).startswith(b"HTTP/1.1 200")


def test_a_shorter_keep_alive_timeout_closes_an_idle_connection_after_it(tmp_path):
    with _gateway(tmp_path, "  keep-alive-timeout: 1000") as (host, port), \
            socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(REQUEST)
        assert _answer(sock).startswith(b"HTTP/1.1 200")
        answered = time.monotonic()
        wait_for(lambda: _closed_by_peer(sock), 15, "the gateway to close the idle connection")
        assert time.monotonic() - answered >= 0.9


@pytest.mark.parametrize("value", ["0", "-5", "soon"])
def test_a_keep_alive_timeout_that_is_no_positive_number_is_refused_by_name(value):
    from meshmq.config.loader import ConfigError, load_config_text

    with pytest.raises(ConfigError, match="keep-alive-timeout"):
        load_config_text(f"gateway: {{keep-alive-timeout: {value}}}\n")
