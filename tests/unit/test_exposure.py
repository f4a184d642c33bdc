"""meshmq/security/exposure.py: which listeners a process binds, which of them
reach beyond loopback, when security off may not start, and what the banner says."""

from __future__ import annotations

import pytest

from meshmq.config.loader import load_config_text
from meshmq.security.exposure import is_loopback, listener_uses, open_banner, start_problems, start_warnings


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("0.0.0.0", False), ("::", False), ("10.0.0.7", False), ("192.168.1.20", False),
    ("no-such-host.invalid", False),
])
def test_is_loopback(host, loopback):
    assert is_loopback(host) is loopback


ALL_LISTENERS = """
acceptors:
  - {name: a, host: 0.0.0.0, port: 61616}
  - {name: b, host: 127.0.0.1, port: 61617}
journal: {listen: {host: 10.0.0.7, port: 61626}}
discovery-groups: {dg: {static-connectors: ["127.0.0.1:61616"]}}
discovery: {listen: {host: "::", port: 61636}}
ha-coordinator: {listen: {host: 0.0.0.0, port: 61646}}
gateway: {enabled: true, listen: {host: 0.0.0.0, port: 8161}}
metrics: {enabled: true, host: 0.0.0.0, port: 9100}
"""


@pytest.mark.parametrize(("service", "keys"), [
    ("router", ["acceptors[0]", "acceptors[1]", "gateway.listen", "metrics"]),
    ("journal", ["journal.listen", "metrics"]),
    ("discovery", ["discovery.listen", "metrics"]),
    ("ha-coordinator", ["ha-coordinator.listen", "metrics"]),
    ("gateway", ["gateway.listen"]),
])
def test_each_process_checks_the_listeners_it_binds(service, keys):
    config = load_config_text(ALL_LISTENERS)
    assert [u.key for u in listener_uses(config, service)] == keys
    [problem] = start_problems(config, service)
    beyond = [k for k in keys if k != "acceptors[1]"]  # the one on loopback is not named
    assert problem.startswith(f"security-enabled: not set, and the {service} would listen beyond this machine on "
                              f"{beyond[0]} (")
    for key in beyond:
        assert f"{key} (" in problem
    assert "acceptors[1]" not in problem


def test_security_off_written_or_security_on_starts_anywhere_and_loopback_starts_either_way():
    assert start_problems(load_config_text("security-enabled: false\n" + ALL_LISTENERS), "router") == []
    secured = "security-enabled: true\nusers: [{username: u, password: p}]\n"
    assert start_problems(load_config_text(secured + ALL_LISTENERS), "router") == []
    assert start_problems(load_config_text("acceptors: [{host: localhost, port: 0}]\n"), "router") == []


def test_the_banner_names_every_listener_and_what_a_cluster_password_closes():
    open_ = open_banner(load_config_text("security-enabled: false\n" + ALL_LISTENERS), "router")
    assert open_.splitlines()[0] == "SECURITY IS OFF (security-enabled: false): this router lets anyone who can reach it use it:"
    assert "  acceptors[0] 0.0.0.0:61616: client sessions (send, receive) and management" in open_
    assert "cluster links (messages into any queue) and quorum votes from any caller (no cluster-password)" in open_
    assert "  gateway.listen 0.0.0.0:8161: console and REST API" in open_
    assert "  metrics 0.0.0.0:9100: Prometheus metrics over HTTP" in open_
    assert "To close it: security-enabled: true" in open_.splitlines()[-1]
    closed = open_banner(load_config_text("cluster-password: s3cret-s3cret\n"), "journal")
    assert "journal.listen 127.0.0.1:61626: the journal service (read, write and fence every stored message) " \
           "only with the cluster-password" in closed
    assert open_banner(load_config_text("security-enabled: true\nusers: [{username: u, password: p}]\n"),
                       "router") is None


SECURED_CLUSTER = "security-enabled: true\nusers: [{username: u, password: p}]\ncluster-password: s3cret-s3cret\n"


def test_a_secured_cluster_in_plain_text_beyond_loopback_needs_insecure_cluster_written():
    """Only the gRPC listeners that carry the cluster's traffic count; TLS or loopback ones are fine."""
    config = load_config_text(SECURED_CLUSTER + ALL_LISTENERS)
    [problem] = start_problems(config, "router")
    assert problem.startswith("insecure-cluster: not set, and the router would serve the cluster's traffic in "
                              "plain text beyond this machine on acceptors[0] (0.0.0.0:61616):")
    assert "acceptors[1]" not in problem and "gateway" not in problem and "metrics" not in problem
    for service, key in (("journal", "journal.listen"), ("discovery", "discovery.listen"),
                         ("ha-coordinator", "ha-coordinator.listen")):
        [problem] = start_problems(config, service)
        assert f"on {key} (" in problem, problem
    assert start_problems(config, "gateway") == []
    assert start_warnings(config, "router") == []

    allowed = load_config_text(SECURED_CLUSTER + "insecure-cluster: true\n" + ALL_LISTENERS)
    assert start_problems(allowed, "router") == []
    [warning] = start_warnings(allowed, "router")
    assert warning.startswith("insecure-cluster: true: the cluster's traffic goes in plain text beyond this machine "
                              "on acceptors[0] (0.0.0.0:61616)")


def test_without_a_cluster_password_or_with_tls_nothing_more_is_asked(tmp_path):
    on_loopback = load_config_text(SECURED_CLUSTER + "acceptors: [{host: 127.0.0.1, port: 61616}]\n")
    assert start_problems(on_loopback, "router") == [] and start_warnings(on_loopback, "router") == []
    no_password = load_config_text(SECURED_CLUSTER.replace("cluster-password: s3cret-s3cret\n", "")
                                   + "acceptors: [{host: 0.0.0.0, port: 61616}]\n")
    assert start_problems(no_password, "router") == []
    for name in ("cert.pem", "key.pem"):
        (tmp_path / name).write_text("not read here")
    tls = load_config_text(SECURED_CLUSTER + f"acceptors: [{{host: 0.0.0.0, port: 61616, ssl-enabled: true, "
                                             f"cert-path: {tmp_path / 'cert.pem'}, key-path: {tmp_path / 'key.pem'}}}]\n")
    assert start_problems(tls, "router") == []
