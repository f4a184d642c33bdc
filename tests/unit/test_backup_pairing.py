"""The HA coordinator's pairing rule (services/ha-coordinator/backup_pairing.py): the
seed's group-name example, and who pairs with whom without groups."""

from __future__ import annotations

from collections import Counter

from services.ha_coordinator.backup_pairing import pair_in_turn, pairing_refusal

LIVES = [("live1", "fish"), ("live2", "fish"), ("live3", "fish"), ("live4", "bird"), ("live5", "bird")]
BACKUPS = [("backup1", "fish"), ("backup2", "fish"), ("backup3", "fish"), ("backup4", "fish"),
           ("backup5", "bird"), ("backup6", "bird")]


def test_the_seeds_example_the_fish_keep_one_spare_and_the_birds_pair_one_to_one():
    pairs = pair_in_turn(LIVES, BACKUPS)
    groups = dict(LIVES)
    assert all(groups[live] == dict(BACKUPS)[backup] for backup, live in pairs.items())  # within their group
    assert Counter(pairs.values()) == Counter({live: 1 for live, _ in LIVES})  # every live exactly one backup
    assert set(dict(BACKUPS)) - set(pairs) == {"backup4"}  # the fish keep one spare
    assert {pairs["backup5"], pairs["backup6"]} == {"live4", "live5"}


def test_whatever_order_the_backups_come_in_the_pairing_holds():
    for shift in range(len(BACKUPS)):
        order = BACKUPS[shift:] + BACKUPS[:shift]
        pairs = pair_in_turn(LIVES, order)
        assert len(pairs) == 5 and Counter(dict(BACKUPS)[b] for b in set(dict(BACKUPS)) - set(pairs)) == {"fish": 1}


def test_a_backup_without_a_group_pairs_with_any_live_and_one_with_a_group_only_within_it():
    assert pairing_refusal("l", "fish", "") is None  # any live (Artemis's any-live locator)
    assert pairing_refusal("l", "", "") is None
    assert pairing_refusal("l", "", "fish") == "node l is in group 'none', the backup in 'fish'"
    assert pairing_refusal("l", "bird", "fish") == "node l is in group 'bird', the backup in 'fish'"
    assert pairing_refusal("l", "fish", "fish", busy_with="b1") == "node l has a backup (b1)"
