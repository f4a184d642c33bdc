"""A simulated node: announces one or more nodes the way a router does, and
keeps them announced until SIGTERM (graceful leave) or kill -9.

    python -m tests.discovery.sim_node (--etcd HOST:PORT | --service HOST:PORT)
        --cluster C --node-id ID [--count N] [--broadcast-period MS]
        [--refresh-timeout MS] [--initial-wait-timeout MS] [--ready-file PATH]

With --etcd the process talks to etcd itself and holds the leases (a router
with discovery in-process); with --service the discovery service holds them
for it. With --count N the ids are ID-0 .. ID-(N-1), connectors 127.0.0.1:20000+i.
Exit codes: 0 after a graceful stop, 2 discovery unreachable, 3 node id in use.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from pathlib import Path

from meshmq.discovery import (
    Announcer,
    DiscoveryError,
    DiscoveryUnavailableError,
    GrpcDiscoveryClient,
    NodeIdInUseError,
)
from meshmq.runtime import setup_logging
from meshmq.v1 import discovery_pb2 as dpb


async def run(args: argparse.Namespace) -> int:
    if args.etcd:
        from meshmq.discovery import DiscoveryCore
        from meshmq.discovery.etcd_backend import EtcdBackend

        api = DiscoveryCore(EtcdBackend([args.etcd]), refresh_timeout_ms=args.refresh_timeout,
                            initial_wait_timeout_ms=args.initial_wait_timeout)
    else:
        api = GrpcDiscoveryClient(args.service)
    ids = [args.node_id] if args.count == 1 else [f"{args.node_id}-{i}" for i in range(args.count)]
    announcers = [
        Announcer(
            api,
            dpb.ClusterNode(node_id=node_id, cluster_name=args.cluster, node_name=f"sim-{node_id}",
                            connector=f"127.0.0.1:{20000 + i}", role=dpb.NODE_ROLE_LIVE),
            broadcast_period_ms=args.broadcast_period, refresh_timeout_ms=args.refresh_timeout,
            initial_wait_timeout_ms=args.initial_wait_timeout,
        )
        for i, node_id in enumerate(ids)
    ]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    started = loop.time()
    try:
        await asyncio.gather(*(a.start() for a in announcers))
    except NodeIdInUseError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 3
    except DiscoveryUnavailableError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 2
    if args.ready_file:
        tmp = Path(args.ready_file).with_suffix(".tmp")
        tmp.write_text(json.dumps({"node_ids": ids, "instance_ids": [a.node.instance_id for a in announcers],
                                   "announced_in_s": round(loop.time() - started, 4)}))
        tmp.replace(args.ready_file)
    lost = asyncio.ensure_future(asyncio.gather(*(a.wait() for a in announcers)))
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait([lost, stopping], return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if lost.done() and isinstance(lost.exception(), DiscoveryError):
        print(f"error: {lost.exception()}", file=sys.stderr, flush=True)
        return 3
    await asyncio.gather(*(a.stop() for a in announcers))
    await lost
    await api.close()
    return 0


def main() -> int:
    p = argparse.ArgumentParser()
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--etcd")
    where.add_argument("--service")
    p.add_argument("--cluster", required=True)
    p.add_argument("--node-id", required=True)
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--broadcast-period", type=int, default=2000)
    p.add_argument("--refresh-timeout", type=int, default=10000)
    p.add_argument("--initial-wait-timeout", type=int, default=10000)
    p.add_argument("--ready-file")
    args = p.parse_args()
    setup_logging(f"sim-{args.node_id}")
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
