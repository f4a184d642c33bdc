"""Optional username/password authentication and TLS on the client listener."""

from __future__ import annotations

import subprocess

import pytest

from meshmq.client import AuthenticationError, ConnectionFailedError, connect

pytestmark = pytest.mark.integration


def meshmq_certs(*args) -> None:
    import sys

    subprocess.run([sys.executable, "-m", "meshmq.cli.main", "certs", *map(str, args)],
                   check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A cluster CA and a certificate for 127.0.0.1, made by `meshmq certs`
    (server.pem/server-key.pem, the CA in ca/)."""
    d = tmp_path_factory.mktemp("certs")
    meshmq_certs("ca", "--dir", d / "ca")
    meshmq_certs("issue", "--ca-dir", d / "ca", "--dir", d, "--name", "server", "--host", "127.0.0.1")
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
            key-path: {certs / 'server-key.pem'}
        """,
    )
    url = f"meshmq://{node.endpoint}?sslEnabled=true&trustStorePath={certs / 'ca' / 'ca.pem'}"
    async with await connect(url) as conn:
        s = await conn.session()
        p = await s.create_producer("tls.q")
        await p.send(b"encrypted", routing_type="anycast")
        c = await s.create_consumer("tls.q")
        assert (await c.receive(5)).body == b"encrypted"
    with pytest.raises(ConnectionFailedError):
        await connect(f"meshmq://{node.endpoint}?callTimeout=3000")


async def test_a_certificate_from_another_ca_or_for_another_host_is_refused(nodes, certs, tmp_path):
    """The client verifies the node: a certificate signed by a CA it does not
    trust, or by its CA for a name it did not dial, fails the handshake."""
    meshmq_certs("ca", "--dir", tmp_path / "other-ca", "--name", "not-ours")
    meshmq_certs("issue", "--ca-dir", tmp_path / "other-ca", "--dir", tmp_path, "--name", "stranger",
                 "--host", "127.0.0.1")
    meshmq_certs("issue", "--ca-dir", certs / "ca", "--dir", tmp_path, "--name", "elsewhere", "--host", "db.example")
    for name in ("stranger", "elsewhere"):
        node = nodes.router(f"tls-{name}", extra=f"""
            acceptors:
              - {{name: tls, host: 127.0.0.1, port: 0, ssl-enabled: true,
                  cert-path: {tmp_path / f'{name}.pem'}, key-path: {tmp_path / f'{name}-key.pem'}}}
            """)
        with pytest.raises(ConnectionFailedError):
            await connect(f"meshmq://{node.endpoint}?sslEnabled=true&callTimeout=3000"
                          f"&trustStorePath={certs / 'ca' / 'ca.pem'}")


async def test_router_to_journal_over_tls(nodes, certs):
    """The journal service's listener serves TLS and the router trusts it."""
    from tests.fixtures.nodes import ServiceProcess, free_port, router_config

    port = free_port()
    journal = ServiceProcess(
        nodes.tmp, "tls-journal", "journal",
        router_config("tls-journal", nodes.tmp / "tls-journal-data") .replace(
            "  listen: {host: 127.0.0.1, port: 0}",
            f"  listen: {{host: 127.0.0.1, port: {port}, ssl-enabled: true, "
            f"cert-path: {certs / 'server.pem'}, key-path: {certs / 'server-key.pem'}}}",
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
          trust-path: {certs / 'ca' / 'ca.pem'}
        """,
    )
    async with await connect(node.url) as conn:
        s = await conn.session()
        p = await s.create_producer("via-tls-journal")
        await p.send(b"stored over TLS", routing_type="anycast")
        c = await s.create_consumer("via-tls-journal")
        assert (await c.receive(5)).body == b"stored over TLS"


async def test_a_hashed_password_from_meshmq_user_hash_logs_in(nodes):
    import sys

    hashed = subprocess.run(
        [sys.executable, "-m", "meshmq.cli.main", "user", "hash", "--password-stdin"],
        input="s3cret\n", capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()
    assert hashed.startswith("scrypt$") and "s3cret" not in hashed
    node = nodes.router("hashed", extra=f"""
        security-enabled: true
        users:
          - {{username: app, password: '{hashed}'}}
          - {{username: legacy, password: plain}}
        """)
    with pytest.raises(AuthenticationError):
        await connect(f"meshmq://app:wrong@{node.endpoint}")
    async with await connect(f"meshmq://app:s3cret@{node.endpoint}") as conn:
        s = await conn.session()
        await (await s.create_producer("hashed.q")).send(b"in", routing_type="anycast")
        assert (await (await s.create_consumer("hashed.q")).receive(5)).body == b"in"
    log = node.log_path.read_text()
    assert "users legacy have plain-text passwords" in log  # the hashed one is not named


def test_certs_refuses_to_overwrite_or_to_issue_without_a_ca(tmp_path):
    import sys

    def run(*args):
        return subprocess.run([sys.executable, "-m", "meshmq.cli.main", "certs", *map(str, args)],
                              capture_output=True, text=True, timeout=60)

    assert run("ca", "--dir", tmp_path / "ca").returncode == 0
    again = run("ca", "--dir", tmp_path / "ca")
    assert again.returncode != 0 and "already exist; pass --force" in again.stderr
    nowhere = run("issue", "--ca-dir", tmp_path / "none", "--dir", tmp_path, "--name", "n", "--host", "h")
    assert nowhere.returncode != 0 and "no CA in" in nowhere.stderr
    bad_host = run("issue", "--ca-dir", tmp_path / "ca", "--dir", tmp_path, "--name", "n", "--host", "a b")
    assert bad_host.returncode != 0 and "neither an IP address nor a host name" in bad_host.stderr
    assert not (tmp_path / "n.pem").exists()


async def test_a_tls_handshake_slower_than_100_ms_completes_at_the_first_attempt(nodes, certs):
    """Over a 2 x 80 ms link a TLS handshake takes ~0.3 s. gRPC gives each
    connection attempt `grpc.min_reconnect_backoff_ms` (its minimum connect
    timeout); at 100 ms every attempt failed half-way and a new connection
    was opened until the backoff outgrew the handshake."""
    import grpc

    from meshmq.aio import wait_for
    from meshmq.transport import channel_credentials, open_channel
    from tests.fixtures.tcp_proxy import TcpProxy

    node = nodes.router("tls-far", extra=f"""
        acceptors:
          - {{name: tls, host: 127.0.0.1, port: 0, ssl-enabled: true,
              cert-path: {certs / 'server.pem'}, key-path: {certs / 'server-key.pem'}}}
        """)
    link = TcpProxy(node.endpoint, delay=0.08).start()
    channel = open_channel(link.endpoint, credentials=channel_credentials(certs / "ca" / "ca.pem"))
    try:
        await wait_for(channel.channel_ready(), 10)
        assert channel.get_state() is grpc.ChannelConnectivity.READY
        assert link.accepted == 1, f"{link.accepted} connections opened for one channel"
    finally:
        await channel.close()
        link.close()
