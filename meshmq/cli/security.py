"""`meshmq user hash` (a salted hash of a user's password for the config, so
no plain-text password needs to be stored: meshmq/security/passwords.py) and
`meshmq certs ca|issue` (the cluster CA and its certificates:
meshmq/security/certs.py)."""

from __future__ import annotations

import sys

import click


@click.group()
def user() -> None:
    """Users of a node (security-enabled: true)."""


@user.command("hash")
@click.option("--password-stdin", is_flag=True, help="Read the password from the first line of stdin (scripts).")
def user_hash(password_stdin: bool) -> None:
    """Print a salted scrypt hash of a password, for users[].password."""
    from meshmq.security.passwords import hash_password

    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    if not password:
        raise click.UsageError("the password is empty")
    click.echo(hash_password(password))


@click.group()
def certs() -> None:
    """The cluster CA and node/client certificates (docs/security.md)."""


@certs.command("ca")
@click.option("--dir", "directory", required=True, type=click.Path(file_okay=False), help="Where ca.pem and ca-key.pem go.")
@click.option("--name", default="meshmq-cluster-ca", show_default=True, help="The CA's common name.")
@click.option("--days", default=3650, show_default=True, type=click.IntRange(1))
@click.option("--force", is_flag=True, help="Replace an existing CA.")
def certs_ca(directory: str, name: str, days: int, force: bool) -> None:
    """Create the cluster CA."""
    from pathlib import Path

    from meshmq.security.certs import CertError, create_ca

    try:
        cert, key = create_ca(Path(directory), common_name=name, days=days, force=force)
    except CertError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{cert}\n{key}  (keep it secret: it signs every certificate the cluster trusts)")


@certs.command("issue")
@click.option("--ca-dir", required=True, type=click.Path(file_okay=False), help="The CA made by `meshmq certs ca`.")
@click.option("--dir", "directory", required=True, type=click.Path(file_okay=False), help="Where the files go.")
@click.option("--name", required=True, help="The files' name (<name>.pem, <name>-key.pem) and common name.")
@click.option("--host", "hosts", multiple=True, help="A name or IP address clients dial (repeat for each).")
@click.option("--days", default=825, show_default=True, type=click.IntRange(1))
@click.option("--server-only", is_flag=True, help="Only for a listener (no clientAuth).")
@click.option("--client-only", is_flag=True, help="Only for a caller, e.g. with need-client-auth (no serverAuth).")
@click.option("--force", is_flag=True, help="Replace existing files.")
def certs_issue(ca_dir: str, directory: str, name: str, hosts: tuple[str, ...], days: int, server_only: bool,
                client_only: bool, force: bool) -> None:
    """Issue a certificate signed by the cluster CA."""
    from pathlib import Path

    from meshmq.security.certs import CertError, issue

    if server_only and client_only:
        raise click.UsageError("--server-only and --client-only exclude each other")
    try:
        cert, key = issue(Path(ca_dir), Path(directory), name, list(hosts), days=days,
                          server=not client_only, client=not server_only, force=force)
    except CertError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{cert}\n{key}")
