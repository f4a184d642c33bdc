"""The `meshmq` command's top level: the command groups of other modules are
loaded when run or listed, and a plain start (what `meshmq serve` pays before
its service) imports none of them."""

from __future__ import annotations

import json
import subprocess
import sys

import click

from meshmq.cli.main import main


def _probe(code: str) -> dict:
    """What `code`, run in a fresh interpreter, prints as its last line (JSON)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_every_command_listed_loads_under_its_own_name():
    ctx = click.Context(main)
    names = main.list_commands(ctx)
    assert {"analytics", "certs", "cluster", "connection", "perf", "user", "verify", "serve", "up", "queue"} <= set(names)
    for name in names:
        command = main.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name, name
    assert main.get_command(ctx, "nosuch") is None


def test_the_command_groups_of_other_modules_are_not_imported_until_used():
    probe = (
        "import json, sys\n"
        "import meshmq.cli.main\n"
        "before = sorted(m for m in sys.modules if m.startswith('meshmq.cli.'))\n"
        "from click.testing import CliRunner\n"
        "result = CliRunner().invoke(meshmq.cli.main.main, ['verify', '--help'])\n"
        "after = sorted(m for m in sys.modules if m.startswith('meshmq.cli.'))\n"
        "print(json.dumps({'before': before, 'after': after, 'exit': result.exit_code}))\n"
    )
    got = _probe(probe)
    lazy = {"meshmq.cli.analytics", "meshmq.cli.cluster", "meshmq.cli.connections", "meshmq.cli.perf",
            "meshmq.cli.security", "meshmq.cli.verify"}
    assert not lazy & set(got["before"]), got["before"]
    assert got["exit"] == 0 and "meshmq.cli.verify" in got["after"]
    assert not (lazy - {"meshmq.cli.verify"}) & set(got["after"]), got["after"]


def test_a_service_process_holds_the_collector_while_it_loads_and_freezes_what_it_loaded():
    probe = (
        "import gc, json\n"
        "from meshmq.runtime import defer_collection, settle_heap\n"
        "defer_collection()\n"
        "held = gc.isenabled()\n"
        "import services.router.service\n"
        "settle_heap()\n"
        "print(json.dumps({'held': held, 'enabled': gc.isenabled(), 'frozen': gc.get_freeze_count()}))\n"
    )
    got = _probe(probe)
    assert got["held"] is False and got["enabled"] is True and got["frozen"] > 10_000  # the imports' objects (~79,000 for the router)
