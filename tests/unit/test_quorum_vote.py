"""Classic replication's quorum deciders (issue 12): how many votes a
decision needs (Artemis's table), how many lives must hold a lost backup's
copy stale before the live confirms alone, how a vote is counted, and how a
router answers one."""

from __future__ import annotations

import pytest

from meshmq.v1 import cluster_pb2 as cpb
from services.ha_coordinator.quorum_vote import Tally, acks_needed, quorum_size, votes_needed
from services.router.cluster.link_service import answer_vote


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
    assert answer_vote(ask, members, ()) == cpb.VoteReply(vote=False, connector="h:2")
    gone = [member("self", "h:1")]
    assert answer_vote(ask, gone, ()) == cpb.VoteReply(vote=True, connector="")
    assert answer_vote(ask, gone, ("c1",)) == cpb.VoteReply(vote=False, connector="")
    assert answer_vote(cpb.VoteRequest(target_node_id="live", copy_id="c2"), gone, ("c1",)).vote


def test_a_router_votes_for_a_live_asking_to_stay_when_it_sees_it_and_says_where():
    stay = cpb.VoteRequest(target_node_id="live", request_to_stay_active=True)
    assert answer_vote(stay, [member("live", "h:2")], ()) == cpb.VoteReply(vote=True, connector="h:2")
    assert answer_vote(stay, [member("self", "h:1")], ()) == cpb.VoteReply(vote=False, connector="")
