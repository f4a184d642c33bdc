"""A server that stops while it still runs a call ends it from the far side:
the client gets UNAVAILABLE ("Cancelling all calls") or, when the server's
RST_STREAM(CANCEL) reaches it before the GOAWAY, CANCELLED. Either is a lost
connection, worth failing over, not an internal error: a backup's passive
acceptors do exactly this as it activates, under a client reattaching to it
(a failover once gave up on such a CANCELLED)."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from grpc.aio import AioRpcError, Metadata

from meshmq.client.failover import warrants_failover
from meshmq.errors import ConnectionFailedError, from_rpc_error


class _Hang(grpc.GenericRpcHandler):
    def __init__(self, entered: asyncio.Event) -> None:
        self._entered = entered

    def service(self, handler_call_details):
        async def hang(request_iterator, context) -> None:
            self._entered.set()
            await asyncio.Event().wait()

        return grpc.stream_stream_rpc_method_handler(hang)


async def test_a_call_ended_by_a_stopping_server_is_a_lost_connection() -> None:
    entered = asyncio.Event()
    server = grpc.aio.server(handlers=[_Hang(entered)])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        call = channel.stream_stream("/meshmq.v1.Broker/Session")()
        await call.write(b"")
        await asyncio.wait_for(entered.wait(), 10)
        await server.stop(0)
        with pytest.raises(grpc.RpcError) as raised:
            await asyncio.wait_for(call.read(), 10)
        assert raised.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
        err = from_rpc_error(raised.value)
        assert isinstance(err, ConnectionFailedError) and warrants_failover(err)
    finally:
        await channel.close()


@pytest.mark.parametrize("code", [grpc.StatusCode.CANCELLED, grpc.StatusCode.UNAVAILABLE,
                                  grpc.StatusCode.DEADLINE_EXCEEDED])
def test_a_call_the_far_side_cancelled_or_lost_warrants_a_failover(code) -> None:
    err = from_rpc_error(AioRpcError(code, Metadata(), Metadata(), details="Cancelling all calls"))
    assert isinstance(err, ConnectionFailedError) and warrants_failover(err)
    assert "Cancelling all calls" in str(err)


def test_an_internal_error_without_a_reason_does_not_warrant_a_failover() -> None:
    err = from_rpc_error(AioRpcError(grpc.StatusCode.INTERNAL, Metadata(), Metadata(), details="boom"))
    assert not warrants_failover(err)
