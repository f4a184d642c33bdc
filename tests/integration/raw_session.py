"""A client session stream spoken frame by frame, as a client that is not the
SDK would speak it: the tests of docs/protocol.md's sequences and of the
refusals of meaningless frames write SessionRequest frames (or raw bytes)
and read each answer with a deadline."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from meshmq.aio import wait_for
from meshmq.v1 import broker_pb2 as bpb

# Long enough for a loaded machine.
ANSWER_S = 5
# How long "nothing more comes" is watched for (a deadline, not a pause).
QUIET_S = 0.3


class Raw:
    """One session stream; requests are SessionRequest messages or raw bytes."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        def serialize(req) -> bytes:
            return req if isinstance(req, bytes) else req.SerializeToString()

        self.call = channel.stream_stream("/meshmq.v1.Broker/Session", request_serializer=serialize,
                                          response_deserializer=bpb.SessionResponse.FromString)()
        # One reader for the whole call: a cancelled read() would cancel the call itself.
        self.frames: asyncio.Queue = asyncio.Queue()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            while (resp := await self.call.read()) is not grpc.aio.EOF:
                self.frames.put_nowait(resp)
        except grpc.aio.AioRpcError:
            pass  # the call's status says how it ended
        self.frames.put_nowait(grpc.aio.EOF)

    async def send(self, **kind) -> None:
        await self.call.write(bpb.SessionRequest(**kind))

    async def read(self):
        """The next frame, or EOF once the call ended."""
        return await wait_for(self.frames.get(), ANSWER_S)

    async def next(self) -> bpb.SessionResponse:
        resp = await self.read()
        assert resp is not grpc.aio.EOF, "the router ended the session"
        return resp

    async def expect(self, kind: str):
        resp = await self.next()
        assert resp.WhichOneof("kind") == kind, resp
        return getattr(resp, kind)

    async def quiet(self) -> None:
        """Nothing arrives within QUIET_S."""
        with pytest.raises(asyncio.TimeoutError):
            resp = await wait_for(self.frames.get(), QUIET_S)
            pytest.fail(f"unexpected frame: {resp}")

    async def refused(self, **kind) -> bpb.SessionError:
        """Send one frame; its answer must be an INVALID_REQUEST SessionError."""
        await self.send(**kind)
        error = await self.expect("error")
        assert (error.reason, error.fatal) == ("INVALID_REQUEST", False), error
        return error
