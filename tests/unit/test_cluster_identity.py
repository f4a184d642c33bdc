"""Service-to-service identity: the cluster-user / cluster-password keys, the
rules that tie them to security-enabled, and the deciders the services and
the credential check use (meshmq/security/cluster_identity.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from meshmq.config import defaults
from meshmq.config.loader import ConfigError, load_config_text
from meshmq.security.authentication import Authenticator
from meshmq.security.cluster_identity import cluster_prover, server_interceptors, service_problem, start_warnings
from meshmq.security.cluster_proof import CLUSTER_PROOF_KEY, CLUSTER_USER_KEY, NONCE_TTL_MS, cluster_key, proof_problem
from meshmq.transport import PASSWORD_KEY, USERNAME_KEY, ClusterIdentityCheck
from tests.fixtures.cluster_proof import member_proof

ROOT = Path(__file__).resolve().parents[2]
SECURED = "security-enabled: true\nusers: [{username: app, password: app-pw}]\n"
USES_JOURNAL_SERVICE = "journal: {address: 'journal-host:61626'}\n"
USES_DISCOVERY_SERVICE = "discovery-groups: {dg: {discovery-service: 'disco:61636'}}\n"


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as err:
        load_config_text(text, source="node.yaml")
    return [str(p) for p in err.value.problems]


def test_the_keys_and_their_defaults():
    cfg = load_config_text("")
    assert (cfg.cluster_user, cfg.cluster_password) == ("meshmq.cluster", None)
    assert not cluster_prover(cfg).enabled
    cfg = load_config_text("cluster-user: ops.cluster\ncluster-password: s3cret\n")
    prover = cluster_prover(cfg)
    assert prover.enabled and prover.user == "ops.cluster"


@pytest.mark.parametrize(("uses", "named"), [
    (USES_JOURNAL_SERVICE, "a journal service (journal.address journal-host:61626)"),
    (USES_DISCOVERY_SERVICE, "a discovery service (discovery-groups.dg.discovery-service disco:61636)"),
])
def test_a_secured_node_using_a_separate_service_needs_a_cluster_password(uses, named):
    assert problems(SECURED + uses) == [
        f"node.yaml:1: cluster-password: required when security-enabled is true and the node uses {named}: "
        'without it that service accepts any caller (docs/security.md, "Cluster identity")'
    ]
    assert load_config_text(SECURED + uses + "cluster-password: s3cret\n").cluster_password == "s3cret"


def test_a_secured_node_with_cluster_connections_needs_a_cluster_password():
    links = "connectors: {b: '10.0.0.2:61616'}\ncluster-connections: {my-cluster: {static-connectors: [b]}}\n"
    assert problems(SECURED + links) == [
        "node.yaml:1: cluster-password: required when security-enabled is true and the node has "
        'cluster-connections (my-cluster): a secured node takes no cluster link without it '
        '(docs/security.md, "Cluster identity")'
    ]
    assert load_config_text(SECURED + links + "cluster-password: s3cret\n").cluster_password == "s3cret"


@pytest.mark.parametrize("text", [
    SECURED,  # the embedded journal is in the router's process: nothing to prove
    USES_JOURNAL_SERVICE + USES_DISCOVERY_SERVICE,  # security off: unchanged
])
def test_no_cluster_password_is_needed_without_a_separate_service_or_security(text):
    assert load_config_text(text).cluster_password is None


def test_a_secured_journal_or_discovery_service_needs_a_cluster_password():
    cfg = load_config_text(SECURED)
    for service in ("journal", "discovery"):
        problem = service_problem(cfg, service)
        assert problem is not None and problem.startswith("cluster-password: required when security-enabled is true")
        assert f"the {service} service accepts any caller" in problem
    assert service_problem(load_config_text(SECURED + "cluster-password: s3cret\n"), "journal") is None
    assert service_problem(load_config_text(""), "journal") is None


def test_start_warnings():
    unsecured = load_config_text("")
    assert "no cluster-password: the journal service accepts any caller" in start_warnings(unsecured, "journal")[0]
    assert start_warnings(unsecured, "router") == []
    assert start_warnings(load_config_text("cluster-password: s3cret\n"), "journal") == []
    for example in defaults.EXAMPLE_CLUSTER_PASSWORDS:
        cfg = load_config_text(f"cluster-password: {example!r}\n")
        for service in ("journal", "discovery", "router"):
            [warning] = start_warnings(cfg, service)
            assert warning.startswith("cluster-password is an example password from the documentation")


def test_every_cluster_password_in_the_docs_and_examples_is_warned_about():
    files = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "deploy").rglob("*.y*ml")]
    found = {
        value.strip("'\"")
        for path in files
        for value in re.findall(r"cluster-password:\s*([^\s#,}]+|\"[^\"]*\"|'[^']*')", path.read_text())
    }
    assert found <= defaults.EXAMPLE_CLUSTER_PASSWORDS


def has_cluster_credential(metadata, user: str, password: str) -> bool:
    return proof_problem(metadata, cluster_key(user, password), user) is None


def test_the_proof_check():
    md = dict(member_proof("s3cret"))
    assert "s3cret" not in repr(md)
    assert has_cluster_credential(md, "meshmq.cluster", "s3cret")
    assert not has_cluster_credential(md, "meshmq.cluster", "s3cret!")
    assert not has_cluster_credential(dict(member_proof("s3cret", "other")), "meshmq.cluster", "s3cret")
    assert not has_cluster_credential({}, "meshmq.cluster", "s3cret")
    # The password itself, as meshmq once sent it, proves nothing.
    assert not has_cluster_credential({CLUSTER_USER_KEY: "meshmq.cluster", "x-meshmq-cluster-password": "s3cret"},
                                      "meshmq.cluster", "s3cret")


def test_a_proof_expires_and_cannot_be_altered():
    import time

    stale = dict(member_proof("s3cret", now_ms=int(time.time() * 1000) - NONCE_TTL_MS - 1))
    assert not has_cluster_credential(stale, "meshmq.cluster", "s3cret")
    md = dict(member_proof("s3cret"))
    version, client_nonce, mac, server_nonce = md[CLUSTER_PROOF_KEY].split(".", 3)
    expires, rand, nonce_mac = server_nonce.split(".")
    later = f"{version}.{client_nonce}.{mac}.{int(expires) + NONCE_TTL_MS}.{rand}.{nonce_mac}"  # a longer life
    assert not has_cluster_credential({**md, CLUSTER_PROOF_KEY: later}, "meshmq.cluster", "s3cret")
    for garbage in ("", "v1", "v1.a.b.c", "v2." + md[CLUSTER_PROOF_KEY][3:], "v1.!!.!!.1.2.3", "x" * 5000):
        assert not has_cluster_credential({**md, CLUSTER_PROOF_KEY: garbage}, "meshmq.cluster", "s3cret")


def test_the_cluster_key_depends_on_user_and_password():
    keys = {cluster_key("meshmq.cluster", "s3cret"), cluster_key("meshmq.cluster", "s3cret!"),
            cluster_key("other", "s3cret")}
    assert len(keys) == 3 and all(len(k) == 32 for k in keys)


def test_who_the_check_admits():
    cfg = load_config_text(SECURED + "cluster-password: s3cret\n")
    assert server_interceptors(load_config_text(""), "journal") == []
    [journal] = server_interceptors(cfg, "journal")
    cluster = dict(member_proof("s3cret"))
    user = {USERNAME_KEY: "app", PASSWORD_KEY: "app-pw"}
    assert journal.admits("/meshmq.v1.Journal/Load", cluster)
    assert not journal.admits("/meshmq.v1.Journal/Load", user)

    users = Authenticator(True, [("app", "app-pw")])
    discovery = ClusterIdentityCheck("meshmq.cluster", "s3cret", service="the discovery service",
                                     readers=lambda md: users.identify(md) is not None,
                                     read_methods={"/meshmq.v1.Discovery/List"})
    assert discovery.admits("/meshmq.v1.Discovery/List", user)
    assert discovery.admits("/meshmq.v1.Discovery/Announce", cluster)
    assert not discovery.admits("/meshmq.v1.Discovery/Announce", user)
    assert not discovery.admits("/meshmq.v1.Discovery/List", {USERNAME_KEY: "app", PASSWORD_KEY: "guess"})
    assert not discovery.admits("/meshmq.v1.Discovery/List", {})


def test_the_authenticator_identifies_users_whether_or_not_security_is_on():
    off = Authenticator(False, [("app", "app-pw")])
    assert off.identify({USERNAME_KEY: "app", PASSWORD_KEY: "app-pw"}) == "app"
    assert off.identify({USERNAME_KEY: "app", PASSWORD_KEY: "x"}) is None
    assert off.identify({}) is None
