"""Replication by streamed writes with pluggable quorum on etcd (issue 12):
a primary streams every write to its backup and confirms only what the backup
has; the backup takes over when the primary goes, with every confirmed
message; a primary cut off cannot confirm anything once its backup took over.
Real router processes (each with its own SQLite journal) and a real etcd."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
from contextlib import closing

import pytest

from meshmq.client import connect
from tests.fixtures.nodes import Nodes, eventually, free_port

from .test_shared_store import QUEUE, answers, drain, log_has, node_info, send

pytestmark = pytest.mark.integration

# A short quorum session so that a takeover takes about two seconds.
MANAGER = ("manager: {{properties: {{connect-string: '{etcd}', session-ms: {session}, session-percent: 25, "
           "namespace: {ns}}}}}")


def pair(nodes: Nodes, etcd, ns: str = "t", start_backup: bool = True, session_ms: int = 2000,
         backup_keys: str = "", manager: str = "", journal: str = "") -> tuple:
    """A primary and its backup (started in that order), each on a port picked now;
    `manager` replaces the etcd one (the HA coordinator's tests); `journal`, the
    journal section of both (one line of YAML)."""
    ports = {"primary": free_port(), "backup": free_port()}
    manager = manager or MANAGER.format(etcd=etcd.endpoint, ns=ns, session=session_ms)
    common = f"addresses:\n  {QUEUE}: {{anycast: [{{name: {QUEUE}}}]}}\n" + (journal and journal + "\n")
    primary = nodes.router("primary", extra=(
        f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {ports['primary']}}}\n"
        f"ha-policy:\n  replication:\n    primary: {{{manager}}}\n" + common))
    backup = nodes.router("backup", extra=(
        f"acceptors:\n  - {{name: grpc, host: 127.0.0.1, port: {ports['backup']}}}\n"
        f"connectors: {{primary: '127.0.0.1:{ports['primary']}'}}\n"
        "cluster-connections: {ha: {static-connectors: [primary]}}\n"
        f"ha-policy:\n  replication:\n    backup: {{{manager}{backup_keys}}}\n" + common), start=start_backup)
    return primary, backup


IN_SYNC = "replication: backup is in sync"


def syncs(primary) -> int:
    """How many times a backup became in sync with `primary` (its log spans its restarts)."""
    return primary.log_path.read_text().count(IN_SYNC)


def stored_messages(node) -> int | None:
    """How many messages `node`'s own journal holds — a passive backup's copy too, which
    answers no management call: an ack is in the copy only once the live has stored and
    streamed it (the live's queue count drops before either) — or None while the node's
    writer holds the file."""
    try:
        with closing(sqlite3.connect(f"file:{node.workdir / f'{node.name}-data' / 'journal.db'}?mode=ro",
                                     uri=True, timeout=0.5)) as db:
            return db.execute("SELECT count(*) FROM messages").fetchone()[0]
    except sqlite3.OperationalError:
        return None


async def in_sync(primary, backup, after: int = 0) -> None:
    """Until the backup is in sync for the (after + 1)th time."""
    await eventually(lambda: syncs(primary) > after, 20, "the backup to be in sync")


async def test_kill_9_of_the_primary_the_backup_takes_over_with_every_confirmed_message(nodes, etcd):
    primary, backup = pair(nodes, etcd)
    await send(primary, 0, 100)  # before the backup's copy...
    await in_sync(primary, backup)
    await send(primary, 100, 200)  # ...and streamed after it
    assert not await answers(backup)
    node_id = primary.info["node_id"]
    await asyncio.to_thread(primary.kill9)
    await eventually(lambda: answers(backup), 30, "the backup to take over")
    info = await node_info(backup)
    assert (info.node_id, info.ha_policy) == (node_id, "replication backup")
    assert info.epoch > primary.info["epoch"]
    assert await drain(backup, 300) == list(range(300))
    assert log_has(backup, "taking over from")


async def test_a_frozen_primary_resumed_after_the_takeover_confirms_nothing_and_halts(nodes, etcd):
    primary, backup = pair(nodes, etcd)
    await send(primary, 0, 10)
    await in_sync(primary, backup)
    conn = await connect(primary.url)
    try:
        producer = await (await conn.session()).create_producer(QUEUE)
        os.kill(primary.proc.pid, signal.SIGSTOP)
        try:
            await eventually(lambda: answers(backup), 30, "the backup to take over from the frozen primary")
            late = asyncio.ensure_future(producer.send(b"late", properties={"n": 99}))
            await asyncio.sleep(0.2)
        finally:
            os.kill(primary.proc.pid, signal.SIGCONT)
        with pytest.raises(Exception):
            await asyncio.wait_for(late, 30)  # never confirmed
    finally:
        await conn.close()
    assert await asyncio.to_thread(primary.proc.wait, 30) == 3
    assert await drain(backup, 11) == list(range(10))


async def test_without_its_backup_the_primary_goes_on_alone_and_the_stale_copy_never_serves(nodes, etcd):
    primary, backup = pair(nodes, etcd)
    await send(primary, 0, 10)
    await in_sync(primary, backup)
    await asyncio.to_thread(backup.kill9)
    await send(primary, 10, 10)  # confirmed without a backup: it was unmarked in the quorum first
    await eventually(lambda: log_has(primary, "backup backup lost"), 10, "the primary to notice")
    # The backup restarts and copies the store again; its old copy was never eligible.
    before = syncs(primary)
    await asyncio.to_thread(backup.start)
    await in_sync(primary, backup, after=before)
    # The copy it had is kept aside (max-saved-replicated-journals-size 2), not served.
    assert (nodes.tmp / "backup-data" / "oldreplica.1" / "journal.db").is_file()
    await asyncio.to_thread(primary.kill9)
    await eventually(lambda: answers(backup), 30, "the backup to take over with its fresh copy")
    assert await drain(backup, 20) == list(range(20))


async def test_a_backup_whose_live_is_gone_before_it_had_a_copy_never_serves_its_own_data(nodes, etcd):
    primary, backup = pair(nodes, etcd)
    await send(primary, 0, 10)
    await in_sync(primary, backup)
    await asyncio.to_thread(backup.kill9)
    await send(primary, 10, 10)  # the backup's copy on disk misses these
    await asyncio.to_thread(primary.kill9)
    await asyncio.to_thread(backup.start)  # a new run: it has no copy it may serve
    # The quorum session is 2 s: well past it, the backup still waits for a live to copy.
    await asyncio.sleep(4)
    assert not await answers(backup) and not log_has(backup, "taking over")
    # The primary comes back (its journal is the newest), the backup copies it, and can take over again.
    before = syncs(primary)
    await asyncio.to_thread(primary.start)
    await in_sync(primary, backup, after=before)
    await asyncio.to_thread(primary.kill9)
    await eventually(lambda: answers(backup), 30, "the backup to take over")
    assert await drain(backup, 20) == list(range(20))


async def test_a_spare_backup_copies_the_backup_that_took_over_and_takes_over_in_turn(nodes, etcd):
    """A live with two backups: one copies it, the spare waits (the live takes
    one). When the backup takes over, the spare copies it, and takes over in
    turn when it goes: every confirmed message survives both."""
    primary, backup = pair(nodes, etcd)
    await send(primary, 0, 10)
    await in_sync(primary, backup)
    manager = MANAGER.format(etcd=etcd.endpoint, ns="t", session=2000)
    spare = nodes.router("spare", extra=(
        f"connectors: {{primary: '{primary.endpoint}', backup: '{backup.endpoint}'}}\n"
        "cluster-connections: {ha: {static-connectors: [primary, backup]}}\n"
        f"ha-policy:\n  replication:\n    backup: {{{manager}}}\n"
        f"addresses:\n  {QUEUE}: {{anycast: [{{name: {QUEUE}}}]}}\n"))
    assert not await answers(spare)  # the primary has a backup: it turns the spare away, which waits
    await asyncio.to_thread(primary.kill9)
    await eventually(lambda: answers(backup), 30, "the backup to take over")
    await send(backup, 10, 10)
    await eventually(lambda: log_has(backup, "spare is in sync"), 30, "the spare to copy the backup")
    await send(backup, 20, 10)  # streamed to the spare
    await asyncio.to_thread(backup.kill9)
    await eventually(lambda: answers(spare), 30, "the spare to take over")
    assert await drain(spare, 30) == list(range(30))


async def test_the_stale_primary_fails_back_when_its_backup_allows_it_and_is_its_backup_otherwise(nodes, etcd):
    """The primary killed, its backup serves and confirms more; the primary
    restarted has a stale journal: it copies the store from the backup (whose
    endpoint etcd keeps) and asks it to step down. With allow-failback the
    backup does, waits as a backup again, and the primary serves everything."""
    primary, backup = pair(nodes, etcd, backup_keys=", allow-failback: true")
    await send(primary, 0, 10)
    await in_sync(primary, backup)
    await asyncio.to_thread(primary.kill9)
    await eventually(lambda: answers(backup), 30, "the backup to take over")
    served_at = (await node_info(backup)).epoch
    await send(backup, 10, 10)
    await asyncio.to_thread(primary.start)  # ready once it serves: after the failback
    assert log_has(primary, "failing back") and log_has(backup, "asked for failback: stepping down")
    assert (await node_info(primary)).epoch > served_at
    await eventually(lambda: syncs(primary) >= 2, 30, "the backup to copy the primary again")
    assert not await answers(backup)
    assert await drain(primary, 20) == list(range(20))


async def test_a_stale_primary_whose_backup_does_not_allow_failback_becomes_its_backup(nodes, etcd):
    primary, backup = pair(nodes, etcd)  # allow-failback: false (Artemis's default for pluggable quorum)
    await send(primary, 0, 10)
    await in_sync(primary, backup)
    await asyncio.to_thread(primary.kill9)
    await eventually(lambda: answers(backup), 30, "the backup to take over")
    await send(backup, 10, 10)
    restarted = asyncio.ensure_future(asyncio.to_thread(primary.start))  # it will not serve while the backup does
    await eventually(lambda: log_has(backup, "does not allow failback"), 30, "the primary to ask for its store")
    await send(backup, 20, 10)  # streamed to the primary, now the backup's backup
    await asyncio.to_thread(backup.kill9)
    await restarted  # the primary takes over with its copy: ready at last
    assert await drain(primary, 30) == list(range(30))


async def test_kill_9_of_the_primary_under_load_loses_and_doubles_nothing(nodes, etcd):
    primary, backup = pair(nodes, etcd)
    await in_sync(primary, backup)
    await kill_9_under_load(primary, backup)


async def kill_9_under_load(live, backup) -> None:
    """Three producers with duplicate ids keep what was confirmed while the
    live is killed mid-stream; the backup takes over and they go on there.
    Every confirmed message is drained from the backup, none twice."""
    from .test_shared_store_nemesis import drain_exactly_once, producer

    confirmed: set[str] = set()
    stop = asyncio.Event()
    tasks = [asyncio.create_task(producer(p, [live, backup], confirmed, stop)) for p in range(3)]
    try:
        await eventually(lambda: len(confirmed) >= 500, 30, "500 confirmed sends on the live")
        await asyncio.to_thread(live.kill9)
        await eventually(lambda: answers(backup), 30, "the backup to take over")
        before = len(confirmed)
        await eventually(lambda: len(confirmed) >= before + 300, 30, "300 confirmed sends on the backup")
    finally:
        stop.set()
        retried = await asyncio.wait_for(asyncio.gather(*tasks), 60)
    assert sum(retried) > 0
    await drain_exactly_once([backup], confirmed)


async def test_kill_9_of_the_primary_during_the_backups_copy_keeps_every_message_somewhere(nodes, etcd):
    """Killed while its backup copies the store: the backup serves only if the
    primary had marked it in sync; otherwise the restarted primary serves.
    Either way, every confirmed message is there."""
    primary, backup = pair(nodes, etcd, start_backup=False)
    await send(primary, 0, 3000)
    await asyncio.to_thread(backup.start)
    await eventually(lambda: log_has(primary, "attached; copied the store"), 20, "the copy to start")
    await asyncio.to_thread(primary.kill9)
    # The primary may be killed between marking the backup in sync in etcd and
    # logging it: the log line proves the mark, its absence does not disprove it.
    marked = log_has(primary, IN_SYNC)
    try:
        # Past the 2 s quorum session and the activation, a backup without the mark is still passive.
        await eventually(lambda: answers(backup), 30 if marked else 8, "the backup to take over")
        serving = backup
    except TimeoutError:
        assert not marked, "a backup marked in sync did not take over"
        await asyncio.to_thread(primary.start)
        serving = primary
    assert await drain(serving, 3000) == list(range(3000))


async def test_event_retention_on_the_primary_prunes_the_backups_copy_too(nodes, etcd):
    """The prune is an append like any other: the backup applies the same one,
    so its copy keeps the same events and says where they start."""

    primary, backup = pair(nodes, etcd, journal="journal: {event-retention: 5000, event-retention-scan-period: 200}")
    await in_sync(primary, backup)
    await send(primary, 0, 20)

    def log_of(proc) -> tuple[int, str | None]:
        with sqlite3.connect(f"file:{nodes.tmp / f'{proc.name}-data' / 'journal.db'}?mode=ro", uri=True) as db:
            (n,) = db.execute("SELECT count(*) FROM events").fetchone()
            kept = db.execute("SELECT value FROM node_state WHERE key = 'events_kept_from'").fetchone()
        return n, kept and kept[0]

    assert log_of(backup)[0] == 20  # the 20 ENQUEUED, streamed
    await eventually(lambda: log_of(primary)[0] == 0 and log_of(backup)[0] == 0, 20, "both logs pruned")
    await eventually(lambda: log_of(backup) == log_of(primary), 5, "the same start on both")
    assert log_of(backup)[1] is not None
    assert await drain(primary, 20) == list(range(20))  # the messages themselves stay


async def test_an_etcd_restart_under_load_moves_nothing_and_the_backup_still_takes_over(nodes, etcd):
    """etcd killed with -9 and started again (its data kept) while producers
    send: within the quorum session nobody takes over and the primary keeps
    confirming; afterwards kill -9 of the primary still hands everything confirmed
    to the backup, none twice. A longer session here (5 s) than the other tests:
    an etcd restart must fit in it."""
    from .test_shared_store_nemesis import producer

    primary, backup = pair(nodes, etcd, session_ms=5000)
    await in_sync(primary, backup)
    confirmed: set[str] = set()
    stop = asyncio.Event()
    tasks = [asyncio.create_task(producer(p, [primary, backup], confirmed, stop)) for p in range(2)]
    try:
        await eventually(lambda: len(confirmed) >= 300, 30, "300 confirmed sends")
        await asyncio.to_thread(etcd.restart)  # kill -9, then start on the same ports with its data
        before = len(confirmed)
        await eventually(lambda: len(confirmed) >= before + 300, 30, "300 more confirmed sends on the primary")
        assert primary.proc.poll() is None and not await answers(backup)
        await asyncio.to_thread(primary.kill9)
        await eventually(lambda: answers(backup), 30, "the backup to take over")
        before = len(confirmed)
        await eventually(lambda: len(confirmed) >= before + 100, 30, "100 confirmed sends on the backup")
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 60)
    got: list[str] = []
    async with await connect(backup.url) as conn:
        consumer = await (await conn.session()).create_consumer(QUEUE)
        while (m := await consumer.receive(3)) is not None:
            got.append(m.body.decode())
            consumer.ack(m)
    assert len(got) == len(set(got))
    assert not confirmed - set(got)
