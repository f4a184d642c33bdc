"""The journal's writer process: it lives and dies with its owner, and its
death stops the node without losing a confirmed message."""

from __future__ import annotations

import io
import os
import signal

import psutil
import pytest

from meshmq.client import connect
from meshmq.errors import MeshMQError
from services.journal.writer_process import read_message, write_message
from tests.fixtures.nodes import eventually, wait_for

pytestmark = pytest.mark.integration


def writer_of(pid: int) -> psutil.Process:
    """The journal writer process started by the process `pid`."""

    def find():
        for child in psutil.Process(pid).children():
            if "services.journal.writer_process" in " ".join(child.cmdline()):
                return child
        return None

    return wait_for(find, 10, f"the journal writer of {pid}")


def gone(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def drain(node, queue: str) -> list[bytes]:
    """Every body waiting on `queue`, in order, acknowledged."""
    async with await connect(node.url) as conn:
        c = await (await conn.session()).create_consumer(queue)
        got = []
        while (m := await c.receive(2)) is not None:
            got.append(m.body)
            m.ack()
        return got


def test_frames_round_trip_and_a_cut_frame_is_an_error():
    buf = io.BytesIO()
    write_message(buf, [b"one", b"", b"x" * 70_000])
    write_message(buf, [])
    buf.seek(0)
    assert read_message(buf) == [b"one", b"", b"x" * 70_000]
    assert read_message(buf) == []
    assert read_message(buf) is None  # clean end of stream
    cut = io.BytesIO()
    write_message(cut, [b"abcdef"])
    with pytest.raises(EOFError, match="inside a frame"):
        read_message(io.BytesIO(cut.getvalue()[:-2]))


async def test_kill9_of_the_router_ends_its_journal_writer(nodes):
    node = nodes.router("writer-owner")
    writer = writer_of(node.proc.pid)
    async with await connect(node.url) as conn:
        p = await (await conn.session()).create_producer("owner.q")
        await p.send(b"kept", routing_type="anycast")
    node.kill9()
    # its pipe closed: the writer finishes what it holds and exits on its own
    await eventually(lambda: gone(writer), 15, "the orphaned journal writer to exit")
    node.start()
    async with await connect(node.url) as conn:
        c = await (await conn.session()).create_consumer("owner.q")
        assert (await c.receive(5)).body == b"kept"


async def test_kill9_of_the_journal_writer_halts_the_router_without_losing_a_confirmed_message(nodes):
    node = nodes.router("writer-victim")
    async with await connect(node.url) as conn:
        p = await (await conn.session()).create_producer("victim.q")
        for i in range(200):
            await p.send_async(b"%d" % i, routing_type="anycast")
        await p.flush()
        writer_of(node.proc.pid).kill()
        with pytest.raises(MeshMQError):
            await p.send(b"never confirmed", routing_type="anycast")
    assert node.proc.wait(30) == 3
    log = node.log_tail()
    assert "journal writer process exited" in log and "cannot write its journal" in log
    node.start()
    assert await drain(node, "victim.q") == [b"%d" % i for i in range(200)]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_a_signal_to_the_whole_process_group_stops_the_node_cleanly(nodes, sig):
    """Ctrl-C in a terminal (SIGINT) or a service manager stopping the group
    (SIGTERM) reaches the writer process too: it must stay until the router
    has stored its last batch, so the stop is clean and nothing is lost."""
    node = nodes.router(f"group-{sig.name.lower()}")
    writer = writer_of(node.proc.pid)
    async with await connect(node.url) as conn:
        p = await (await conn.session()).create_producer("group.q")
        for i in range(50):
            await p.send_async(b"%d" % i, routing_type="anycast")
        await p.flush()
    os.killpg(node.proc.pid, sig)
    assert node.proc.wait(30) == 0
    await eventually(lambda: gone(writer), 15, "the journal writer to exit with its router")
    assert "journal writer process exited" not in node.log_tail()
    node.start()
    assert await drain(node, "group.q") == [b"%d" % i for i in range(50)]


def test_a_writer_process_that_cannot_open_its_store_says_why(tmp_path):
    from services.journal.store import StoreError
    from services.journal.writer_process import WriterProcess

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the store's directory should be")
    proc = WriterProcess(f"sqlite:///{blocker}/journal.db", sync=True, node_id="n")
    with pytest.raises(StoreError, match="the journal writer process did not start: error: .*not-a-dir"):
        proc.start()
    assert proc.pid is None  # nothing left running


def _arrive_in_pieces(messages: list[list[bytes]], piece: int) -> tuple[list[list[bytes]], int]:
    from services.journal.writer_process import FrameBuffer, encode_message

    data = b"".join(encode_message(m) for m in messages)
    buf, got = FrameBuffer(), []
    for at in range(0, len(data), piece):
        buf.feed(data[at : at + piece])
        while (m := buf.next_message()) is not None:
            got.append(m)
    return got, buf.pending_bytes


@pytest.mark.parametrize("piece", [1, 3, 7, 4096, 1 << 30])
def test_a_frame_buffer_gives_whole_messages_however_the_bytes_arrive(piece):
    messages = [[b"a" * n, b"", b"z"] for n in range(0, 3000, 250)] + [[]]
    assert _arrive_in_pieces(messages, piece) == (messages, 0)


@pytest.mark.parametrize("piece", [4096, 65_536, 1 << 30])
def test_a_frame_buffer_keeps_whole_messages_when_it_drops_what_was_read(piece):
    messages = [[bytes([i]) * 300_000] for i in range(8)] + [[b"tail"]]  # 2.4 MB: past the drop point
    assert _arrive_in_pieces(messages, piece) == (messages, 0)
