"""Ports picked for processes that bind them later stay out of the kernel's
ephemeral range, where a bind to port 0 or an outgoing connection could take
them in the meantime."""

from __future__ import annotations

import socket

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
        draws = iter([taken, taken, taken + 1] * 5)
        monkeypatch.setattr(ports, "LOWEST", taken)
        monkeypatch.setattr(ports, "ephemeral_range", lambda: (taken + 2000, 65535))
        monkeypatch.setattr(ports.random, "randint", lambda a, b: next(draws))
        assert [ports.free_port() for _ in range(5)] == [taken + 1] * 5


def test_where_every_port_is_ephemeral_the_kernel_picks(tmp_path, monkeypatch):
    range_file = tmp_path / "ip_local_port_range"
    range_file.write_text("1024\t65535\n")
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE_FILE", range_file)
    assert ports.ephemeral_range() == (1024, 65535)
    with socket.socket() as s:
        s.bind(("127.0.0.1", ports.free_port()))
