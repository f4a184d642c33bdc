"""What a router answers when classic replication asks the lives: the
`QuorumVotes` gRPC service, hosted on every router's acceptors.

The HA coordinator owns the rule and the memory of the votes; the router
only tells it what it knows, as callables (services/embedded.py passes
them): its node id, its name, and the lives it sees — itself and the nodes
it links to. A node answers only while active: a passive backup's acceptors
refuse every call (NOT_ACTIVE), which is how the asker knows it as one. The
router refuses a caller without the cluster credential before any method
here runs (ClusterIdentityCheck, services/router/server.py).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Collection

import grpc
from google.protobuf.descriptor import ServiceDescriptor

from meshmq.errors import BrokerError, Reason, abort_with
from meshmq.hosted import NodeFacts
from meshmq.v1 import cluster_pb2 as cpb
from meshmq.v1 import cluster_pb2_grpc as cgrpc

log = logging.getLogger("meshmq.ha")

# Stale copies remembered per live (a backup re-copies at most this often between two failures of its
# live), and lives remembered (the oldest are forgotten first).
STALE_COPIES_KEPT = 64
STALE_LIVES_KEPT = 1024
VOTES = cpb.DESCRIPTOR.services_by_name["QuorumVotes"]


def answer_vote(request: cpb.VoteRequest, members: list[cpb.ClusterMember], stale_copies: Collection[str]
                ) -> cpb.VoteReply:
    """A classic quorum vote, as Artemis's server-connect vote handler answers
    it: `members` are this node and the nodes it is linked to now. A backup
    asking to take the target's place gets a vote when the target is not among
    them — and, beyond Artemis, only if its copy is not one the target declared
    stale (ForgetCopy); the target asking to stay live gets one when it is seen
    (with where: a backup that took its place serves the same node id elsewhere).
    Every answer carries `members`: the voter's view of the lives, from which
    the asking node counts the quorum size."""
    connector = next((m.connector for m in members if m.node_id == request.target_node_id), "")
    seen = connector != ""
    vote = seen if request.request_to_stay_active else not seen and request.copy_id not in stale_copies
    return cpb.VoteReply(vote=vote, connector=connector, members=members)


def _remember(copies: dict[str, deque[str]], target_node_id: str, copy_id: str) -> None:
    """Add `copy_id` to the copies remembered for `target_node_id` (bounded both ways)."""
    kept = copies.pop(target_node_id, None) or deque(maxlen=STALE_COPIES_KEPT)
    copies[target_node_id] = kept  # the most recently told last
    while len(copies) > STALE_LIVES_KEPT:
        del copies[next(iter(copies))]
    if copy_id not in kept:
        kept.append(copy_id)


class QuorumVoteServicer(cgrpc.QuorumVotesServicer):
    """One per run of an active node (what it remembers lasts as long as the
    node serves, as Artemis's vote handler)."""

    def __init__(self, node_id: Callable[[], str], node_name: str,
                 members: Callable[[], list[cpb.ClusterMember]]) -> None:
        self._node_id = node_id
        self._node_name = node_name
        # This node and the nodes it links to (the router's cluster connections).
        self._members = members
        # Copies of each live's store its live declared stale (classic replication votes refuse them),
        # and copies this node voted for: a vote cannot be taken back, so the notice for one is refused.
        self._stale: dict[str, deque[str]] = {}
        self._voted: dict[str, deque[str]] = {}

    async def Vote(self, request: cpb.VoteRequest, context: grpc.aio.ServicerContext) -> cpb.VoteReply:
        if not request.target_node_id:
            await abort_with(context, BrokerError(Reason.INVALID_REQUEST, "a vote needs target_node_id"))
        reply = answer_vote(request, self._members(), self._stale.get(request.target_node_id, ()))
        reply.node_id, reply.node_name = self._node_id(), self._node_name
        if reply.vote and not request.request_to_stay_active:
            _remember(self._voted, request.target_node_id, request.copy_id)
        if not request.request_to_stay_active:
            log.info("quorum vote: a backup of %s asked to take over (copy %s): %s", request.target_node_id,
                     request.copy_id, "voted for it" if reply.vote else
                     f"voted against (the live is seen at {reply.connector})" if reply.connector
                     else "voted against (its live declared that copy stale)")
        return reply

    async def Members(self, request: cpb.MembersRequest, context: grpc.aio.ServicerContext) -> cpb.MembersReply:
        return cpb.MembersReply(node_id=self._node_id(), members=self._members())

    async def ForgetCopy(self, request: cpb.ForgetCopyRequest, context: grpc.aio.ServicerContext
                         ) -> cpb.ForgetCopyReply:
        if not request.target_node_id or not request.copy_id:
            await abort_with(context, BrokerError(Reason.INVALID_REQUEST,
                                                  "ForgetCopy needs target_node_id and copy_id"))
        _remember(self._stale, request.target_node_id, request.copy_id)
        voted = request.copy_id in self._voted.get(request.target_node_id, ())
        if voted:
            log.warning("quorum vote: %s declared its backup's copy %s stale, but this node already voted for that "
                        "copy to take over: notice refused (the live may not count it)", request.target_node_id,
                        request.copy_id)
        else:
            log.info("quorum vote: %s declared its backup's copy %s stale; no vote for it from here",
                     request.target_node_id, request.copy_id)
        return cpb.ForgetCopyReply(node_id=self._node_id(), members=self._members(), voted_for_copy=voted)


def hosted_votes(node: NodeFacts) -> tuple[QuorumVoteServicer, ServiceDescriptor]:
    """The `HostedService` every router carries: it answers the lives' votes while it serves."""
    return QuorumVoteServicer(node.node_id, node.node_name, node.members), VOTES
