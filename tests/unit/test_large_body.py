"""The large-body transfer (services/router/large_body.py) over an in-memory
store: when a receiver waits for the journal, what a refused commit or a
wrong size looks like, and how a body goes out in windows. Sessions and links
carrying real bodies are tested in tests/integration/test_large_messages.py
and tests/clustering/test_large_messages.py."""

from __future__ import annotations

import asyncio

import pytest

from meshmq.v1 import journal_pb2 as jpb
from meshmq.v1 import messages_pb2 as mpb
from services.router.large_body import COMMIT_EVERY_CHUNKS, READ_CHUNKS, BodyReceiver, send_body, send_bytes
from services.router.message import ServerMessage


class Journal:
    """Keeps committed chunks; counts reads."""

    def __init__(self) -> None:
        self.chunks: dict[int, list[jpb.LargeMessageChunk]] = {}
        self.reads: list[int] = []

    async def read_large(self, req: jpb.ReadLargeMessageRequest) -> list[jpb.LargeMessageChunk]:
        self.reads.append(req.from_seq)
        kept = self.chunks.get(req.message_id, [])
        return [c for c in kept if c.seq >= req.from_seq][:req.max_chunks]


class Store:
    """A BodyStore: a journal batch committed at each `stored()`, or memory."""

    def __init__(self, persistence_enabled: bool = True, refuse: bool = False) -> None:
        self.persistence_enabled = persistence_enabled
        self.journal = Journal()
        self._batch = jpb.AppendRequest()
        self.commits: list[int] = []  # chunks in each commit
        self.refuse = refuse

    def batch(self) -> jpb.AppendRequest:
        return self._batch

    def stored(self) -> asyncio.Future[jpb.AppendResponse]:
        batch, self._batch = self._batch, jpb.AppendRequest()
        self.commits.append(len(batch.add_large_chunks))
        for c in batch.add_large_chunks:
            self.journal.chunks.setdefault(c.message_id, []).append(c)
        done = asyncio.get_running_loop().create_future()
        done.set_result(jpb.AppendResponse(ok=False, reason="FENCED", message="older epoch") if self.refuse
                        else jpb.AppendResponse(ok=True))
        return done


class Written(list):
    """A carrier's write: records (data, last); stops after `stop_after` chunks."""

    def __init__(self, stop_after: int = -1) -> None:
        super().__init__()
        self.stop_after = stop_after

    async def __call__(self, data: bytes, last: bool) -> bool:
        self.append((data, last))
        return len(self) != self.stop_after


def large(message_id: int, body_size: int) -> ServerMessage:
    return ServerMessage.of(mpb.Message(message_id=message_id, address="a", large=True, body_size=body_size), 0)


async def receive(store: Store, msg: ServerMessage, pieces: list[bytes]) -> BodyReceiver:
    body = BodyReceiver(store, msg)
    for i, data in enumerate(pieces):
        assert await body.add(data, i == len(pieces) - 1) is None
    return body


async def test_the_receiver_waits_for_the_journal_every_few_chunks_and_at_the_last():
    store = Store()
    pieces = [bytes([i]) * 10 for i in range(COMMIT_EVERY_CHUNKS * 2 + 1)]
    body = await receive(store, large(7, 10 * len(pieces)), pieces)
    assert store.commits == [COMMIT_EVERY_CHUNKS, COMMIT_EVERY_CHUNKS, 1]
    assert [c.seq for c in store.journal.chunks[7]] == list(range(len(pieces)))
    assert body.wrong_size() is None


async def test_without_persistence_the_body_is_kept_in_memory_and_nothing_is_committed():
    store = Store(persistence_enabled=False)
    msg = large(7, 6)
    await receive(store, msg, [b"abc", b"def"])
    assert msg.chunks == [b"abc", b"def"]
    assert store.commits == []


async def test_a_refused_commit_is_the_journals_answer():
    store = Store(refuse=True)
    body = BodyReceiver(store, large(7, 100))
    refused = None
    for _ in range(COMMIT_EVERY_CHUNKS):
        refused = await body.add(b"x", False)
    assert refused is not None and refused.reason == "FENCED"


async def test_a_body_of_another_size_than_announced_is_named_and_dropped():
    store = Store()
    msg = large(7, 5)
    body = await receive(store, msg, [b"abc"])
    assert body.wrong_size() == "large message body was 3 bytes, header said 5"
    body.drop()
    assert list(store.batch().delete_large_messages) == [7] and msg.chunks is None


@pytest.mark.parametrize("persistence_enabled", [True, False])
async def test_a_body_goes_out_whole_in_windows_with_the_last_chunk_marked(persistence_enabled):
    store = Store(persistence_enabled)
    pieces = [bytes([i]) * 3 for i in range(READ_CHUNKS + 2)]
    msg = large(7, 3 * len(pieces))
    await receive(store, msg, pieces)
    written = Written()
    await send_body(store, msg, written)
    assert written == [(p, i == len(pieces) - 1) for i, p in enumerate(pieces)]
    assert store.journal.reads == ([0, READ_CHUNKS] if persistence_enabled else [])


async def test_sending_stops_when_the_receiver_goes_away():
    store = Store()
    pieces = [b"a", b"b", b"c", b"d", b"e", b"f"]
    msg = large(7, len(pieces))
    await receive(store, msg, pieces)
    written = Written(stop_after=2)
    await send_body(store, msg, written)
    assert written == [(b"a", False), (b"b", False)]
    assert store.journal.reads == [0]  # the next window is never read


async def test_a_body_missing_from_the_store_is_an_error():
    with pytest.raises(RuntimeError, match="missing chunks from 0"):
        await send_body(Store(), large(7, 10), Written())


async def test_an_ordinary_body_goes_out_in_pieces_and_an_empty_one_as_one_last_chunk():
    written = Written()
    await send_bytes(b"abcdefg", 3, written)
    assert written == [(b"abc", False), (b"def", False), (b"g", True)]
    written = Written()
    await send_bytes(b"", 3, written)
    assert written == [(b"", True)]
