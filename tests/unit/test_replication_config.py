"""ha-policy replication in node config (issue 12): the pluggable-quorum roles
on etcd, their defaults, and what is refused with the reason."""

from __future__ import annotations

import pytest

from meshmq.config.loader import ConfigError, load_config_text

MANAGER = "manager: {properties: {connect-string: '127.0.0.1:2379'}}"
BACKUP_LINKS = "connectors: {live: '10.0.0.1:61616'}\ncluster-connections: {ha: {static-connectors: [live]}}\n"


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as err:
        load_config_text(text, source="node.yaml")
    return [str(p) for p in err.value.problems]


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
    ("ha-policy: {replication: {master: {}}}\n",
     "node.yaml:1: ha-policy.replication.master: unknown key (expected one of: primary, backup)"),
    (f"ha-policy: {{replication: {{backup: {{{MANAGER}, allow-failback: true}}}}}}\n" + BACKUP_LINKS,
     "node.yaml:1: ha-policy.replication.backup.allow-failback: not built yet for replication"),
    (f"security-enabled: true\nusers: [{{username: a, password: b}}]\nha-policy: {{replication: {{primary: {{{MANAGER}}}}}}}\n",
     "node.yaml:1: cluster-password: required when security-enabled is true and the node has ha-policy "
     "replication: a backup takes a copy of every message"),
])
def test_what_is_refused_says_why(text, said):
    found = problems(text)
    assert any(p.startswith(said) for p in found), found
