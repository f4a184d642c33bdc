"""Security off is said out loud, and never the silent default off this machine;
a node's files are its own user's (docs/security.md, "Security off", "File modes")."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from meshmq.client import connect
from tests.fixtures.nodes import router_config, wait_for

pytestmark = pytest.mark.integration

BANNER = "SECURITY IS OFF (security-enabled: false)"
EVERY_INTERFACE = """
acceptors:
  - {name: grpc, host: 0.0.0.0, port: 0}
"""


def meshmq(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "meshmq.cli.main", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=60)


def test_a_router_on_every_interface_without_security_enabled_written_does_not_start(tmp_path):
    config = tmp_path / "node.yaml"
    config.write_text(router_config("open", tmp_path / "data", extra=EVERY_INTERFACE))
    done = meshmq("serve", "router", "--config", str(config), "--quiet", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert ("security-enabled: not set, and the router would listen beyond this machine on "
            "acceptors[0] (0.0.0.0:<any free port>)") in done.stderr
    assert "`security-enabled: false` to run it open on purpose" in done.stderr
    assert not (tmp_path / "data").exists()  # refused before anything was made


def test_meshmq_up_on_every_interface_does_not_start_and_says_how_to(tmp_path):
    done = meshmq("up", "--host", "0.0.0.0", "--port", "0", "--console-port", "0", "--quiet", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "acceptors[0] (0.0.0.0:<any free port>), gateway.listen (0.0.0.0:<any free port>)" in done.stderr
    assert "meshmq config default > node.yaml" in done.stderr
    assert not (tmp_path / "data").exists()


def test_security_enabled_false_written_starts_on_every_interface_with_the_banner(nodes):
    node = nodes.router("open", extra="security-enabled: false\n" + EVERY_INTERFACE)
    log = node.log_path.read_text()
    assert BANNER in log
    assert "acceptors[0] 0.0.0.0:<any free port>: client sessions (send, receive) and management" in log
    assert "quorum votes from any caller (no cluster-password)" in log


def test_the_banner_comes_with_security_left_out_on_loopback_and_not_with_security_on(nodes):
    assert BANNER in nodes.router("loopback").log_path.read_text()
    secured = nodes.router("secured", extra="""
        security-enabled: true
        users: [{username: app, password: app-pw}]
        """)
    assert "SECURITY IS OFF" not in secured.log_path.read_text()


def _modes(root: Path) -> dict[str, str]:
    """Every directory and file under root (root included), with its permission bits in octal."""
    found = {".": oct(stat.S_IMODE(root.stat().st_mode))}
    for path in root.rglob("*"):
        found[str(path.relative_to(root))] = oct(stat.S_IMODE(path.stat().st_mode))
    return found


@pytest.mark.parametrize("made_before", [False, True], ids=["new-data-directory", "data-directory-made-0755"])
async def test_a_nodes_data_directory_and_journal_are_its_users_only_under_umask_022(nodes, made_before):
    data = nodes.tmp / "node-data"
    if made_before:
        data.mkdir(mode=0o755)
        data.chmod(0o755)
    previous = os.umask(0o022)
    try:
        node = nodes.router("node")  # a `meshmq serve router` process, which inherits umask 022
    finally:
        os.umask(previous)
    async with await connect(node.url) as conn:
        session = await conn.session()
        producer = await session.create_producer("modes.q")
        await producer.send(b"kept", routing_type="anycast")
    wait_for(lambda: (data / "journal.db-wal").exists() and (data / "journal.db-shm").exists(), 10,
             "the journal's WAL files")
    modes = _modes(data)
    assert {"journal.db", "journal.db-wal", "journal.db-shm"} <= modes.keys()
    assert modes == {name: ("0o700" if (data / name).is_dir() else "0o600") for name in modes}
    if made_before:
        assert f"{data} was open to other users (mode 755): changed to 700" in node.log_path.read_text()
