"""Conformance: the session protocol's version (docs/protocol.md section 14).
A router set to refuse clients from before versions (min-client-protocol-version:
2) serves each SDK, which says the protocol it speaks when it opens a session."""

from __future__ import annotations

import pytest

from tests.fixtures.nodes import Nodes

from .conftest import b64, body, unique

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def strict_router(tmp_path_factory):
    nodes = Nodes(tmp_path_factory.mktemp("conformance-versioning"))
    yield nodes.router("strict", extra="min-client-protocol-version: 2\n")
    nodes.stop_all()


def test_a_router_that_refuses_clients_older_than_protocol_2_serves_the_sdk(driver, strict_router):
    conn = driver.request("connect", uri=strict_router.url)["connection"]
    try:
        session = driver.request("session", connection=conn)["session"]
        q = unique("conf.version")
        driver.request("create_queue", session=session, address=q, queue=q)
        producer = driver.request("producer", session=session, address=q)["producer"]
        driver.request("send", producer=producer, body=b64("versioned"))
        consumer = driver.request("consumer", session=session, queue=q)["consumer"]
        got = driver.request("receive", consumer=consumer, timeout_ms=5000)["message"]
        assert got is not None and body(got) == b"versioned"
    finally:
        driver.request("close", handle=conn)
