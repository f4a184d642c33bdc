"""--since / --until parsing (pure)."""

from __future__ import annotations

from datetime import datetime

import pytest

from spark.errors import AnalyticsError
from spark.window import Window, iso, parse_time, parse_window

NOW = 1_800_000_000_000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("now", NOW),
        ("1799999999000", 1_799_999_999_000),
        ("90s", NOW - 90_000),
        ("15m", NOW - 900_000),
        ("2h", NOW - 7_200_000),
        ("-2h", NOW - 7_200_000),
        ("2h ago", NOW - 7_200_000),
        ("1d", NOW - 86_400_000),
        ("500ms", NOW - 500),
        ("1.5h", NOW - 5_400_000),
        ("2026-05-01T12:00:00Z", 1_777_636_800_000),
        ("2026-05-01T14:00:00+02:00", 1_777_636_800_000),
        ("2026-05-01 12:00:00.250Z", 1_777_636_800_250),
    ],
)
def test_parse_time_forms(text, expected):
    assert parse_time(text, now=NOW) == expected


def test_a_time_without_offset_is_local_time():
    expected = int(datetime(2026, 5, 1, 12, 0).astimezone().timestamp() * 1000)
    assert parse_time("2026-05-01T12:00", now=NOW) == expected


def test_garbage_names_the_option_and_the_accepted_forms():
    with pytest.raises(AnalyticsError, match=r"--since 'yesterday-ish': not a time; use ISO 8601"):
        parse_time("yesterday-ish", option="--since", now=NOW)


def test_open_ends_stay_open():
    assert parse_window(None, None, now=NOW) == Window(None, None)
    assert parse_window("1h", None, now=NOW) == Window(NOW - 3_600_000, None)


def test_inverted_window_is_refused_naming_both_ends():
    with pytest.raises(AnalyticsError) as err:
        parse_window("2026-05-02T00:00Z", "2026-05-01T00:00Z", now=NOW)
    assert str(err.value) == (
        "inverted time window: --since 2026-05-02T00:00Z (2026-05-02T00:00:00.000Z) is after "
        "--until 2026-05-01T00:00Z (2026-05-01T00:00:00.000Z); --since must be earlier than --until"
    )


def test_empty_window_is_refused():
    with pytest.raises(AnalyticsError, match="equals --until"):
        parse_window("1h", "1h", now=NOW)


def test_iso_is_utc_with_milliseconds():
    assert iso(1_777_636_800_250) == "2026-05-01T12:00:00.250Z"
    assert iso(None) is None
