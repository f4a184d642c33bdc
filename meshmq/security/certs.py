"""A cluster CA and the certificates its nodes and clients present (`meshmq certs`).

The cluster trusts one CA: routers present a certificate from it on their
acceptors and journal listeners, clients and services verify peers against
it (`trustStorePath`, `trust-path`), and with `need-client-auth` the
listeners verify their callers the same way. This module drives `openssl`
(a Debian package the setup script installs) rather than adding a crypto
library: `cryptography` is not among meshmq's dependencies, not even
transitively. EC P-256 keys, SHA-256 signatures, subject alternative names
for every host a node is reached by — gRPC verifies the name a client
dialled against them, so a certificate for another host is refused. A
client-only certificate needs no host: a listener checks that the cluster's
CA signed its caller's certificate, not the caller's address.
"""

from __future__ import annotations

import ipaddress
import os
import re
import subprocess
import tempfile
from pathlib import Path

CA_CERT, CA_KEY = "ca.pem", "ca-key.pem"


class CertError(ValueError):
    """A certificate could not be made; the message says why."""


def create_ca(directory: Path, *, common_name: str = "meshmq-cluster-ca", days: int = 3650,
              force: bool = False) -> tuple[Path, Path]:
    """Write a new CA (`ca.pem`, `ca-key.pem` readable by its owner only) into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / CA_CERT, directory / CA_KEY
    _refuse_overwrite([cert, key], force)
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", str(key), "-out", str(cert), "-days", str(days), "-sha256",
             "-subj", _subject(common_name),
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    key.chmod(0o600)
    return cert, key


def issue(ca_dir: Path, out_dir: Path, name: str, hosts: list[str], *, days: int = 825,
          server: bool = True, client: bool = True, force: bool = False) -> tuple[Path, Path]:
    """Write `<name>.pem` and `<name>-key.pem`, signed by the CA in `ca_dir`, valid for `hosts`."""
    ca_cert, ca_key = ca_dir / CA_CERT, ca_dir / CA_KEY
    missing = [str(p) for p in (ca_cert, ca_key) if not p.is_file()]
    if missing:
        raise CertError(f"no CA in {ca_dir}: missing {', '.join(missing)} (create one with `meshmq certs ca`)")
    if not (server or client):
        raise CertError("a certificate must be for a server, a client or both")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise CertError(f"--name {name!r}: it names the files, so letters, digits, '.', '_' and '-' only")
    if server and not hosts:
        raise CertError("a server certificate needs at least one --host: the name or IP address clients dial")
    sans = [_san(h) for h in hosts]
    out_dir.mkdir(parents=True, exist_ok=True)
    cert, key = out_dir / f"{name}.pem", out_dir / f"{name}-key.pem"
    _refuse_overwrite([cert, key], force)
    usages = ",".join(u for u, on in (("serverAuth", server), ("clientAuth", client)) if on)
    extensions = (
        (f"subjectAltName={','.join(sans)}\n" if sans else "")
        + f"extendedKeyUsage={usages}\n"
        # No keyEncipherment: RFC 5480 forbids it with an EC key (TLS signs with it, never encrypts to it).
        + "keyUsage=critical,digitalSignature\n"
        + "basicConstraints=critical,CA:FALSE\n"
    )
    with tempfile.TemporaryDirectory(prefix="meshmq-certs-") as tmp:
        csr, ext = Path(tmp) / "req.csr", Path(tmp) / "ext.cnf"
        ext.write_text(extensions)
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", str(key), "-out", str(csr), "-subj", _subject(name))
        _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca_cert), "-CAkey", str(ca_key), "-CAcreateserial",
                 "-CAserial", str(Path(tmp) / "ca.srl"), "-out", str(cert), "-days", str(days), "-sha256",
                 "-extfile", str(ext))
    key.chmod(0o600)
    return cert, key


def _subject(common_name: str) -> str:
    """openssl's -subj for a common name; escaped, so a '/' or '+' in it cannot add fields."""
    return "/CN=" + re.sub(r"([\\/+=])", r"\\\1", common_name)


def _san(host: str) -> str:
    host = host.strip()
    try:
        return f"IP:{ipaddress.ip_address(host)}"
    except ValueError:
        pass
    if not re.fullmatch(r"[A-Za-z0-9*._-]{1,253}", host):
        raise CertError(f"--host {host!r} is neither an IP address nor a host name")
    return f"DNS:{host}"


def _refuse_overwrite(paths: list[Path], force: bool) -> None:
    existing = [str(p) for p in paths if p.exists()]
    if existing and not force:
        raise CertError(f"{', '.join(existing)} already exist; pass --force to replace them")


def _openssl(*args: str) -> None:
    try:
        subprocess.run(["openssl", *args], check=True, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "OPENSSL_CONF": "/dev/null"})
    except FileNotFoundError:
        raise CertError("openssl is not installed (apt-get install openssl)") from None
    except subprocess.CalledProcessError as exc:
        raise CertError(f"openssl {args[0]} failed: {exc.stderr.strip()}") from None
