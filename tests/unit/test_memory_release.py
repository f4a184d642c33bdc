"""When the router gives freed memory back (services/router/memory_release.py)."""

from __future__ import annotations

from services.router.memory_release import TRIM_AFTER_BYTES, MemoryRelease, should_trim

MiB = 1024 * 1024


def test_trims_only_after_a_large_fall():
    assert not should_trim(100 * MiB, 100 * MiB)
    assert not should_trim(100 * MiB, 100 * MiB - TRIM_AFTER_BYTES + 1)
    assert should_trim(100 * MiB, 100 * MiB - TRIM_AFTER_BYTES)
    assert not should_trim(10 * MiB, 20 * MiB)  # growing


def test_the_high_water_mark_follows_growth_and_resets_at_each_trim():
    held = [0]
    release = MemoryRelease(lambda: held[0])
    trims = []
    release.trim = lambda: (trims.append(held[0]), setattr(release, "_high", held[0]))  # no real trim
    for value in (10 * MiB, 60 * MiB, 40 * MiB, 20 * MiB, 25 * MiB, 0):
        held[0] = value
        release.check()
    assert trims == [20 * MiB]  # 60 -> 20 fell 40 MiB; from 25 down to 0 only 25
