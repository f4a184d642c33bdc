"""ha-policy replication master/slave (classic): when a replicating node may
serve, decided by quorum votes among the cluster's lives (quorum_vote.py).

* A **master** serves from the start, as in Artemis. When it loses its
  backup it declares the backup's copy stale to enough lives before it
  confirms anything alone (`forget_copy`); until they answer, confirms wait.
  With `vote-on-replication-failure` it also asks whether it may stay live,
  and stops if a quorum does not see it (another node may serve its id).
* A **slave** copies its master's store (replication_backup.py) and,
  when the stream ends, runs up to `vote-retries` rounds of votes
  `vote-retry-wait` apart, each waiting `quorum-vote-wait` seconds at most;
  it takes over once enough lives no longer see its master. If every round
  fails its copy is dropped and it replicates again (Artemis restarts the
  backup). Serving, it takes a backup itself: the master coming back.
* **Failback.** A master starts by asking the lives whether its node id is
  served elsewhere (its slave took over while it was down). If so, with
  `check-for-live-server` it copies the store back from there, asks that
  node to step down once in sync (a slave with `allow-failback` does, and
  with `restart-backup` waits as its backup again), and takes over by the
  same vote; without it, it stops rather than serve a stale journal beside
  the slave (Artemis would serve both).

The nodes asked are the static connectors of the replication cluster
connection (`cluster-name`); `quorum-size` -1 counts the **lives** among
them as the topology knows them (quorum_vote.LiveView: backups never count,
a live that died still does, an endpoint never heard from counts as a live).
Every node keeps that view current by asking the others which lives they see
every `TOPOLOGY_PROBE_S` seconds (`QuorumVotes.Members`) and from every vote and
notice answer. With no other live a backup takes over whenever it loses its
live, even when only the network between them failed: that split-brain risk
is logged at start, and pluggable quorum on etcd (primary/backup) is the remedy.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable

from meshmq.activation import FAILED_BACK, EpochGrant, StaleCopy, granted_from, local_grant
from meshmq.config.models import BrokerConfig
from meshmq.runtime import NodeHalted
from meshmq.v1 import cluster_pb2 as cpb

from .replicating_activation import ReplicatingActivation
from .quorum_vote import (LiveView, Tally, acks_needed, ask, forget_copy, learn_members, notice_outcome, quorum_size,
                          votes_needed)

log = logging.getLogger("meshmq.ha")
# How often a node asks the others which lives they see (its LiveView), while it runs.
TOPOLOGY_PROBE_S = 5.0
# Stands for the live of this node's pair (its own node id, or its master's) before either is known.
PAIR_LIVE = "(the live of this pair)"


class ClassicActivation(ReplicatingActivation):
    def __init__(self, config: BrokerConfig, identity, local_store: Callable[[], tuple[str, int]]) -> None:
        """`identity`: how this node opens calls to other nodes (the cluster
        connection's TLS and credential: the router's link identity, through runner.py);
        `local_store()`: this node's id and its store's epoch."""
        super().__init__()
        self._local_store = local_store
        rep = config.ha_policy.replication
        assert rep is not None and rep.classic
        self.master = rep.own().master  # a colocated node is the master of its own store
        self.role = self.master or rep.slave
        self.passive_start = rep.slave is not None
        self._name = config.name
        self.instance = f"{config.name}/{uuid.uuid4()}"
        self.description = "classic replication (quorum votes)"
        self._identity = identity
        self._lives = config.replication_lives
        cc_name = self.role.cluster_name or next(iter(config.cluster_connections), None)
        cc = config.cluster_connections.get(cc_name) if cc_name else None
        # How long a silent stream counts as alive: the cluster connection's connection-ttl.
        self.ack_timeout_s = max(0.2, (cc.connection_ttl if cc is not None else 60000) / 1000)
        self.node_id: Callable[[], str] = lambda: ""  # the live's own id (its journal's), for its notices
        self._own: set[str] = set()
        self.view = LiveView()
        self._probing: asyncio.Task | None = None
        # A master failing back: copy the store from where it is served (runner.py's replica runner).
        self.failback: Callable[[str], Awaitable[int]] | None = None
        self._step_down = asyncio.Event()

    def size(self, *node_ids: str) -> int:
        """The lives a vote counts: quorum-size, or the lives the topology knows
        (`node_ids`: lives to count whether seen or not — this node's own when it
        serves, the live a backup would replace)."""
        return quorum_size(self.role.quorum_size, self.view.lives(self._others, self._own, node_ids))

    @property
    def _others(self) -> list[str]:
        """The lives named, this node excepted."""
        return [e for e in self._lives if e not in self._own]

    @property
    def _asked(self) -> list[str]:
        """Whom a vote, a notice or a probe goes to: the nodes named, and every
        live the view learned of that no named endpoint reaches (as Artemis asks
        the lives of its topology: a colocated backup names only its live, yet
        the other lives vote). A live reached through a named endpoint is asked
        there only: the operator's path to it, not the address another node uses."""
        named = self._others
        at_named = {self.view.served[e] for e in named if e in self.view.served}
        learned = [e for e, node_id in self.view.served.items()
                   if e not in self._own and e not in named and node_id not in at_named]
        return list(dict.fromkeys([*named, *learned]))

    def listening_at(self, endpoint: str) -> None:
        super().listening_at(endpoint)
        self._own.add(endpoint)

    # ------------------------------------------------------------ Activation

    async def _probe(self) -> None:
        """Keep the view of the lives current while the node runs (where this
        node's own backup listens is a backup's endpoint, whether it answers or not)."""
        while True:
            await learn_members(self._asked, self._identity, self.view, self.role.quorum_vote_wait)
            if self.backup_connector():
                self.view.saw_passive(self.backup_connector())
            await asyncio.sleep(TOPOLOGY_PROBE_S)

    async def acquire(self) -> EpochGrant:
        if self._probing is None:
            self._probing = asyncio.create_task(self._probe())
        at_start = self.size(PAIR_LIVE)  # the view is empty yet: every named endpoint counts
        if at_start <= 1:
            log.warning("classic replication: no other live to ask (quorum size %d): %s whenever the two lose "
                        "each other, even when only the network between them failed (split brain). List every "
                        "live in the cluster connection's static-connectors, or use pluggable quorum on etcd "
                        "(ha-policy replication primary/backup) — docs/ha.md", at_start,
                        "this backup takes over" if self.master is None else "the backup takes over")
        if self.master is None:
            return granted_from(await self._replicate())
        node_id, _ = await asyncio.to_thread(self._local_store)
        served = await self._served_elsewhere(node_id)
        if served is None:
            return local_grant  # a master serves from the start, at the next epoch of its own store
        voter, at = served
        if not self.master.check_for_live_server:
            raise NodeHalted(f"classic replication: this node's store (node {node_id}) is served at {at} (seen by "
                             f"{voter}): its slave took over while this node was down, and this journal is stale. "
                             "Set check-for-live-server: true to fail back (copy the store from there and take "
                             "over again), or start this node as a slave")
        log.warning("classic replication: this node's store (node %s) is served at %s (seen by %s): failing back — "
                    "copying it from there, then asking that node to step down", node_id, at, voter)
        assert self.failback is not None
        return granted_from(await self.failback(at))

    async def _served_elsewhere(self, node_id: str) -> tuple[str, str] | None:
        """(a live that sees it, where) when this master's node id is served by
        another node; nobody can see this node itself yet (it does not serve)."""
        assert self.master is not None
        others = self._others
        if not others:
            return None
        request = cpb.VoteRequest(target_node_id=node_id, request_to_stay_active=True)
        tally = await ask(others, self._identity, request, Tally(needed=len(others) + 1), self.master.quorum_vote_wait,
                          view=self.view)
        elsewhere = sorted((voter, at) for voter, at in tally.seen_at.items() if at)
        return elsewhere[0] if elsewhere else None

    async def try_take_over(self, coordination_id: str, instance: str, epoch: int, copy_id: str) -> int | None:
        """For the slave's runner once the stream ended: vote rounds; the epoch
        floor to activate at, or StaleCopy when every round failed. The votes
        needed are counted after each round, from the lives its answers showed."""
        rounds = max(1, self.role.vote_retries)
        self.view.saw_live(self.live_endpoint(), coordination_id)
        request = cpb.VoteRequest(target_node_id=coordination_id, copy_id=copy_id)
        for n in range(1, rounds + 1):
            tally = await ask(self._asked, self._identity, request, Tally(needed=0), self.role.quorum_vote_wait,
                              view=self.view)
            size = self.size(coordination_id)
            tally.needed = votes_needed(size)
            if tally.decided:
                log.info("classic replication: quorum vote %d/%d won (%d of %d lives needed agree %s is gone; "
                         "quorum size %d); taking over", n, rounds, tally.positive, tally.needed, coordination_id,
                         size)
                return epoch + 1
            log.warning("classic replication: quorum vote %d/%d lost: %d of %d needed votes (quorum size %d: %s); "
                        "%s", n, rounds, tally.positive, tally.needed, size, _voices(tally) or "no live answered",
                        "voting again" if n < rounds else "giving up")
            if n < rounds:
                await asyncio.sleep(self.role.vote_retry_wait / 1000)
        log.warning("classic replication: vote-retries (%d) exhausted; dropping this copy and replicating again "
                    "(a restarted backup, as Artemis)", rounds)
        raise StaleCopy(coordination_id)

    async def mark_in_sync(self, replica_instance: str) -> bool:
        """The master's hook: nothing to record (every copy has an id of its own)."""
        return True

    def step_down(self, asked_by: str) -> None:
        """A serving slave's hook: the original live, in sync, asks for its store back (allow-failback)."""
        self._step_down.set()

    async def forget_copy(self, copy_id: str) -> bool:
        """The live's hook, before it confirms alone: enough lives hold the
        lost backup's copy stale that it cannot win a vote. Confirms wait
        until they do; False (the node halts) when the copy has already won
        a vote (as many lives refuse the notice, having voted for it, as a vote
        needs; or a live sees this node id served elsewhere: a live frozen
        while its backup took over, then resumed), or when
        vote-on-replication-failure asks and a quorum does not see this node
        as the live."""
        role = self.role
        said = ""
        while True:
            node_id = self.node_id()
            notices = await forget_copy(self._asked, self._identity, node_id, copy_id, role.quorum_vote_wait,
                                        self.view, self._name)
            size = self.size(node_id)
            elsewhere = sorted(notices.served_elsewhere.items())
            outcome = notice_outcome(size, len(notices.acked), len(notices.voted_for_copy), bool(elsewhere))
            if outcome is True:
                log.info("classic replication: %d live(s) hold the lost backup's copy stale (%d needed of quorum "
                         "size %d); confirming alone", len(notices.acked), acks_needed(size), size)
                return True
            if outcome is False:
                where = (f"live {elsewhere[0][0]} sees this node id served by {elsewhere[0][1]}" if elsewhere else
                         f"{len(notices.voted_for_copy)} live(s) voted for it to take over, "
                         f"{votes_needed(size)} needed of quorum size {size}")
                log.error("classic replication: the lost backup's copy %s has taken over this node's store (%s); "
                          "stopping without confirming anything alone", copy_id, where)
                return False
            if getattr(role, "vote_on_replication_failure", False) and not await self._may_stay():
                log.error("classic replication: vote-on-replication-failure: a quorum of lives does not see this "
                          "node as the live; stopping (another node may serve its store)")
                return False
            why = (f"only {len(notices.acked)} of the {acks_needed(size)} lives needed (quorum size {size}) took "
                   "the notice that the lost backup's copy is stale; confirms wait (a backup with that copy could "
                   "otherwise take over without them)")
            if why != said:
                log.warning("classic replication: %s", why)
                said = why
            await asyncio.sleep(max(0.2, role.vote_retry_wait / 1000))

    async def _may_stay(self) -> bool:
        request = cpb.VoteRequest(target_node_id=self.node_id(), request_to_stay_active=True)
        tally = Tally(0, request_to_stay_active=True, own_connectors=frozenset(self._own))
        await ask(self._asked, self._identity, request, tally, self.role.quorum_vote_wait, view=self.view)
        tally.needed = votes_needed(self.size(self.node_id()))
        return tally.decided

    async def held(self) -> str:
        """No lease to lose: a live serves until a signal, a halt (its writes
        refused), or — a slave serving — the original live's failback."""
        await self._step_down.wait()
        return FAILED_BACK

    async def release(self, *, failover: bool, failback: bool = False) -> None:
        pass

    async def close(self) -> None:
        if self._probing is not None:
            self._probing.cancel()


def _voices(tally: Tally) -> str:
    return ", ".join(f"{node} {'for' if v else 'against'}" for node, v in sorted(tally.voters.items()))
