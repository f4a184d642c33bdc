"""`python -m services.discovery --config F [--ready-file R] [--quiet]`: the
discovery service alone, listening on discovery.listen.

Interim entry. Once the node configuration (`meshmq/config/models.py`) has
the discovery keys, `run_discovery` moves to `meshmq/hosting.py` as it is,
`meshmq serve discovery` calls it, and this file goes away. Until then it
reads the same node YAML, taking only the discovery keys from it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
from pydantic import ConfigDict, Field, ValidationError, model_validator

from meshmq.config.loader import ConfigError, ConfigProblem, _problems
from meshmq.config.models import NonEmptyStr, _Model, _raise_issues
from meshmq.config.yaml_source import YamlSourceError, format_key_path, load_yaml
from meshmq.discovery_client import DiscoveryError
from meshmq.hosting import _until_signalled, _write_ready, install_event_loop_policy, setup_logging
from meshmq.journal_client import channel_options

from .config import BroadcastGroup, DiscoveryGroup, DiscoveryService, discovery_issues, served_group
from .core import DiscoveryCore
from .server import add_discovery_service

log = logging.getLogger("meshmq")


class DiscoveryFile(_Model):
    """The discovery keys of a node config; the other keys are BrokerConfig's business."""

    model_config = ConfigDict(**{**_Model.model_config, "extra": "ignore"})

    name: NonEmptyStr = "meshmq"
    discovery_groups: dict[NonEmptyStr, DiscoveryGroup] = Field(default_factory=dict)
    broadcast_groups: dict[NonEmptyStr, BroadcastGroup] = Field(default_factory=dict)
    discovery: DiscoveryService = Field(default_factory=DiscoveryService)

    @model_validator(mode="after")
    def _cross_checks(self) -> DiscoveryFile:
        _raise_issues(discovery_issues(self.discovery_groups, self.broadcast_groups, self.discovery, None))
        return self


def load_discovery_file(path: str) -> DiscoveryFile:
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
        document = load_yaml(text)
    except OSError as exc:
        raise ConfigError([ConfigProblem(source, None, "", f"cannot read configuration: {exc}")]) from None
    except YamlSourceError as exc:
        raise ConfigError(
            [ConfigProblem(source, p.line, format_key_path(p.path), p.message) for p in exc.problems]
        ) from None
    data: Any = document.data or {}
    try:
        return DiscoveryFile.model_validate(data, by_alias=True, by_name=False)
    except ValidationError as exc:
        raise ConfigError(_problems(exc, document, source)) from None


async def run_discovery(config, *, ready_file: str | None = None,
                        on_ready: Callable[[dict], None] | None = None) -> None:
    """The discovery service on discovery.listen, serving one discovery group.
    An unreachable etcd stops it at start (after initial-wait-timeout) with
    DiscoveryUnavailableError naming the endpoints."""
    group_name, group = served_group(config.discovery_groups, config.discovery)
    core = DiscoveryCore.for_group(group)
    try:
        await core.start()
        server = grpc.aio.server(options=channel_options())
        add_discovery_service(server, core)
        listen = config.discovery.listen
        target = f"{listen.host}:{listen.port}"
        port = server.add_insecure_port(target)
        if port == 0:
            raise RuntimeError(f"discovery cannot listen on {target}")
        await server.start()
        info = {
            "service": "discovery",
            "endpoints": [f"{listen.host}:{port}"],
            "backend": core.description,
            "discovery_group": group_name,
            "cluster_name": group.cluster_name,
        }
        _write_ready(ready_file, info)
        if on_ready:
            on_ready(info)
        log.info("discovery service listening on %s:%d, %s", listen.host, port, core.description)
        try:
            await _until_signalled()
        finally:
            # Leases held for nodes are not revoked: the nodes are alive and join
            # again (here or at another instance); unclaimed ones lapse.
            await server.stop(1)
    finally:
        await core.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m services.discovery", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--ready-file")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    try:
        config = load_discovery_file(args.config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    setup_logging(config.name)
    if not args.quiet:
        print("# effective discovery configuration\n" + config.model_dump_json(by_alias=True, indent=2), file=sys.stderr)

    def announce(info: dict) -> None:
        print(f"meshmq discovery listening on {', '.join(info['endpoints'])} ({info['backend']}, "
              f"cluster {info['cluster_name']})", flush=True)

    install_event_loop_policy()
    try:
        asyncio.run(run_discovery(config, ready_file=args.ready_file, on_ready=announce))
    except DiscoveryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (RuntimeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
