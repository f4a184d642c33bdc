"""The report's time window: parsing `--since` / `--until` (pure functions).

Accepted forms, all resolved to milliseconds since the epoch (the unit of the
store's `ts` columns):

* ISO 8601: ``2026-05-01``, ``2026-05-01T12:00``, ``2026-05-01 12:00:00+02:00``,
  ``...Z``. Without an offset the time is local, as with ``date``.
* a duration before now: ``90s``, ``15m``, ``2h``, ``1d``, ``500ms``
  (``-2h`` and ``2h ago`` mean the same).
* ``now``.
* a plain integer: milliseconds since the epoch.

The window is half-open, ``since <= ts < until``; an open end takes the first
or last event in the stores.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from spark.errors import AnalyticsError

_DURATION = re.compile(r"^-?\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)(?:\s+ago)?$", re.IGNORECASE)
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def parse_time(text: str, *, option: str = "time", now: int | None = None) -> int:
    """One `--since`/`--until` value -> ms since the epoch."""
    raw = text.strip()
    now = now_ms() if now is None else now
    if not raw:
        raise AnalyticsError(f"{option}: empty value")
    if raw.lower() == "now":
        return now
    if re.fullmatch(r"\d+", raw):
        return int(raw)
    m = _DURATION.match(raw)
    if m:
        return now - int(float(m.group(1)) * _UNIT_MS[m.group(2).lower()])
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        raise AnalyticsError(
            f"{option} {raw!r}: not a time; use ISO 8601 (2026-05-01T12:00:00Z), a duration before now "
            f"(15m, 2h, 1d), 'now', or milliseconds since the epoch"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.astimezone()  # local time, as `date` reads it
    return int(parsed.timestamp() * 1000)


def iso(ms: int | None) -> str | None:
    """ms since the epoch -> ISO 8601 in UTC with milliseconds."""
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Window:
    """``since <= ts < until``; None = open at that end."""

    since: int | None = None
    until: int | None = None

    def describe(self) -> str:
        return f"[{iso(self.since) or 'first event'}, {iso(self.until) or 'last event'})"


def parse_window(since: str | None, until: str | None, *, now: int | None = None) -> Window:
    """Both options -> Window; an inverted or empty window is an error naming both ends."""
    now = now_ms() if now is None else now
    lo = parse_time(since, option="--since", now=now) if since else None
    hi = parse_time(until, option="--until", now=now) if until else None
    if lo is not None and hi is not None and lo >= hi:
        what = "is after" if lo > hi else "equals"
        raise AnalyticsError(
            f"inverted time window: --since {since} ({iso(lo)}) {what} --until {until} ({iso(hi)}); "
            f"--since must be earlier than --until"
        )
    return Window(lo, hi)
