"""Ports picked for processes that bind them later stay out of the kernel's
ephemeral range, where a bind to port 0 or an outgoing connection could take
them in the meantime."""

from __future__ import annotations

import re
import socket

import pytest

from meshmq import ports


def test_a_picked_port_is_free_and_below_the_ephemeral_range():
    low, high = ports.ephemeral_range()
    picked = {ports.free_port() for _ in range(50)}
    assert all(ports.LOWEST <= p < low for p in picked)
    assert len(picked) > 1  # random, not one port every time
    for p in picked:
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))


def test_a_port_in_use_is_never_picked(monkeypatch):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        # The random draw offers the held port twice, then the next one: that one is picked.
        draws = iter([taken, taken, taken + 1])
        monkeypatch.setattr(ports, "LOWEST", taken)
        monkeypatch.setattr(ports, "ephemeral_range", lambda: (taken + 2000, 65535))
        monkeypatch.setattr(ports.random, "randint", lambda a, b: next(draws))
        monkeypatch.setattr(ports, "_recent", ports.deque(maxlen=ports.REMEMBERED))
        assert ports.free_port() == taken + 1


def test_a_port_picked_but_not_yet_bound_is_not_handed_out_again(monkeypatch):
    """The slave of an HA test is told its port long before it starts: a pick
    in between, free as that port still is, must not return it."""
    low = ports.free_port()
    draws = iter([low, low, low + 1])
    monkeypatch.setattr(ports, "_recent", ports.deque([low], maxlen=ports.REMEMBERED))
    monkeypatch.setattr(ports.random, "randint", lambda a, b: next(draws))
    assert ports.free_port() == low + 1


def test_each_slice_is_its_own_part_of_the_range(monkeypatch):
    """xdist workers pick side by side: each from a slice no other worker draws from."""
    slices = [ports.port_slice(10000, 32767, f"{i}/4") for i in range(4)]
    assert slices[0][0] == 10000 and slices[-1][1] <= 32767
    assert all(a[1] < b[0] for a, b in zip(slices, slices[1:]))
    monkeypatch.setenv(ports.SLICE_ENV, "2/4")
    low, high = ports.port_slice(10000, ports.ephemeral_range()[0] - 1, "2/4")
    assert all(low <= ports.free_port() <= high for _ in range(50))


def test_a_malformed_slice_names_the_variable():
    for bad in ("2", "4/4", "x/4", "-1/4", "0/1000"):
        with pytest.raises(ValueError, match=f"{ports.SLICE_ENV}={re.escape(repr(bad))}"):
            ports.port_slice(10000, 32767, bad)


def test_where_every_port_is_ephemeral_the_kernel_picks(tmp_path, monkeypatch):
    range_file = tmp_path / "ip_local_port_range"
    range_file.write_text("1024\t65535\n")
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE_FILE", range_file)
    assert ports.ephemeral_range() == (1024, 65535)
    with socket.socket() as s:
        s.bind(("127.0.0.1", ports.free_port()))
