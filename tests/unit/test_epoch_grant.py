"""The epoch a router activates its store at is always granted
(meshmq/activation.py): the broker applies it, it never picks its own."""

from __future__ import annotations

from meshmq.activation import granted_from, local_grant


def test_a_node_that_asks_nobody_takes_the_next_epoch_after_its_store():
    assert local_grant(0) == 1  # a new store
    assert local_grant(7) == 8


def test_an_ha_grant_is_the_next_epoch_and_never_below_what_the_policy_handed_out():
    grant = granted_from(5)  # the lease's or the quorum's activation sequence
    assert grant(2) == 5  # a store behind the sequence activates at the sequence
    assert grant(5) == 6  # never at the store's own epoch: that would not fence its last writer
    assert grant(9) == 10
    assert granted_from(0)(3) == local_grant(3)
