"""Picking a loopback port for a process that must be told it before it binds:
a static connector naming a peer, etcd's client and peer ports, a service that
keeps its address across a restart.

A port asked of the kernel (bind to port 0) comes from its ephemeral range,
the same range every other bind to 0 and every outgoing connection draws from:
freed again before the process that needs it binds it, it can be handed to one
of those meanwhile. Ports are therefore picked at random below that range,
checked free, and tried again when taken.

A port is free when checked but bound only later, by the process told it: a
second pick in between must not hand it out again. Within one process a port
is not handed out again while among its last `REMEMBERED` picks; processes picking side by side (the test suite's
xdist workers) each take a slice of the range of their own, named by
`MESHMQ_PORT_SLICE` ("index/count", e.g. "2/4"), which child processes inherit.
"""

from __future__ import annotations

import os
import random
from collections import deque
import socket
from pathlib import Path

EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LINUX_EPHEMERAL_RANGE = (32768, 60999)
LOWEST = 10000  # above the well-known and most registered service ports
ATTEMPTS = 200
SLICE_ENV = "MESHMQ_PORT_SLICE"
# How many of this process's latest picks are held back from the next ones:
# long enough for the process told a port to bind it, short enough that a
# long-lived picker (a test worker) never runs out of its slice.
REMEMBERED = 500

_recent: deque[int] = deque(maxlen=REMEMBERED)


def ephemeral_range() -> tuple[int, int]:
    """The kernel's ephemeral port range (Linux's default where it cannot be read)."""
    try:
        low, high = (int(v) for v in EPHEMERAL_RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        return LINUX_EPHEMERAL_RANGE
    return low, high


def port_slice(low: int, high: int, spec: str | None) -> tuple[int, int]:
    """The part of `low`..`high` that `spec` ("index/count") names; all of it
    when `spec` is empty. A malformed spec is an error naming the variable."""
    if not spec:
        return low, high
    try:
        index, count = (int(v) for v in spec.split("/"))
        if not 0 <= index < count:
            raise ValueError
    except ValueError:
        raise ValueError(f"{SLICE_ENV}={spec!r}: expected 'index/count' with 0 <= index < count") from None
    width = (high - low + 1) // count
    if width < 100:
        raise ValueError(f"{SLICE_ENV}={spec!r}: {count} slices of {low}-{high} leave fewer than 100 ports each")
    start = low + index * width
    return start, start + width - 1


def free_port(host: str = "127.0.0.1") -> int:
    """A port on `host` that is free now, outside the ephemeral range, inside
    this process's slice, and not among this process's recent picks."""
    low, high = ephemeral_range()
    if low - LOWEST >= 1000:
        candidates = (LOWEST, low - 1)
    elif high < 64535:
        candidates = (high + 1, 65535)
    else:  # the whole space is ephemeral: the kernel's pick is as good as any
        with socket.socket() as s:
            s.bind((host, 0))
            return int(s.getsockname()[1])
    candidates = port_slice(*candidates, os.environ.get(SLICE_ENV))
    for _ in range(ATTEMPTS):
        port = random.randint(*candidates)
        if port in _recent:
            continue
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
        _recent.append(port)
        return port
    raise OSError(f"no free port on {host} in {candidates[0]}-{candidates[1]} after {ATTEMPTS} tries")
