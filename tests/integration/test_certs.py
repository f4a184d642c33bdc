"""`meshmq certs` as an operator runs it, and proof that what it makes works:
a gRPC listener requiring client certificates admits a caller certified by
the cluster's CA and refuses every other."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grpc
import pytest

pytestmark = pytest.mark.integration

METHOD = "/meshmq.test.Echo/Echo"


def meshmq(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "meshmq.cli.main", *args], capture_output=True, text=True, timeout=60)


def ok(*args: str) -> str:
    result = meshmq(*args)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    """The cluster's CA, a node and a client it certified, and a client of another CA."""
    d = tmp_path_factory.mktemp("pki")
    ok("certs", "ca", "--dir", str(d / "ca"))
    ok("certs", "ca", "--dir", str(d / "other-ca"), "--name", "intruder-ca")
    ok("certs", "issue", "--ca-dir", str(d / "ca"), "--dir", str(d), "--name", "node1",
       "--host", "127.0.0.1", "--host", "localhost", "--server-only")
    ok("certs", "issue", "--ca-dir", str(d / "ca"), "--dir", str(d), "--name", "app", "--client-only")
    ok("certs", "issue", "--ca-dir", str(d / "other-ca"), "--dir", str(d), "--name", "intruder", "--client-only")
    return d


def openssl_text(cert: Path) -> str:
    return subprocess.run(["openssl", "x509", "-in", str(cert), "-noout", "-text"],
                          capture_output=True, text=True, check=True).stdout


def test_the_node_certificate_names_its_hosts_and_its_use(pki):
    text = openssl_text(pki / "node1.pem")
    assert "IP Address:127.0.0.1" in text and "DNS:localhost" in text
    assert "TLS Web Server Authentication" in text and "TLS Web Client Authentication" not in text
    assert "Subject: CN = node1" in text and "Issuer: CN = meshmq-cluster-ca" in text
    client = openssl_text(pki / "app.pem")
    assert "TLS Web Client Authentication" in client and "TLS Web Server Authentication" not in client
    assert "Subject Alternative Name" not in client


def test_keys_are_private_and_nothing_is_overwritten(pki):
    for key in (pki / "ca" / "ca-key.pem", pki / "node1-key.pem", pki / "app-key.pem"):
        assert key.stat().st_mode & 0o777 == 0o600, key
    before = (pki / "ca" / "ca.pem").read_bytes()
    again = meshmq("certs", "ca", "--dir", str(pki / "ca"))
    assert again.returncode == 1 and "already exist; pass --force" in again.stderr
    assert (pki / "ca" / "ca.pem").read_bytes() == before


@pytest.mark.parametrize("args, says", [
    pytest.param(["--ca-dir", "no-such-ca", "--name", "n", "--host", "127.0.0.1"], "no CA in no-such-ca: missing",
                 id="no CA"),
    pytest.param(["--name", "n", "--host", "bad host"], "--host 'bad host' is neither an IP address nor a host name",
                 id="bad host"),
    pytest.param(["--name", "n"], "a server certificate needs at least one --host", id="server without host"),
    pytest.param(["--name", "../n", "--host", "127.0.0.1"], "--name '../n'", id="name outside --dir"),
    pytest.param(["--name", "n", "--host", "127.0.0.1", "--client-only", "--server-only"], "exclude each other",
                 id="neither server nor client"),
])
def test_issue_says_what_is_wrong(pki, tmp_path, args, says):
    if "--ca-dir" not in args:
        args = ["--ca-dir", str(pki / "ca"), *args]
    result = meshmq("certs", "issue", "--dir", str(tmp_path), *args)
    assert result.returncode != 0 and says in result.stderr
    assert "Traceback" not in result.stderr and not list(tmp_path.glob("*.pem"))


@pytest.fixture
async def mtls_port(pki):
    """A gRPC listener serving node1's certificate, requiring a client certificate from the cluster's CA;
    its one method answers with the caller's certified name."""

    async def echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        return b",".join(context.auth_context()["x509_common_name"]) + b":" + request

    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        "meshmq.test.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(echo)}),))
    credentials = grpc.ssl_server_credentials(
        [((pki / "node1-key.pem").read_bytes(), (pki / "node1.pem").read_bytes())],
        root_certificates=(pki / "ca" / "ca.pem").read_bytes(), require_client_auth=True)
    port = server.add_secure_port("127.0.0.1:0", credentials)
    await server.start()
    yield port
    await server.stop(None)


async def call(pki: Path, port: int, client: str | None, *, host: str = "127.0.0.1", options=()) -> bytes:
    key, cert = ((pki / f"{client}-key.pem").read_bytes(), (pki / f"{client}.pem").read_bytes()) if client else (None, None)
    credentials = grpc.ssl_channel_credentials((pki / "ca" / "ca.pem").read_bytes(), key, cert)
    async with grpc.aio.secure_channel(f"{host}:{port}", credentials, options=options) as channel:
        return await channel.unary_unary(METHOD)(b"ping", timeout=5)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_a_client_certified_by_the_cluster_ca_is_served(pki, mtls_port, host):
    assert await call(pki, mtls_port, "app", host=host) == b"app:ping"


@pytest.mark.parametrize("client", ["intruder", None], ids=["another CA's certificate", "no certificate"])
async def test_a_client_without_the_cluster_ca_certificate_is_refused(pki, mtls_port, client):
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call(pki, mtls_port, client)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_a_node_certificate_is_refused_for_a_host_it_does_not_name(pki, mtls_port):
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call(pki, mtls_port, "app", options=[("grpc.ssl_target_name_override", "n2.internal")])
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "Hostname Verification" in refused.value.details()
