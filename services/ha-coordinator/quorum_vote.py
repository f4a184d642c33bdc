"""Classic replication's quorum votes (ha-policy replication master/slave).

No lock anywhere: a backup that lost its live asks the cluster's lives
(every router answers `QuorumVotes.Vote` from its own links, with
vote_service.py) whether they still see the live, and takes over only with
enough of them agreeing it is gone —
Artemis's table: of `size` lives, 1 needs no vote, 2 need 1, n >= 3 need
n // 2 + 1. A backup that cannot reach enough lives (it is the one cut off)
stays passive.

**The size counts lives, never backups** (Artemis counts the live servers of
the cluster topology). `LiveView` is what a node knows of them: which node
id it last saw served at each endpoint (every answer carries the answering
node's view of the lives, `members`) and which endpoints answered as passive
backups. The size is the number of distinct live node ids known, plus every
endpoint named in the cluster connection that the node has never heard from
(it might be a live: counting it keeps a node cut off from the cluster from
undercounting). Node ids are remembered once seen, as Artemis remembers the
largest cluster it saw, so a live that died still counts.

Beyond Artemis: when a live loses its backup, the backup's copy misses what
the live confirms from then on. Before confirming anything alone, the live
declares that copy stale (`Cluster.ForgetCopy`) to enough lives that no
majority of votes can be gathered without one of them — `acks_needed` — so a
backup cut off from its live can never take over with a copy that lacks a
confirmed message. A live that already voted for that copy refuses the
notice (a vote cannot be taken back); once as many refuse as a vote needs,
the copy has won and the live stops (`notice_outcome`) — a live frozen while
its backup took over, then resumed, confirms nothing. The pure deciders here
have their own unit tests (tests/unit/test_quorum_vote.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

import grpc

from meshmq.errors import REASON_METADATA_KEY, Reason
from meshmq.v1 import cluster_pb2 as cpb
from meshmq.v1 import cluster_pb2_grpc as cgrpc

log = logging.getLogger("meshmq.ha")


def votes_needed(size: int) -> int:
    """Positive votes a decision needs among `size` lives (Artemis's QuorumVoteServerConnect)."""
    return size // 2 if size <= 2 else size // 2 + 1


def quorum_size(configured: int, lives: int) -> int:
    """quorum-size, or (-1) the lives the topology knows (`LiveView.lives`)."""
    return configured if configured >= 0 else lives


@dataclass
class LiveView:
    """What one node knows of the cluster's lives: every live node id seen
    (remembered, as Artemis remembers the largest cluster it saw), the node id
    last seen served at each endpoint, and the endpoints that answered as
    passive backups. Pure: the I/O below feeds it."""

    node_ids: set[str] = field(default_factory=set)
    served: dict[str, str] = field(default_factory=dict)  # endpoint -> node id served there
    passive: set[str] = field(default_factory=set)

    def saw_live(self, endpoint: str, node_id: str) -> None:
        if node_id:
            self.node_ids.add(node_id)
        if endpoint and node_id:
            self.served[endpoint] = node_id
            self.passive.discard(endpoint)

    def saw_members(self, members: Iterable[cpb.ClusterMember]) -> None:
        for m in members:
            self.saw_live(m.connector, m.node_id)

    def saw_passive(self, endpoint: str) -> None:
        """A backup answers there now (the node id once served there stays counted)."""
        self.served.pop(endpoint, None)
        self.passive.add(endpoint)

    def lives(self, named: Iterable[str], own: Iterable[str] = (), node_ids: Iterable[str] = ()) -> int:
        """The lives a vote counts: every live node id known (and `node_ids`: the
        node's own when it serves, or the live a backup would replace), plus each
        endpoint in `named` never heard from (`own` excepted)."""
        known = set(self.served) | self.passive | set(own)
        unknown = {e for e in named if e not in known}
        return len(self.node_ids | {n for n in node_ids if n}) + len(unknown)


def notice_outcome(size: int, acked: int, voted_for_copy: int, served_elsewhere: bool) -> bool | None:
    """What a live that lost its backup does after a round of stale-copy
    notices among `size` lives: True, confirm alone (enough lives took the
    notice); False, stop (the copy won a vote, or its node id is served
    elsewhere); None, keep its confirms waiting and ask again."""
    if served_elsewhere or (voted_for_copy > 0 and voted_for_copy >= votes_needed(size)):
        return False
    if acked >= acks_needed(size):
        return True
    return None


def acks_needed(size: int) -> int:
    """Lives other than the live that must hold a copy stale before the live
    confirms alone: enough that the other lives without the notice fall short
    of `votes_needed(size)`. With no other life (size 1) none can: a single
    pair's backup takes over whenever it loses its live (Artemis's split-brain risk)."""
    others = max(0, size - 1)
    return max(0, min(others, others - votes_needed(size) + 1))


@dataclass
class Tally:
    """One round's count. A backup's request counts every positive vote; a live
    asking to stay counts a vote only if the voter sees it where it listens
    (`own_connectors`): seen elsewhere, a backup serves its node id now."""

    needed: int
    request_to_stay_active: bool = False
    own_connectors: frozenset[str] = frozenset()
    voters: dict[str, bool] = field(default_factory=dict)  # node id -> counted for
    seen_at: dict[str, str] = field(default_factory=dict)  # node id -> where it sees the target ("" = nowhere)

    def count(self, reply: cpb.VoteReply) -> None:
        if reply.node_id in self.voters:
            return  # one voice per node, however many of its connectors were asked
        positive = reply.vote and (not self.request_to_stay_active or reply.connector in self.own_connectors)
        self.voters[reply.node_id] = positive
        self.seen_at[reply.node_id] = reply.connector

    @property
    def positive(self) -> int:
        return sum(self.voters.values())

    @property
    def decided(self) -> bool:
        return self.positive >= self.needed


def _passive(exc: grpc.aio.AioRpcError) -> bool:
    """The endpoint answered as a passive backup (services/router/passive.py)."""
    return any(k == REASON_METADATA_KEY and v == Reason.NOT_ACTIVE.value for k, v in exc.trailing_metadata() or ())


async def ask(endpoints: Iterable[str], identity, request: cpb.VoteRequest, tally: Tally, wait_s: float,
              view: LiveView | None = None) -> Tally:
    """One round: ask every endpoint at once; ends when the tally is decided,
    every endpoint answered or failed, or after `wait_s` (quorum-vote-wait).
    With a `view`, every answer updates it, and the round waits for every
    answer (the size, hence the votes needed, is known only then)."""
    if tally.decided and view is None:
        return tally
    channels = []

    async def one(endpoint: str) -> None:
        channel = identity.open(endpoint)
        channels.append(channel)
        try:
            metadata = await identity.metadata(channel, endpoint, timeout_s=wait_s)
            reply = await cgrpc.QuorumVotesStub(channel).Vote(request, metadata=metadata, timeout=wait_s)
            if view is not None:
                view.saw_live(endpoint, reply.node_id)
                view.saw_members(reply.members)
            tally.count(reply)
        except grpc.aio.AioRpcError as exc:  # down, passive (NOT_ACTIVE), or refusing the credential
            if view is not None and _passive(exc):
                view.saw_passive(endpoint)
            log.debug("quorum vote: %s did not vote (%s)", endpoint, exc.details())

    tasks = [asyncio.create_task(one(e)) for e in dict.fromkeys(endpoints)]
    try:
        pending = set(tasks)
        deadline = asyncio.get_running_loop().time() + wait_s
        while pending and (view is not None or not tally.decided):
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                break
            _, pending = await asyncio.wait(pending, timeout=left, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for channel in channels:
            await channel.close()
    return tally


async def learn_members(endpoints: Iterable[str], identity, view: LiveView, wait_s: float) -> None:
    """Ask every endpoint for the lives it sees (`QuorumVotes.Members`) and put the answers in `view`."""

    async def one(endpoint: str) -> None:
        channel = identity.open(endpoint)
        try:
            metadata = await identity.metadata(channel, endpoint, timeout_s=wait_s)
            reply = await cgrpc.QuorumVotesStub(channel).Members(cpb.MembersRequest(), metadata=metadata, timeout=wait_s)
            view.saw_live(endpoint, reply.node_id)
            view.saw_members(reply.members)
        except grpc.aio.AioRpcError as exc:
            if _passive(exc):
                view.saw_passive(endpoint)
        finally:
            await channel.close()

    await asyncio.gather(*(one(e) for e in dict.fromkeys(endpoints)))


@dataclass
class Notices:
    """One round of stale-copy notices: who took it, who refused it having
    voted for the copy, and which lives see the target's node id served by
    another node (its name is not the live's own: addresses may differ between
    where a node listens and how others reach it, names do not)."""

    acked: set[str] = field(default_factory=set)
    voted_for_copy: set[str] = field(default_factory=set)
    served_elsewhere: dict[str, str] = field(default_factory=dict)  # voter's node id -> "name at connector"


async def forget_copy(endpoints: Iterable[str], identity, target_node_id: str, copy_id: str, wait_s: float,
                      view: LiveView, own_name: str) -> Notices:
    """Tell every endpoint that `copy_id` of `target_node_id`'s store (served by
    the node named `own_name`) is stale; what they answered within `wait_s`
    (and `view` updated from it)."""
    notices = Notices()
    request = cpb.ForgetCopyRequest(target_node_id=target_node_id, copy_id=copy_id)

    async def one(endpoint: str) -> None:
        channel = identity.open(endpoint)
        try:
            metadata = await identity.metadata(channel, endpoint, timeout_s=wait_s)
            reply = await cgrpc.QuorumVotesStub(channel).ForgetCopy(request, metadata=metadata, timeout=wait_s)
            view.saw_members(reply.members)
            if reply.node_id == target_node_id:
                return  # this node itself, at another of its endpoints
            view.saw_live(endpoint, reply.node_id)
            (notices.voted_for_copy if reply.voted_for_copy else notices.acked).add(reply.node_id)
            for m in reply.members:
                if m.node_id == target_node_id and m.node_name != own_name:
                    notices.served_elsewhere[reply.node_id] = f"{m.node_name} at {m.connector}"
        except grpc.aio.AioRpcError as exc:
            if _passive(exc):
                view.saw_passive(endpoint)
            log.debug("quorum vote: %s did not take the stale-copy notice (%s)", endpoint, exc.details())
        finally:
            await channel.close()

    await asyncio.gather(*(one(e) for e in dict.fromkeys(endpoints)))
    return notices
