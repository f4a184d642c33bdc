"""ha-policy replication in node config (issue 12): the classic roles (quorum
votes) and the pluggable-quorum roles on etcd, their defaults, and what is
refused with the reason."""

from __future__ import annotations

import pytest

from meshmq.config.loader import ConfigError, load_config_text

MANAGER = "manager: {properties: {connect-string: '127.0.0.1:2379'}}"
BACKUP_LINKS = "connectors: {live: '10.0.0.1:61616'}\ncluster-connections: {ha: {static-connectors: [live]}}\n"


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as err:
        load_config_text(text, source="node.yaml")
    return [str(p) for p in err.value.problems]


def test_the_classic_roles_and_their_defaults_are_artemis_s():
    master = load_config_text("ha-policy: {replication: {master: {}}}\n")
    m = master.ha_policy.replication.master
    assert master.ha_role == "replication master"
    assert master.ha_policy.replication.manager is None
    assert (m.check_for_live_server, m.vote_on_replication_failure, m.quorum_size, m.vote_retries,
            m.vote_retry_wait, m.quorum_vote_wait, m.initial_replication_sync_timeout, m.group_name,
            m.cluster_name) == (False, False, -1, 12, 5000, 30, 30000, None, None)
    assert master.replication_lives == []  # no other live to ask
    slave = load_config_text("ha-policy: {replication: {slave: {group-name: fish}}}\n" + BACKUP_LINKS)
    s = slave.ha_policy.replication.slave
    assert slave.ha_role == "replication slave"
    assert (s.allow_failback, s.restart_backup, s.max_saved_replicated_journals_size, s.quorum_size,
            s.vote_retries, s.vote_retry_wait, s.quorum_vote_wait, s.group_name) == (
        True, True, 2, -1, 12, 5000, 30, "fish")
    assert slave.replication_lives == ["10.0.0.1:61616"]


def test_the_roles_and_their_defaults():
    primary = load_config_text(f"ha-policy: {{replication: {{primary: {{{MANAGER}}}}}}}\n")
    rep = primary.ha_policy.replication
    assert primary.ha_role == "replication primary"
    assert (rep.primary.coordination_id, rep.primary.group_name, rep.primary.initial_replication_sync_timeout) == (
        None, None, 30000)
    props = rep.manager.properties
    assert (props.session_ms, props.session_percent, props.connection_ms, props.retries, props.retries_ms,
            props.namespace) == (18000, 33, 8000, 1, 1000, "meshmq-ha")
    assert rep.manager.class_name == "etcd"
    backup = load_config_text(f"ha-policy: {{replication: {{backup: {{{MANAGER}}}}}}}\n" + BACKUP_LINKS)
    assert backup.ha_role == "replication backup"
    assert backup.ha_policy.replication.backup.max_saved_replicated_journals_size == 2
    assert backup.ha_policy.replication.backup.allow_failback is False  # Artemis's pluggable default
    assert backup.replication_lives == ["10.0.0.1:61616"]


@pytest.mark.parametrize(("text", "said"), [
    (f"ha-policy: {{replication: {{backup: {{{MANAGER}}}}}}}\n",
     "node.yaml:1: ha-policy.replication.backup.cluster-name: a backup finds its live through a cluster "
     "connection's static-connectors: add one (cluster-connections)"),
    (f"ha-policy: {{replication: {{primary: {{{MANAGER}}}}}}}\njournal: {{url: 'postgresql+psycopg://u@h/d'}}\n",
     "node.yaml:2: journal: ha-policy replication copies the node's own SQLite journal (the default, under "
     "data-directory); for a shared PostgreSQL store use shared-store"),
    ("ha-policy: {replication: {primary: {manager: {properties: {connect-string: 'nohost'}}}}}\n",
     "node.yaml:1: ha-policy.replication.primary.manager.properties.connect-string:"),
    ("ha-policy: {replication: {colocated: {request-backup: true}}}\n",
     "node.yaml:1: ha-policy.replication.colocated.request-backup: a live finds the nodes to ask through its "
     "discovery groups or cluster connections: configure one"),
    ("ha-policy: {replication: {colocated: {excludes: [nobody]}}}\n",
     "node.yaml:1: ha-policy.replication.colocated.excludes[0]: no connector named 'nobody'"),
    (f"ha-policy: {{replication: {{master: {{}}, primary: {{{MANAGER}}}}}}}\n",
     "node.yaml:1: ha-policy.replication: give exactly one role: master or slave"),
    ("ha-policy: {replication: {slave: {}}}\n",
     "node.yaml:1: ha-policy.replication.slave.cluster-name: a backup finds its live through a cluster "
     "connection's static-connectors"),
    ("ha-policy: {replication: {master: {cluster-name: nope}}}\n" + BACKUP_LINKS,
     "node.yaml:1: ha-policy.replication.master.cluster-name: no cluster connection named 'nope'"),
    ("ha-policy: {replication: {slave: {vote-retries: -1}}}\n" + BACKUP_LINKS,
     "node.yaml:1: ha-policy.replication.slave.vote-retries:"),
    (f"security-enabled: true\nusers: [{{username: a, password: b}}]\nha-policy: {{replication: {{primary: {{{MANAGER}}}}}}}\n",
     "node.yaml:1: cluster-password: required when security-enabled is true and the node has ha-policy "
     "replication: a backup takes a copy of every message"),
])
def test_what_is_refused_says_why(text, said):
    found = problems(text)
    assert any(p.startswith(said) for p in found), found


def test_the_starter_configs_replication_example_is_every_classic_parameter_at_its_default():
    from meshmq.config.loader import default_dev_config_yaml
    from meshmq.config.models import ReplicationMaster

    text = default_dev_config_yaml()
    block = text[text.index("# Replication"):]
    uncommented = "\n".join(line[2:] for line in block.splitlines() if line.startswith("# ") and ":" in line
                             and not line.startswith("# Replication") and not line.startswith("# through"))
    cfg = load_config_text(uncommented)
    assert cfg.ha_policy.replication.master == ReplicationMaster()
    listed = {line.split(":")[0].strip() for line in uncommented.splitlines() if line.startswith("      ")}
    assert listed == {name.replace("_", "-") for name in ReplicationMaster.model_fields} - {"cluster-name",
                                                                                              "group-name"}
