"""The shared-store lease policy (services/ha-coordinator/shared_store.py):
who takes, renews, waits for or asks for the store, as a pure function."""

from __future__ import annotations

import pytest

from services.ha_coordinator.shared_store import MASTER, SLAVE, Action, LeaseRow, decide


def row(state: str, holder: str | None = None, role: str | None = None, valid: bool = True,
        failback_by: str | None = None) -> LeaseRow:
    return LeaseRow(state, holder, role, valid, failback_by)


@pytest.mark.parametrize("role", [MASTER, SLAVE])
def test_anyone_takes_a_free_or_expired_lease_and_waits_for_a_valid_one(role):
    assert decide(row("free"), "me", role) is Action.ACQUIRE
    assert decide(row("live", "other", MASTER, valid=False), "me", role) is Action.ACQUIRE
    assert decide(row("live", "other", MASTER), "me", role) is Action.WAIT
    assert decide(row("live", "me", role), "me", role) is Action.RENEW


def test_a_paused_lease_waits_for_the_master():
    assert decide(row("paused", valid=False), "me", MASTER) is Action.ACQUIRE
    assert decide(row("paused", valid=False), "me", SLAVE) is Action.WAIT


def test_a_master_asks_an_active_backup_for_its_store_once_and_then_waits():
    assert decide(row("live", "backup", SLAVE), "live", MASTER) is Action.REQUEST_FAILBACK
    assert decide(row("live", "backup", SLAVE, failback_by="live"), "live", MASTER) is Action.WAIT
    # another master does not ask another master: it waits (or takes an expired lease)
    assert decide(row("live", "m1", MASTER), "m2", MASTER) is Action.WAIT
    # backups never ask
    assert decide(row("live", "b1", SLAVE), "b2", SLAVE) is Action.WAIT


def test_a_failback_reservation_is_the_askers_until_it_lapses():
    assert decide(row("failback", failback_by="live"), "live", MASTER) is Action.ACQUIRE
    assert decide(row("failback", failback_by="live"), "backup", SLAVE) is Action.WAIT
    assert decide(row("failback", failback_by="live"), "other", MASTER) is Action.WAIT
    assert decide(row("failback", failback_by="live", valid=False), "backup", SLAVE) is Action.ACQUIRE


def test_the_starter_configs_ha_example_is_every_shared_store_parameter_at_its_default():
    from meshmq.config.loader import default_dev_config_yaml, load_config_text
    from meshmq.config.models import SharedStoreMaster, SharedStoreSlave

    text = default_dev_config_yaml()
    block = text[text.index("# Shared store"):text.index("# Replication")]
    master = "\n".join(line[2:] for line in block.splitlines()[1:] if line.startswith("# "))
    cfg = load_config_text(master)
    assert cfg.ha_policy.shared_store.master == SharedStoreMaster()
    assert (cfg.journal.jdbc_lock_renew_period, cfg.journal.jdbc_lock_expiration) == (2000, 20000)
    listed_slave = {line.split(":")[0].strip() for line in master.splitlines() if line.startswith("    #   ")}
    listed_master = {line.split(":")[0].strip() for line in master.splitlines() if line.startswith("      ")}
    assert {k.removeprefix("#").strip() for k in listed_slave} == {
        name.replace("_", "-") for name in SharedStoreSlave.model_fields} - {"scale-down"}
    assert listed_master == {name.replace("_", "-") for name in SharedStoreMaster.model_fields}
