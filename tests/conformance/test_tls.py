"""Conformance: TLS and credentials together. One router for the module with a
TLS-only acceptor and security on, its certificate from a CA made by `meshmq
certs`; the SDK verifies the router against `ca_file` and sends its
credentials only over the verified channel."""

from __future__ import annotations

import pytest

from tests.fixtures.nodes import Nodes
from tests.integration.test_security import meshmq_certs

from .conftest import b64, body, unique

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A CA (ca/ca.pem) and a certificate for 127.0.0.1 it signed; and a CA that signed nothing here."""
    d = tmp_path_factory.mktemp("conformance-certs")
    meshmq_certs("ca", "--dir", d / "ca")
    meshmq_certs("issue", "--ca-dir", d / "ca", "--dir", d, "--name", "server", "--host", "127.0.0.1")
    meshmq_certs("ca", "--dir", d / "other-ca", "--name", "not-ours")
    return d


@pytest.fixture(scope="module")
def router(tmp_path_factory, certs):
    nodes = Nodes(tmp_path_factory.mktemp("conformance-tls"))
    yield nodes.router("tls", extra=f"""
        acceptors:
          - {{name: tls, host: 127.0.0.1, port: 0, ssl-enabled: true,
              cert-path: {certs / 'server.pem'}, key-path: {certs / 'server-key.pem'}}}
        security-enabled: true
        users:
          - {{username: app, password: s3cret, roles: [apps]}}
        security-settings:
          "#": {{send: [apps], consume: [apps], create-address: [apps], create-durable-queue: [apps],
                create-non-durable-queue: [apps], manage: [apps]}}
        """)
    nodes.stop_all()


def test_a_client_that_trusts_the_routers_ca_sends_and_receives_over_tls(driver, router, certs):
    conn = driver.request("connect", uri=router.url, user="app", password="s3cret",
                          ca_file=str(certs / "ca" / "ca.pem"))["connection"]
    try:
        session = driver.request("session", connection=conn)["session"]
        q = unique("conf.tls")
        driver.request("create_queue", session=session, address=q, queue=q)
        producer = driver.request("producer", session=session, address=q)["producer"]
        driver.request("send", producer=producer, body=b64("encrypted"))
        consumer = driver.request("consumer", session=session, queue=q)["consumer"]
        m = driver.request("receive", consumer=consumer, timeout_ms=5000)["message"]
        assert body(m) == b"encrypted"
        driver.request("ack", message=m["handle"])
    finally:
        driver.request("close", handle=conn)


def test_a_router_whose_certificate_the_client_cannot_verify_is_not_reached(driver, router, certs):
    """A CA that did not sign the router's certificate: the handshake fails, the
    client reports the node unreachable (CONNECTION_FAILED), never UNAUTHENTICATED,
    since the password never left it."""
    err = driver.error("connect", uri=f"{router.url}?callTimeout=3000", user="app", password="s3cret",
                       ca_file=str(certs / "other-ca" / "ca.pem"))
    assert err.reason == "CONNECTION_FAILED", err


def test_wrong_credentials_over_tls_are_refused_with_unauthenticated(driver, router, certs):
    err = driver.error("connect", uri=router.url, user="app", password="wrong", ca_file=str(certs / "ca" / "ca.pem"))
    assert err.reason == "UNAUTHENTICATED", err
