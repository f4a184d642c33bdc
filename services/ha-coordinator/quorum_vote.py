"""Classic replication's quorum votes (ha-policy replication master/slave).

No lock anywhere: a backup that lost its live asks the cluster's lives
(every router answers `Cluster.Vote` from its own links) whether they still
see the live, and takes over only with enough of them agreeing it is gone —
Artemis's table: of `size` lives, 1 needs no vote, 2 need 1, n >= 3 need
n // 2 + 1. A backup that cannot reach enough lives (it is the one cut off)
stays passive.

Beyond Artemis: when a live loses its backup, the backup's copy misses what
the live confirms from then on. Before confirming anything alone, the live
declares that copy stale (`Cluster.ForgetCopy`) to enough lives that no
majority of votes can be gathered without one of them — `acks_needed` — so a
backup cut off from its live can never take over with a copy that lacks a
confirmed message. The pure deciders here have their own unit tests
(tests/unit/test_quorum_vote.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

import grpc

from meshmq.v1 import cluster_pb2 as cpb
from meshmq.v1 import cluster_pb2_grpc as cgrpc

log = logging.getLogger("meshmq.ha")


def votes_needed(size: int) -> int:
    """Positive votes a decision needs among `size` lives (Artemis's QuorumVoteServerConnect)."""
    return size // 2 if size <= 2 else size // 2 + 1


def quorum_size(configured: int, lives: int) -> int:
    """quorum-size, or (-1) the lives the node's cluster connection names."""
    return configured if configured >= 0 else lives


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


async def ask(endpoints: Iterable[str], identity, request: cpb.VoteRequest, tally: Tally, wait_s: float) -> Tally:
    """One round: ask every endpoint at once; ends when the tally is decided,
    every endpoint answered or failed, or after `wait_s` (quorum-vote-wait)."""
    if tally.decided:
        return tally
    channels = []

    async def one(endpoint: str) -> None:
        channel = identity.open(endpoint)
        channels.append(channel)
        try:
            tally.count(await cgrpc.ClusterStub(channel).Vote(request, metadata=identity.metadata, timeout=wait_s))
        except grpc.aio.AioRpcError as exc:  # down, passive (NOT_ACTIVE), or refusing the credential
            log.debug("quorum vote: %s did not vote (%s)", endpoint, exc.details())

    tasks = [asyncio.create_task(one(e)) for e in dict.fromkeys(endpoints)]
    try:
        pending = set(tasks)
        deadline = asyncio.get_running_loop().time() + wait_s
        while pending and not tally.decided:
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


async def forget_copy(endpoints: Iterable[str], identity, target_node_id: str, copy_id: str, wait_s: float
                      ) -> set[str]:
    """Tell every endpoint that `copy_id` of `target_node_id`'s store is stale;
    the node ids that acknowledged it within `wait_s`."""
    acked: set[str] = set()
    request = cpb.ForgetCopyRequest(target_node_id=target_node_id, copy_id=copy_id)

    async def one(endpoint: str) -> None:
        channel = identity.open(endpoint)
        try:
            reply = await cgrpc.ClusterStub(channel).ForgetCopy(request, metadata=identity.metadata, timeout=wait_s)
            if reply.node_id != target_node_id:
                acked.add(reply.node_id)
        except grpc.aio.AioRpcError as exc:
            log.debug("quorum vote: %s did not take the stale-copy notice (%s)", endpoint, exc.details())
        finally:
            await channel.close()

    await asyncio.gather(*(one(e) for e in dict.fromkeys(endpoints)))
    return acked
