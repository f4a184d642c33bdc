"""How the `meshmq` command finds the services it can run.

Each service publishes a `Service` under the entry-point group
`meshmq.services` in pyproject.toml (`router = "services.embedded:ROUTER"`).
The CLI lists that group for `meshmq serve NAME` and `meshmq up`, so a new
service (the HA coordinator, the gateway) plugs in with one line of
pyproject.toml and no change to the core — which never imports a service.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib.metadata import entry_points


ENTRY_POINT_GROUP = "meshmq.services"

# run(config, ready_file=..., on_ready=...): serve until SIGINT/SIGTERM. Once
# listening it writes `ready_file` (JSON) and calls `on_ready` with the same
# dict, which has at least "service" and "endpoints".
Runner = Callable[..., Awaitable[None]]


@dataclass(frozen=True)
class Service:
    name: str
    summary: str
    run: Runner
    # The one line `meshmq serve NAME` prints once the service listens.
    ready_line: Callable[[dict], str]


class UnknownServiceError(LookupError):
    pass


def service_names() -> list[str]:
    """The installed services' names, without importing them."""
    return sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))


def services() -> dict[str, Service]:
    """Every installed service by name."""
    return {ep.name: _load(ep) for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)}


def service(name: str) -> Service:
    """One installed service, imported now."""
    for ep in entry_points(group=ENTRY_POINT_GROUP, name=name):
        return _load(ep)
    have = ", ".join(service_names()) or "none (is meshmq installed? run scripts/setup.sh)"
    raise UnknownServiceError(f"no service named {name!r}; installed: {have}")


def _load(ep) -> Service:
    svc = ep.load()
    if not isinstance(svc, Service) or svc.name != ep.name:
        raise TypeError(f"entry point {ep.name} = {ep.value} in {ENTRY_POINT_GROUP} is not a Service named {ep.name!r}")
    return svc
