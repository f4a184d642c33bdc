"""TLS for a launched cluster: the cluster file's `tls: {ca-dir: ...}`.

`up` issues every process it starts (each node, the discovery service) a
certificate from that CA for the names a local client dials, 127.0.0.1 and
localhost, into the process's own directory, and the listener serves it.
The certificates are issued again at every `up`, never reused: openssl takes
a few milliseconds per certificate, and a certificate kept from an earlier
`up` might come from a CA that was replaced since (`meshmq certs ca --force`),
which clients would then refuse.

The CA itself is the operator's (`meshmq certs ca`): the launcher reads its
key to sign, and never creates or changes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from meshmq.security.certs import CA_CERT, CA_KEY, CertError, issue

# What a client on this machine dials: the announced connector is 127.0.0.1:<port>.
CERT_HOSTS = ["127.0.0.1", "localhost"]
# Each process's certificate: <run>/<name>/tls/<name>.pem and <name>-key.pem.
CERT_DIRECTORY = "tls"


@dataclass(frozen=True)
class Certificate:
    """A process's certificate and key, the paths its listener config names,
    and the CA that signed it (what a router's links to the others trust)."""

    cert: Path
    key: Path
    ca: Path


def ca_problem(ca_dir: Path) -> str | None:
    """Why `ca_dir` cannot sign the cluster's certificates, or None."""
    missing = [name for name in (CA_CERT, CA_KEY) if not (ca_dir / name).is_file()]
    if not missing:
        return None
    return (f"no CA in {ca_dir} (missing {', '.join(missing)}): create one with "
            f"`meshmq certs ca --dir {ca_dir}`, or point tls.ca-dir at an existing one")


def issue_certificates(ca_dir: Path, directories: dict[str, Path]) -> dict[str, Certificate]:
    """A certificate for each process name, into `<its directory>/tls/`, replacing any there."""
    issued = {}
    for name, directory in directories.items():
        try:
            cert, key = issue(ca_dir, directory / CERT_DIRECTORY, name, CERT_HOSTS, force=True)
        except CertError as exc:
            raise CertError(f"the certificate of {name}: {exc}") from None
        issued[name] = Certificate(cert, key, ca_dir / CA_CERT)
    return issued
