"""Optional username/password authentication and TLS on the client listener."""

from __future__ import annotations

import subprocess

import pytest

from meshmq.client import AuthenticationError, ConnectionFailedError, connect

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A throwaway CA and a server certificate for 127.0.0.1, made with openssl."""
    d = tmp_path_factory.mktemp("certs")

    def run(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=meshmq-test-ca")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.pem", "-days", "2", "-extfile", "san.ext")
    return d


async def test_wrong_or_missing_credentials_are_refused(nodes):
    node = nodes.router(
        "secured",
        extra="""
        security-enabled: true
        users:
          - {username: app, password: s3cret}
        """,
    )
    host_port = node.endpoint
    with pytest.raises(AuthenticationError):
        await connect(f"meshmq://app:wrong@{host_port}")
    with pytest.raises(AuthenticationError):
        await connect(f"meshmq://{host_port}")
    async with await connect(f"meshmq://app:s3cret@{host_port}") as conn:
        s = await conn.session()
        p = await s.create_producer("secure.q")
        await p.send(b"hi", routing_type="anycast")
        c = await s.create_consumer("secure.q")
        m = await c.receive(5)
        assert m.body == b"hi" and m.proto.user_id == "app"


async def test_tls_listener(nodes, certs):
    node = nodes.router(
        "tls",
        extra=f"""
        acceptors:
          - name: tls
            host: 127.0.0.1
            port: 0
            ssl-enabled: true
            cert-path: {certs / 'server.pem'}
            key-path: {certs / 'server.key'}
        """,
    )
    url = f"meshmq://{node.endpoint}?sslEnabled=true&trustStorePath={certs / 'ca.pem'}"
    async with await connect(url) as conn:
        s = await conn.session()
        p = await s.create_producer("tls.q")
        await p.send(b"encrypted", routing_type="anycast")
        c = await s.create_consumer("tls.q")
        assert (await c.receive(5)).body == b"encrypted"
    with pytest.raises(ConnectionFailedError):
        await connect(f"meshmq://{node.endpoint}?callTimeout=3000")


async def test_router_to_journal_over_tls(nodes, certs):
    """The journal service's listener serves TLS and the router trusts it."""
    from tests.fixtures.nodes import ServiceProcess, free_port, router_config

    port = free_port()
    journal = ServiceProcess(
        nodes.tmp, "tls-journal", "journal",
        router_config("tls-journal", nodes.tmp / "tls-journal-data") .replace(
            "  listen: {host: 127.0.0.1, port: 0}",
            f"  listen: {{host: 127.0.0.1, port: {port}, ssl-enabled: true, "
            f"cert-path: {certs / 'server.pem'}, key-path: {certs / 'server.key'}}}",
        ),
    )
    nodes.started.append(journal)
    journal.start()
    node = nodes.router(
        "tls-journal-router",
        extra=f"""
        journal:
          address: 127.0.0.1:{port}
          ssl-enabled: true
          trust-path: {certs / 'ca.pem'}
        """,
    )
    async with await connect(node.url) as conn:
        s = await conn.session()
        p = await s.create_producer("via-tls-journal")
        await p.send(b"stored over TLS", routing_type="anycast")
        c = await s.create_consumer("via-tls-journal")
        assert (await c.receive(5)).body == b"stored over TLS"
