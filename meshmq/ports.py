"""Picking a loopback port for a process that must be told it before it binds:
a static connector naming a peer, etcd's client and peer ports, a service that
keeps its address across a restart.

A port asked of the kernel (bind to port 0) comes from its ephemeral range,
the same range every other bind to 0 and every outgoing connection draws from:
freed again before the process that needs it binds it, it can be handed to one
of those meanwhile. Ports are therefore picked at random below that range,
checked free, and tried again when taken.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LINUX_EPHEMERAL_RANGE = (32768, 60999)
LOWEST = 10000  # above the well-known and most registered service ports
ATTEMPTS = 200


def ephemeral_range() -> tuple[int, int]:
    """The kernel's ephemeral port range (Linux's default where it cannot be read)."""
    try:
        low, high = (int(v) for v in EPHEMERAL_RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        return LINUX_EPHEMERAL_RANGE
    return low, high


def free_port(host: str = "127.0.0.1") -> int:
    """A port on `host` that is free now and outside the ephemeral range."""
    low, high = ephemeral_range()
    if low - LOWEST >= 1000:
        candidates = (LOWEST, low - 1)
    elif high < 64535:
        candidates = (high + 1, 65535)
    else:  # the whole space is ephemeral: the kernel's pick is as good as any
        with socket.socket() as s:
            s.bind((host, 0))
            return int(s.getsockname()[1])
    for _ in range(ATTEMPTS):
        port = random.randint(*candidates)
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    raise OSError(f"no free port on {host} in {candidates[0]}-{candidates[1]} after {ATTEMPTS} tries")
