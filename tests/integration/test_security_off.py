"""Security off is said out loud, and never the silent default off this machine
(docs/security.md, "Security off")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.nodes import router_config

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
