"""The boundaries of the tree, checked on the source: the core (`meshmq/`)
never imports a service, services never import each other (only
services/embedded.py puts several in one process), no module imports itself
back through others (no import cycles, type-only imports counted too: a cycle
of types is a cycle of knowledge), every service is found through the
`meshmq.services` entry points, and every package folder is listed in
pyproject.toml."""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from meshmq.service_registry import Service, service_names, services

ROOT = Path(__file__).resolve().parents[2]
COMPOSER = ROOT / "services" / "embedded.py"


def import_statements(path: Path, package: str) -> Iterator[tuple[str, list[str]]]:
    """Every import in a file, anywhere in it (lazy imports inside functions and
    type-only imports too), as (module, names imported from it); relative imports
    resolved against `package`; a plain `import a.b` is ("a.b", [])."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            yield module, [alias.name for alias in node.names]


def imported_modules(path: Path, package: str) -> set[str]:
    """Every module a file imports, and every `module.name` it takes from one."""
    found: set[str] = set()
    for module, names in import_statements(path, package):
        found.add(module)
        found.update(f"{module}.{name}" for name in names)
    return found


def module_of(path: Path, root: Path = ROOT) -> str:
    """The dotted name a file is imported as (a package's __init__ is the package)."""
    rel = path.relative_to(root).with_suffix("")
    parts = [p.replace("-", "_") for p in rel.parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def dependencies(path: Path, files: dict[str, Path], root: Path) -> set[str]:
    """The modules among `files` a file needs: `from pkg import sub` needs the
    submodule, and the package only if something else is taken from it."""
    needed: set[str] = set()
    for module, names in import_statements(path, package_of(path, root)):
        submodules = {f"{module}.{name}" for name in names} & files.keys()
        needed |= submodules
        if len(submodules) < len(names) or not names:
            needed.add(module)
    return needed & files.keys()


def import_cycles(folder: Path, root: Path = ROOT) -> list[list[str]]:
    """Every strongly connected group of more than one module among the files under
    `folder` (Tarjan's algorithm, iterative), each as its sorted module names."""
    files = {module_of(path, root): path for path in sorted(folder.rglob("*.py"))}
    graph = {name: sorted(dependencies(path, files, root) - {name}) for name, path in files.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(graph[step])))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    cycles.append(sorted(group))
    return cycles


def package_of(path: Path, root: Path = ROOT) -> str:
    """The package a file's relative imports resolve against."""
    module = module_of(path, root)
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def service_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "services" and len(parts) > 1 else None


def test_the_core_imports_no_service():
    offenders = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in sorted((ROOT / "meshmq").rglob("*.py"))
        for module in imported_modules(path, package_of(path))
        if module == "services" or module.startswith("services.")
    ]
    assert offenders == []


def test_services_never_import_each_other():
    offenders = []
    for path in sorted((ROOT / "services").rglob("*.py")):
        if path == COMPOSER:
            continue
        own = service_of(package_of(path) + ".x")
        for module in imported_modules(path, package_of(path)):
            other = service_of(module)
            if other is not None and other != own and module != "services":
                offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert offenders == []


def test_the_checker_sees_relative_and_lazy_imports(tmp_path):
    """The check above would catch a sneaky import (this is what it parses)."""
    sneaky = tmp_path / "sneaky.py"
    sneaky.write_text("def f():\n    from ..journal.core import JournalCore\n    import services.discovery.server\n")
    found = imported_modules(sneaky, "services.router")
    assert "services.journal.core" in found and "services.discovery.server" in found
    assert {service_of(m) for m in found} >= {"journal", "discovery"}


# What only the HA coordinator speaks: the replication stream, the lives' quorum votes, backup hosting.
HA_CONTRACTS = ("meshmq.v1.replication_pb2_grpc", "meshmq.v1.cluster_pb2_grpc.QuorumVotesServicer",
                "meshmq.v1.cluster_pb2_grpc.QuorumVotesStub", "meshmq.v1.cluster_pb2_grpc.BackupHostingServicer",
                "meshmq.v1.cluster_pb2_grpc.BackupHostingStub")


def test_ha_code_lives_in_the_ha_coordinator():
    """Both sides of replication, the answers to votes and to colocated lives'
    backup requests are the HA coordinator's (services/ha-coordinator/); the
    router only hosts them, and the composer only hands over the pieces they
    drive."""
    offenders = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in sorted((ROOT / "services").rglob("*.py"))
        if service_of(package_of(path) + ".x") != "ha_coordinator"
        for module in imported_modules(path, package_of(path))
        if module in HA_CONTRACTS or any(module.startswith(c + ".") for c in HA_CONTRACTS)
    ]
    assert offenders == []


def test_the_network_demand_decider_is_pure():
    """Demand propagation for network connectors and the tree connector is decided without I/O or
    waiting, and without the rest of the router, so bench/tree.py can drive 10,000 nodes of it in one
    process: its modules import no asyncio, no gRPC, nothing of services but their own package and
    nothing of the core but the destination wildcards."""
    folder = ROOT / "services" / "router" / "network"
    allowed = ("services.router.network.", "meshmq.config.destination_wildcards")
    offenders = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in (folder / "demand.py", folder / "simulation.py")
        for module in imported_modules(path, package_of(path))
        if module.split(".")[0] in ("asyncio", "grpc", "services", "meshmq") and not module.startswith(allowed)
    ]
    assert offenders == []


# The whole trees, and each service apart (a failure names the service).
ACYCLIC = ["meshmq", "services", "services/journal", "services/discovery", "services/gateway",
           "services/ha-coordinator", "services/router", "spark"]


@pytest.mark.parametrize("folder", ACYCLIC)
def test_no_import_cycles(folder: str):
    assert import_cycles(ROOT / folder) == []


def test_the_cycle_finder_finds_a_cycle_through_a_type_only_import(tmp_path):
    """A three-module circle whose last edge is imported for typing only, beside a
    module outside it: the circle is reported, whole, and nothing else."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from pkg.c import g\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import x\n")
    (pkg / "d.py").write_text("from . import a\n")
    (pkg / "e.py").write_text("from pkg import d\n")  # a package's submodule, not the package
    assert import_cycles(pkg, tmp_path) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_every_service_is_found_through_the_entry_points():
    assert {"router", "journal", "discovery"} <= set(service_names())
    for name, svc in services().items():
        assert isinstance(svc, Service) and svc.name == name
        assert svc.run.__module__.startswith("services."), svc.run.__module__


def test_every_package_folder_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapped = {name: ROOT / folder for name, folder in config.get("package-dir", {}).items()}
    on_disk = {package_of(init) for top in ("meshmq", "services", "spark") for init in (ROOT / top).rglob("__init__.py")}
    assert on_disk == listed
    for name, folder in mapped.items():
        assert (folder / "__init__.py").exists(), f"{name} maps to {folder}, which is not a package"
