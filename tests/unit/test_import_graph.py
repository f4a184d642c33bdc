"""The boundaries of the tree, checked on the source: the core (`meshmq/`)
never imports a service, services never import each other (only
services/embedded.py puts several in one process), every service is found
through the `meshmq.services` entry points, and every package folder is
listed in pyproject.toml."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from meshmq.service_registry import Service, service_names, services

ROOT = Path(__file__).resolve().parents[2]
COMPOSER = ROOT / "services" / "embedded.py"


def imported_modules(path: Path, package: str) -> set[str]:
    """Every module a file imports, anywhere in it (lazy imports inside functions too),
    with relative imports resolved against `package`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def package_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = [p.replace("-", "_") for p in rel.parts]
    return ".".join(parts[:-1]) if parts[-1] != "__init__" else ".".join(parts[:-1])


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
