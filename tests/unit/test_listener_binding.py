"""A listener never shares its port: gRPC sets SO_REUSEPORT by default, which
lets a second server bind a port in use and split its connections with the
first; meshmq's servers turn it off, so the second one is refused by name."""

from __future__ import annotations

import grpc
import pytest

from meshmq.config.models import Listener
from meshmq.transport import bind_listener, server_options


async def test_a_second_server_on_a_port_in_use_is_refused_naming_the_listener():
    first = grpc.aio.server(options=server_options())
    endpoint = bind_listener(first, Listener(host="127.0.0.1", port=0), "acceptor 'first'")
    await first.start()
    second = grpc.aio.server(options=server_options())
    try:
        port = int(endpoint.rpartition(":")[2])
        with pytest.raises(RuntimeError, match=rf"acceptor 'second' cannot listen on 127.0.0.1:{port}: the port is in use"):
            bind_listener(second, Listener(host="127.0.0.1", port=port), "acceptor 'second'")
    finally:
        await first.stop(None)
        await second.stop(None)


async def test_a_port_freed_by_a_stopped_server_is_bound_again():
    """What a router does when it restarts (or turns active) on the port it had."""
    first = grpc.aio.server(options=server_options())
    endpoint = bind_listener(first, Listener(host="127.0.0.1", port=0), "acceptor 'first'")
    await first.start()
    await first.stop(None)
    again = grpc.aio.server(options=server_options())
    try:
        port = int(endpoint.rpartition(":")[2])
        assert bind_listener(again, Listener(host="127.0.0.1", port=port), "acceptor 'again'") == endpoint
    finally:
        await again.stop(None)
