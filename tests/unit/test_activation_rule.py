"""Pluggable quorum's rule of who may activate (services/ha-coordinator/etcd_quorum.py),
pure: the same conditions its etcd transaction enforces."""

from __future__ import annotations

from services.ha_coordinator.etcd_quorum import activation_refusal


def test_a_primary_activates_only_while_nobody_holds_the_lock():
    assert activation_refusal(holder=None, sequence=3, in_sync="", instance="p/1", replica_epoch=None) is None
    assert activation_refusal(holder="b/2", sequence=3, in_sync="", instance="p/1",
                              replica_epoch=None) == "b/2 holds the lock"


def test_a_backup_activates_only_with_an_in_sync_copy_of_the_last_epoch():
    ok = dict(holder=None, sequence=3, in_sync="b/2", instance="b/2", replica_epoch=3)
    assert activation_refusal(**ok) is None
    assert "the copy is stale" in activation_refusal(**{**ok, "replica_epoch": 2})
    assert activation_refusal(**{**ok, "in_sync": ""}) == "the in-sync mark names no copy, not this one"
    assert activation_refusal(**{**ok, "in_sync": "b/9"}) == "the in-sync mark names b/9, not this one"
    assert activation_refusal(**{**ok, "holder": "p/1"}) == "p/1 holds the lock"  # the live is still there
