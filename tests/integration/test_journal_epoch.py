"""The journal's epoch is granted, not taken: Open returns it unchanged,
Activate records a newer one and fences every holder of an older one. On a
real SQLite file and a real PostgreSQL, on the store and over the gRPC
journal service."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import select

from meshmq.errors import FencedError, InvalidRequestError, Reason
from meshmq.journal_client import GrpcJournalClient
from meshmq.v1 import journal_pb2 as jpb
from services.journal import schema as s
from services.journal.store import JournalStore
from tests.integration.test_journal_store import activated, store_url  # noqa: F401 - store_url is a fixture

pytestmark = pytest.mark.integration


def stored(epoch: int, message_id: int) -> jpb.AppendRequest:
    """An append storing one message for queue 1."""
    req = jpb.AppendRequest(request_id=message_id, epoch=epoch)
    req.add_messages.add(message_id=message_id, data=b"m", address="a", size=1, timestamp=1, queue_id=1)
    return req


def message_ids(pages) -> list[int]:
    return [m.message_id for p in pages for m in p.messages]


def stored_epoch(st: JournalStore) -> int:
    with st.engine.connect() as conn:
        return int(conn.execute(select(s.node_state.c.value).where(s.node_state.c.key == "epoch")).scalar())


def test_open_twice_leaves_the_epoch_alone_and_both_openers_can_load(store_url):
    fresh = JournalStore(store_url)
    first = fresh.open("n")
    assert first.epoch == 0  # never activated
    fresh.close()
    live, epoch = activated(store_url)
    assert epoch == 1
    assert live.apply([stored(epoch, 1)])[0].ok
    other = JournalStore(store_url)
    again = other.open("n")
    assert (again.node_id, again.epoch) == (first.node_id, epoch)
    assert JournalStore(store_url).open("n").epoch == epoch
    assert message_ids(live.load_pages()) == message_ids(other.load_pages()) == [1]
    live.close()
    other.close()


def test_a_second_opener_that_does_not_activate_cannot_fence(store_url):
    live, epoch = activated(store_url)
    assert live.apply([stored(epoch, 1)])[0].ok
    reader = JournalStore(store_url)
    reader.open("n")
    assert live.apply([stored(epoch, 2)])[0].ok
    # an epoch it was not granted buys it nothing
    [made_up] = reader.apply([stored(epoch + 1, 3)])
    assert not made_up.ok and made_up.reason == Reason.FENCED.value
    assert live.apply([stored(epoch, 4)])[0].ok
    assert message_ids(reader.load_pages()) == [1, 2, 4]
    assert stored_epoch(reader) == epoch
    live.close()
    reader.close()


def test_activating_a_newer_epoch_fences_the_old_owner(store_url):
    old, old_epoch = activated(store_url)
    assert old.apply([stored(old_epoch, 1)])[0].ok
    new, new_epoch = activated(store_url)
    assert new_epoch == old_epoch + 1
    [refused] = old.apply([stored(old_epoch, 2)])
    assert not refused.ok and refused.reason == Reason.FENCED.value
    assert f"epoch {old_epoch}" in refused.message and f"epoch {new_epoch}" in refused.message
    assert new.apply([stored(new_epoch, 3)])[0].ok
    assert message_ids(new.load_pages()) == [1, 3]
    old.close()
    new.close()


def test_a_fenced_group_commit_is_named_fenced_however_its_answers_arrive(store_url):
    """On PostgreSQL the epoch check is pipelined with the batch: the failure can
    surface as the check's own error or as a later statement's "pipeline aborted",
    depending on when the answers arrive. Either way the fenced owner hears FENCED,
    not STORE_UNAVAILABLE: it halts saying it was fenced, not that its store is down."""
    one, epoch = activated(store_url)
    other = JournalStore(store_url)
    other.open("n")
    owner, fenced, next_id, kept = one, other, 1, []
    for round_ in range(30):
        epoch += 1
        fenced, owner = owner, fenced
        owner.activate(epoch)
        size = 1 + round_ % 3 * 20
        answers = fenced.apply([stored(epoch - 1, next_id + k) for k in range(size)])
        assert [a.reason for a in answers] == [Reason.FENCED.value] * size, answers[0].message
        assert owner.apply([stored(epoch, next_id)])[0].ok
        kept.append(next_id)
        next_id += size
    assert message_ids(owner.load_pages()) == kept  # the owners' writes, none from a fenced one
    one.close()
    other.close()


@pytest.mark.parametrize("behind", [0, 1])
def test_a_grant_that_is_not_newer_is_refused_and_changes_nothing(store_url, behind):
    live, epoch = activated(store_url)
    live.activate(epoch + 1)  # stored epoch 2, so a grant of 1 is older, 2 equal
    epoch += 1
    other = JournalStore(store_url)
    other.open("n")
    with pytest.raises(FencedError, match=f"epoch {epoch - behind} refused: the store is at epoch {epoch}") as err:
        other.activate(epoch - behind)
    assert err.value.reason == Reason.FENCED
    assert stored_epoch(other) == epoch
    assert live.apply([stored(epoch, 1)])[0].ok
    live.close()
    other.close()


def test_concurrent_grants_of_one_epoch_let_exactly_one_take_over(store_url):
    stores = [JournalStore(store_url) for _ in range(4)]
    for st in stores:
        st.open("n")
    start = threading.Barrier(len(stores))
    outcomes: list[object] = []

    def grant(st: JournalStore) -> None:
        start.wait()
        try:
            outcomes.append(st.activate(5))
        except FencedError as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=grant, args=(st,)) for st in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert outcomes.count(5) == 1
    assert len(outcomes) == 4 and all(isinstance(o, FencedError) for o in outcomes if o != 5)
    assert stored_epoch(stores[0]) == 5
    for st in stores:
        st.close()


def test_open_keeps_what_an_owner_is_writing_and_activation_drops_what_a_fenced_one_left(store_url):
    live, epoch = activated(store_url)
    half = jpb.AppendRequest(request_id=1, epoch=epoch)  # a large message still arriving: chunks, no row yet
    half.add_large_chunks.add(message_id=9, seq=0, data=b"part")
    assert live.apply([half])[0].ok
    JournalStore(store_url).open("n")
    assert live.count("large_message_chunks") == 1
    successor, _ = activated(store_url)
    assert successor.count("large_message_chunks") == 0
    live.close()
    successor.close()


def test_activate_before_open_is_refused(tmp_path):
    with pytest.raises(InvalidRequestError, match="open"):
        JournalStore(f"sqlite:///{tmp_path}/journal.db").activate(1)


async def test_the_epoch_over_the_grpc_journal_service(store_url, nodes):
    """A live and a second opener, each through its own journal service on one store."""
    live = GrpcJournalClient(nodes.journal("live-journal", journal_url=store_url).endpoint)
    other = GrpcJournalClient(nodes.journal("other-journal", journal_url=store_url).endpoint)
    try:
        opened = await live.open(jpb.OpenRequest(node_name="live"))
        epoch = (await live.activate(jpb.ActivateRequest(epoch=opened.epoch + 1))).epoch
        assert epoch == opened.epoch + 1
        assert (await live.append(stored(epoch, 1))).ok

        # (a, b) a second Open changes nothing, reads, and fences nobody
        again = await other.open(jpb.OpenRequest(node_name="live"))
        assert (again.node_id, again.epoch) == (opened.node_id, epoch)
        assert message_ids([p async for p in other.load(jpb.LoadRequest())]) == [1]
        assert (await live.append(stored(epoch, 2))).ok

        # (d) a grant that is not newer is refused with FENCED, naming both epochs
        for stale in (epoch, epoch - 1):
            with pytest.raises(FencedError, match=f"epoch {stale} refused: the store is at epoch {epoch}") as err:
                await other.activate(jpb.ActivateRequest(epoch=stale))
            assert err.value.reason == Reason.FENCED
        assert (await live.append(stored(epoch, 3))).ok

        # (c) a newer grant fences the live
        assert (await other.activate(jpb.ActivateRequest(epoch=epoch + 1))).epoch == epoch + 1
        refused = await live.append(stored(epoch, 4))
        assert not refused.ok and refused.reason == Reason.FENCED.value
        assert (await other.append(stored(epoch + 1, 5))).ok
        assert message_ids([p async for p in other.load(jpb.LoadRequest())]) == [1, 2, 3, 5]
    finally:
        await live.close()
        await other.close()


async def test_activate_over_grpc_before_open_is_an_invalid_request(nodes, tmp_path):
    client = GrpcJournalClient(nodes.journal("unopened", journal_url=f"sqlite:///{tmp_path}/j.db").endpoint)
    try:
        with pytest.raises(InvalidRequestError, match="open"):
            await client.activate(jpb.ActivateRequest(epoch=1))
    finally:
        await client.close()
