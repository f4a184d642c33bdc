"""Which backup a replicating live takes: the seed's group-name rule, pure.

A backup with a `group-name` pairs only with a live of the same group; one
without pairs with any live (Artemis's named and any-live locators). A live
takes one backup at a time: the others wait and try the next live, so with
more backups than lives of a group, the group keeps spares.
"""

from __future__ import annotations


def pairing_refusal(live_name: str, live_group: str, backup_group: str, busy_with: str = "") -> str | None:
    """Why the live `live_name` (group `live_group`, "" = none) does not take a backup
    of group `backup_group` now, or None: it does. `busy_with` names the backup it
    already has, or is copying its store for ("" = none)."""
    if backup_group and backup_group != live_group:
        return f"node {live_name} is in group {live_group or 'none'!r}, the backup in {backup_group!r}"
    if busy_with:
        return f"node {live_name} has a backup ({busy_with})"
    return None


def pair_in_turn(lives: list[tuple[str, str]], backups: list[tuple[str, str]]) -> dict[str, str]:
    """The pairs the rule makes when each backup, in turn, tries the lives in order:
    {backup: live} for the backups that found one (the others wait as spares).
    `lives` and `backups` are (name, group-name) pairs."""
    taken: dict[str, str] = {}  # live -> its backup
    pairs: dict[str, str] = {}
    for backup, backup_group in backups:
        for live, live_group in lives:
            if pairing_refusal(live, live_group, backup_group, taken.get(live, "")) is None:
                taken[live] = backup
                pairs[backup] = live
                break
    return pairs
