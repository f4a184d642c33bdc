"""What the whole suite shares: the process fixtures, and how tests are spread
over pytest-xdist workers (scripts/test.sh runs `-n 4 --dist loadgroup`).

Every fixture is safe under workers: ports are picked at run time from a slice of
the range per worker, with a retry when another process takes one first
(meshmq/ports.py), data lives in each
test's tmp_path or a mkdtemp of its own, and a session-scoped fixture (etcd,
PostgreSQL, the shared router) is one per worker. A few tests must still not
share a worker with their own kind: they go to one xdist group (one worker,
one after another), listed in `SERIAL_GROUPS`; and the tests of a module
that share a module-scoped fixture go to one worker too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pytest

from meshmq.ports import SLICE_ENV

pytest_plugins = ["tests.fixtures.nodes", "tests.fixtures.postgres", "tests.fixtures.etcd"]

TESTS = Path(__file__).resolve().parent

# folder or file under tests/ -> xdist group: its tests run on one worker, in order.
SERIAL_GROUPS = {
    # one SparkSession (a JVM running local[2]) per worker is CPU the other
    # workers need; grouped, the session starts once.
    "spark": "spark",
    # `docker-compose build` and a whole stack: one at a time, and one engine.
    "deploy": "docker",
}


def _relative(item: pytest.Item) -> Path:
    return Path(str(item.path)).resolve().relative_to(TESTS)


def _under(relative: Path, prefix: str) -> bool:
    """Whether a test file (relative to tests/) is `prefix` or in its folder."""
    parts = Path(prefix).parts
    return relative.parts[: len(parts)] == parts


def serial_group(relative: Path) -> str | None:
    """The xdist group a test file belongs to, by its folder or its own path."""
    return next((group for prefix, group in SERIAL_GROUPS.items() if _under(relative, prefix)), None)


# `scripts/test.sh --quick`, the edit-loop tier: tests/unit, these modules of the
# other folders (they start no process: config, deciders, in-process cores),
# and every test whose only process is the worker's shared router.
QUICK_MODULES = (
    "unit",
    "cluster/test_compose.py",
    "cluster/test_spec.py",
    "discovery/test_config.py",
    "discovery/test_core.py",
    "discovery/test_deciders.py",
)
# Fixtures that start processes of the test's own: a test using one is not quick.
OWN_PROCESSES = frozenset({"nodes", "etcd", "etcd_session", "pg_server"})


def quick(relative: Path, fixtures: Iterable[str]) -> bool:
    """Whether a test is in the quick tier (see QUICK_MODULES)."""
    if any(_under(relative, m) for m in QUICK_MODULES):
        return True
    names = set(fixtures)
    return "shared_router" in names and not names & OWN_PROCESSES


def shares_a_module_fixture(item: pytest.Item) -> bool:
    """Whether the test uses a module- or class-scoped fixture (a router, a
    cluster, certificates made once for the module's tests)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(d.scope in ("module", "class") for defs in info.name2fixturedefs.values() for d in defs)


def _name_the_group(item: pytest.Item, group: str) -> None:
    """Suffix the test's node id with `@group`, which is how `--dist loadgroup`
    finds a group. pytest-xdist 3.8 does it by assigning `item._nodeid`, which
    pytest 9 no longer reads (the id is `item._id`): without this, every
    xdist_group is silently ignored and a module fixture is set up on every
    worker. Harmless where xdist already did it."""
    if "@" in item.nodeid or not hasattr(item, "_id"):
        return
    from _pytest.nodeid import coerce_node_id

    item._id = coerce_node_id(f"{item.nodeid}@{group}")


def pytest_configure(config: pytest.Config) -> None:
    """Each xdist worker picks ports from a slice of its own (meshmq/ports.py):
    a port one worker has picked but its process has not bound yet is never
    another worker's pick. Child processes (routers, `meshmq cluster up`)
    inherit the slice."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if worker.startswith("gw") and count.isdigit():
        os.environ[SLICE_ENV] = f"{int(worker[2:])}/{count}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group what must stay together. A module whose tests share a module-scoped
    fixture is a group of its own, so the fixture is set up once, not once
    per worker that happens to get one of its tests."""
    for item in items:
        relative = _relative(item)
        group = serial_group(relative)
        if group is None and shares_a_module_fixture(item):
            group = relative.as_posix()
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
            if config.getoption("loadgroup", False):
                _name_the_group(item, group)
        if quick(relative, getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.quick)
