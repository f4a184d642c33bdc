"""Classic replication's quorum deciders (issue 12): how many votes a
decision needs (Artemis's table), how many lives must hold a lost backup's
copy stale before the live confirms alone, how a vote is counted, and how a
router answers one."""

from __future__ import annotations

import pytest

from meshmq.v1 import cluster_pb2 as cpb
from services.ha_coordinator.quorum_vote import (LiveView, Tally, acks_needed, notice_outcome, quorum_size,
                                                 votes_needed)
from services.ha_coordinator.vote_service import answer_vote


@pytest.mark.parametrize(("size", "needed"), [(0, 0), (1, 0), (2, 1), (3, 2), (4, 3), (5, 3), (6, 4), (7, 4),
                                              (8, 5), (9, 5), (10, 6)])
def test_votes_needed_is_artemis_s_table(size, needed):
    # The pairs of Artemis's QuorumVoteServerConnectTest (size, true votes needed).
    assert votes_needed(size) == needed


def test_quorum_size_is_the_configured_one_or_the_lives_named():
    assert quorum_size(-1, 3) == 3
    assert quorum_size(5, 3) == 5
    assert quorum_size(0, 3) == 0


@pytest.mark.parametrize("size", range(1, 12))
def test_a_copy_held_stale_by_acks_needed_lives_can_never_win_a_vote(size):
    """The lives a backup can ask are the other size - 1; after the live's
    notice at most (size - 1) - acks_needed of them may still vote for the
    copy, which must fall short of votes_needed — unless there is no other
    live at all (size 1: the documented single-pair risk)."""
    others = size - 1
    need = acks_needed(size)
    assert 0 <= need <= others
    if size == 1:
        assert need == 0 and votes_needed(1) == 0
    else:
        assert others - need < votes_needed(size)
        # ...and the fewest acknowledgements that do it: one fewer would let a vote be won.
        assert need == 0 or others - (need - 1) >= votes_needed(size)


def reply(node, vote, connector=""):
    return cpb.VoteReply(node_id=node, vote=vote, connector=connector)


def test_a_backup_s_tally_counts_each_node_once():
    tally = Tally(needed=2)
    tally.count(reply("a", True))
    tally.count(reply("a", True))  # the same node through another connector
    assert not tally.decided
    tally.count(reply("b", False))
    assert (tally.positive, tally.decided) == (1, False)
    tally.count(reply("c", True))
    assert (tally.positive, tally.decided) == (2, True)


def test_a_live_asking_to_stay_counts_only_voters_that_see_it_where_it_listens():
    tally = Tally(needed=1, request_to_stay_active=True, own_connectors=frozenset({"127.0.0.1:1"}))
    tally.count(reply("a", True, "127.0.0.1:2"))  # sees the node id served elsewhere: a backup took over
    assert not tally.decided
    tally.count(reply("b", True, "127.0.0.1:1"))
    assert tally.decided


def member(node, connector):
    return cpb.ClusterMember(node_id=node, connector=connector)


def test_a_router_votes_for_a_backup_only_when_it_does_not_see_the_live_and_the_copy_is_not_stale():
    members = [member("self", "h:1"), member("live", "h:2")]
    ask = cpb.VoteRequest(target_node_id="live", copy_id="c1")
    assert answer_vote(ask, members, ()) == cpb.VoteReply(vote=False, connector="h:2", members=members)
    gone = [member("self", "h:1")]
    assert answer_vote(ask, gone, ()) == cpb.VoteReply(vote=True, connector="", members=gone)
    assert answer_vote(ask, gone, ("c1",)) == cpb.VoteReply(vote=False, connector="", members=gone)
    assert answer_vote(cpb.VoteRequest(target_node_id="live", copy_id="c2"), gone, ("c1",)).vote


def test_a_router_votes_for_a_live_asking_to_stay_when_it_sees_it_and_says_where():
    stay = cpb.VoteRequest(target_node_id="live", request_to_stay_active=True)
    assert answer_vote(stay, [member("live", "h:2")], ()).vote
    assert answer_vote(stay, [member("live", "h:2")], ()).connector == "h:2"
    assert answer_vote(stay, [member("self", "h:1")], ()) == cpb.VoteReply(vote=False, connector="",
                                                                            members=[member("self", "h:1")])


# -------------------------------------------------------------- the lives a vote counts (LiveView)

def test_backups_never_count_and_every_live_counts_once_by_node_id():
    """Three live/backup pairs, every node naming the five others (Artemis's symmetric
    example): seen from backup0 after live0 died, the lives are N0, N1 and N2."""
    view = LiveView()
    named = ["l0", "l1", "l2", "b1", "b2"]
    view.saw_live("l0", "N0")  # its live, before it died
    for ep, node in (("l1", "N1"), ("l2", "N2")):
        view.saw_live(ep, node)
        view.saw_members([member("N1", "l1"), member("N2", "l2")])
    view.saw_passive("b1")
    view.saw_passive("b2")
    assert view.lives(named, own=["b0"], node_ids=["N0"]) == 3
    assert votes_needed(3) == 2  # live1 and live2 are enough


def test_an_endpoint_never_heard_from_counts_as_a_live():
    """A backup cut off from everything knows nothing: it must not count fewer
    lives than it names, or it could win with no vote at all."""
    view = LiveView()
    assert view.lives(["l0", "l1", "l2", "b1", "b2"], own=["b0"], node_ids=["N0"]) == 6
    view.saw_live("l0", "N0")
    assert view.lives(["l0", "l1", "l2", "b1", "b2"], own=["b0"], node_ids=["N0"]) == 5


def test_a_node_id_taken_over_by_its_backup_counts_once_and_a_dead_live_still_counts():
    view = LiveView()
    view.saw_live("l0", "N0")
    view.saw_live("l1", "N1")
    view.saw_live("l2", "N2")
    view.saw_passive("b0")
    view.saw_passive("b1")
    view.saw_live("b0", "N0")  # backup0 took live0's place: l0 is dead, b0 serves N0
    assert view.passive == {"b1"}
    assert view.lives(["l0", "l1", "l2", "b0", "b1", "b2"], own=["b2"], node_ids=["N2"]) == 3 + 0  # b2 is own
    # An old master restarted as a passive node (failing back): its node id is still served (at b0).
    view.saw_passive("l0")
    assert view.lives(["l0", "l1", "l2", "b0", "b1"], node_ids=["N1"]) == 3
    # Node ids are remembered: a live gone from every endpoint still counts (Artemis's largest cluster seen).
    view.saw_passive("l2")
    assert view.lives(["l0", "l1", "l2", "b0", "b1"], node_ids=["N1"]) == 3


def test_quorum_size_still_overrides_the_topology():
    view = LiveView()
    assert quorum_size(2, view.lives(["a", "b", "c"])) == 2


# -------------------------------------------------------------- a live that lost its backup (notice_outcome)

@pytest.mark.parametrize("size, acked, voted, elsewhere, outcome", [
    (3, 1, 0, False, True),    # one of the two other lives took the notice: the copy cannot get 2 votes
    (3, 0, 0, False, None),    # nobody answered: confirms wait
    (3, 1, 1, False, True),    # one voted for the copy (a lost round), one took the notice: safe
    (3, 0, 2, False, False),   # both other lives voted for the copy: it won, the live stops
    (3, 0, 1, False, None),    # one vote: not yet a win, not yet safe
    (3, 2, 0, True, False),    # a live sees the node id served by another node: stop
    (5, 2, 1, False, True),
    (5, 1, 3, False, False),
    (2, 0, 1, False, False),   # a single other live voted: that is a quorum of 2
    (2, 1, 0, False, True),
    (1, 0, 0, False, True),    # no other live: confirm alone (the split-brain risk logged at start)
])
def test_a_live_that_lost_its_backup_confirms_stops_or_waits(size, acked, voted, elsewhere, outcome):
    assert notice_outcome(size, acked, voted, elsewhere) is outcome


def test_acks_and_votes_can_never_both_reach_their_thresholds():
    """A live takes the notice or votes for the copy, never both: with every
    split of the other lives, confirming alone and the copy winning exclude each other."""
    for size in range(1, 10):
        others = size - 1
        for acked in range(others + 1):
            for voted in range(others - acked + 1):
                assert not (acked >= acks_needed(size) and voted >= max(1, votes_needed(size)))
