"""Whether a router may serve its store now, and at which epoch: the seam
between the router and an HA policy.

The router never chooses its epoch: it applies the one it is granted. A
router with no HA policy is active from the start and grants itself the
next epoch after its store's (`local_grant`: nobody else may hold its
store). With one (shared store: services/ha-coordinator/shared_store.py;
replication with pluggable quorum: pluggable_activation.py there; classic
replication: classic.py), the router first waits in `acquire`, which
returns the grant — the epoch the store is activated at, from the epoch the
store holds (the journal refuses every older writer from then on) — serves
while `held` runs, and gives the store up with `release` when it stops.
`services/embedded.py` puts the two together; the router never imports the
HA coordinator.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Protocol

# Why `held` ended: another node holds the lease (the router halts, exit 3) ...
LEASE_LOST = "lease-lost"
# ... or the live this backup stood in for is back and asked for its store (allow-failback).
FAILED_BACK = "failed-back"


# The epoch a store is activated at, from the epoch it holds (read when the journal opens).
EpochGrant = Callable[[int], int]


def local_grant(stored_epoch: int) -> int:
    """The activation of a node that asks nobody (no HA policy, or a classic
    master, which serves from the start): the next epoch after its store's."""
    return stored_epoch + 1


def granted_from(floor: int) -> EpochGrant:
    """The grant of an HA policy that handed out `floor` (the shared-store
    lease's or the quorum's activation sequence): the next epoch after the
    store's, and never below `floor`."""
    return lambda stored_epoch: max(stored_epoch + 1, floor)


class StaleCopy(Exception):
    """A backup's copy may never serve (classic replication: the votes to take
    over failed): it is dropped, and the backup copies its live again."""


class Activation(Protocol):
    description: str
    # Report ready (as a passive node) before waiting in `acquire`: a backup, or a
    # live whose start-up does not wait for activation.
    passive_start: bool

    async def acquire(self) -> EpochGrant:
        """Wait until this node may serve; the epoch its store is activated at, from the store's."""

    def live(self) -> str:
        """Where the node serving the store listens, as last seen ("" = unknown): what a passive node tells clients."""

    def listening_at(self, endpoint: str) -> None:
        """Where this node listens: passive, its backups' registry shows it to the
        live; active, passive nodes point clients there."""

    def backups(self) -> AsyncIterator[str]:
        """While active: the endpoint of a backup waiting to take over ("" = none),
        now and at every change (the live names it in the topology)."""

    async def held(self) -> str:
        """While the node serves; returns LEASE_LOST or FAILED_BACK when it must stop."""

    async def release(self, *, failover: bool, failback: bool = False) -> None:
        """Give the store up at a normal stop (`failover`: a backup may take over now)."""

    async def close(self) -> None:
        """Free what the policy holds (connections)."""
