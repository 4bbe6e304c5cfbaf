"""Temporal values as Drasi computes them (drasi-core's temporal functions and expressions).

Values are compared through ``toString``-like ISO text or through accessors, never through the
text a result row gets (tested in test_output_values.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.query._helpers import as_text, evaluate

# --------------------------------------------------------------------------- duration.*


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The elapsed time, never split into months (drasi-core Between: a chrono difference).
        ("duration.between(date('2024-01-01'), date('2024-03-06'))", "P65D"),
        ("duration.between(date('2024-03-06'), date('2024-01-01'))", "P-65D"),
        ("duration.between(date('2024-01-01'), date('2024-03-06')).days", 65),
        (
            "duration.between(datetime('2024-01-01T00:00Z'), datetime('2024-02-02T01:10Z'))",
            "PT769H10M",
        ),
        (
            "duration.between(localdatetime('2024-01-31T10:00'), "
            "localdatetime('2024-03-01T10:00'))",
            "PT720H",
        ),
        # A local datetime paired with a zoned one is taken in the zoned one's zone.
        (
            "duration.between(datetime({year: 2024, month: 1, day: 15, hour: 10, "
            "timezone: '+01:00'}), localdatetime('2024-01-15T11:30'))",
            "PT1H30M",
        ),
        ("duration.between(null, date('2024-01-01'))", None),
        # Calendar months between the two dates, whatever the days of month.
        ("duration.inMonths(date('2024-01-31'), date('2024-02-01'))", "P1M"),
        ("duration.inMonths(date('2024-01-01'), date('2025-03-31'))", "P1Y2M"),
        ("duration.inMonths(date('2024-03-15'), date('2024-01-20'))", "P-2M"),
        (
            "duration.inMonths(datetime({year: 2024, month: 1, day: 31, hour: 23, "
            "timezone: '-02:00'}), localdatetime('2024-03-01T00:00'))",
            "P2M",
        ),
        ("duration.inMonths(localtime('10:00'), localtime('12:00'))", "PT0S"),
        ("duration.inMonths(null, date('2024-01-01'))", None),
    ],
)
def test_duration_functions(text: str, expected: Any) -> None:
    assert as_text(text) == expected


# --------------------------------------------------------------------------- duration values


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Days and time are one length (a chrono TimeDelta), so every unit counts all of it.
        ("duration('P1DT2H').hours", 26),
        ("duration('P1DT2H30M').minutes", 1590),
        ("duration('P1DT1S').seconds", 86401),
        ("duration('P1DT0.5S').milliseconds", 86400500),
        ("duration('PT36H').days", 1),
        ("duration('PT200H').weeks", 1),
        ("duration('PT48H').daysOfWeek", 2),
        ("duration('P1DT2H30M').minutesOfHour", 30),
        ("duration('PT-1.5S').millisecondsOfSecond", -500),
        ("duration('PT-1.5S').seconds", -1),
        ("duration('PT-90M').minutesOfHour", -30),
        # Months take whole 30-day lengths, years whole 365-day lengths besides their months.
        ("duration('P45D').months", 1),
        ("duration('P1Y2M45D').months", 15),
        ("duration('P400D').years", 1),
        ("duration('P1Y2M').years", 1),
        ("duration('P1Y2M').quarters", 4),
        ("duration('P1Y2M').monthsOfYear", 2),
        ("duration.between(date('2024-01-01'), date('2024-03-06')).months", 2),
        # A fraction of a month cascades as 30 days.
        ("duration({months: 1.5})", "P1M15D"),
        ("duration({years: 0.1})", "P1M6D"),
    ],
)
def test_duration_values(text: str, expected: Any) -> None:
    assert as_text(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("duration('P1D') = duration('PT24H')", True),
        ("duration('P1D') <> duration('PT24H')", False),
        ("duration('P1M') = duration('P30D')", False),
        # Ordered by length, a month counting 30 days.
        ("duration('P1D') < duration('P2D')", True),
        ("duration('P1M') < duration('P31D')", True),
        ("duration('P1M') <= duration('P30D')", True),
        ("duration('P1M') >= duration('P30D')", True),
        ("duration('PT25H') > duration('P1D')", True),
    ],
)
def test_duration_comparisons(text: str, expected: bool) -> None:
    assert evaluate(text) is expected


def test_equal_durations_group_together() -> None:
    left, right = evaluate("duration('P1D')"), evaluate("duration('PT24H')")
    assert hash(left) == hash(right)


# --------------------------------------------------------------------------- construction


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # An offset without a zone name gives the instant in UTC (drasi-core
        # ZonedDateTime::from_string goes through epoch milliseconds).
        ("datetime('2015-11-30T19:32:24+03:00')", "2015-11-30T16:32:24Z"),
        ("datetime('2015-11-30T19:32:24+03:00').hour", 16),
        ("datetime('2015-11-30T19:32:24-0330').minute", 2),
        ("datetime('2015-11-30T19:32:24+03:00').offsetSeconds", 0),
        ("datetime('2015-11-30T19:32:24.123456+03:00').microsecond", 123000),  # to the ms
        ("datetime('2015-11-30T19:32:24+03:00').epochMillis", 1448901144000),
        # A zone name keeps the zone's offset.
        ("datetime('2015-07-21T19:32:24[Europe/London]').hour", 19),
        ("datetime('2015-07-21T19:32:24[Europe/London]').offsetSeconds", 3600),
    ],
)
def test_datetime_from_text(text: str, expected: Any) -> None:
    assert as_text(text) == expected


# --------------------------------------------------------------------------- accessors


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # An offset is written as chrono's FixedOffset: +00:00, never Z.
        ("datetime('2024-01-15T10:30Z').offset", "+00:00"),
        ("datetime('2024-01-15T10:30Z').timezone", "+00:00"),
        ("datetime({year: 2024, month: 1, day: 15, timezone: '-05:30'}).offset", "-05:30"),
        ("datetime('2024-01-15T10:30[Europe/Paris]').timezone", "Europe/Paris"),
        ("datetime('2024-01-15T10:30[Europe/Paris]').offset", "+01:00"),
        ("time('10:30Z').offset", "+00:00"),
        ("time('10:30Z').timezone", "+00:00"),
        ("time('10:30+02:00').timezone", "+02:00"),
        ("date('2024-05-15').quarterDay", 45),
        ("localdatetime('2024-03-31T10:00').quarterDay", 91),
        ("datetime('2024-05-15T23:30:00Z').quarterDay", 45),
        # A zone name in a time map gives that zone's offset (on 1970-01-01, as Drasi).
        ("time({hour: 10, timezone: 'Europe/Paris'}).offset", "+01:00"),
        ("time({hour: 10, timezone: 'Europe/Paris'}).hour", 10),
    ],
)
def test_accessors(text: str, expected: Any) -> None:
    assert as_text(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A map may name a week, an ordinal day or a quarter (drasi-core
        # create_date_from_component); a missing dayOfWeek or dayOfQuarter is the first.
        ("date({year: 1984, week: 10, dayOfWeek: 3})", "1984-03-07"),
        ("date({year: 2021, week: 2})", "2021-01-11"),
        ("date({year: 2024, ordinalDay: 100})", "2024-04-09"),
        ("date({year: 1984, quarter: 3, dayOfQuarter: 45})", "1984-08-14"),
        ("date({year: 2024, quarter: 2})", "2024-04-01"),
        (
            "localdatetime({year: 1984, quarter: 3, dayOfQuarter: 45, hour: 12, minute: 31})",
            "1984-08-14T12:31:00",
        ),
        (
            "datetime({year: 1984, week: 10, dayOfWeek: 3, hour: 12, timezone: '+01:00'})",
            "1984-03-07T12:00:00+01:00",
        ),
        # Dates as text: year and month, year alone, ordinal day, quarter and day.
        ("date('2015-07')", "2015-07-01"),
        ("date('201507')", "2015-07-01"),
        ("date('2015')", "2015-01-01"),
        ("date('2015-202')", "2015-07-21"),
        ("date('2015202')", "2015-07-21"),
        ("date('2015-Q2-60')", "2015-05-30"),
        ("localdatetime('2015-202T21:40:32')", "2015-07-21T21:40:32"),
        # A map holding only a timezone is the current time there.
        ("datetime({timezone: 'Asia/Tokyo'}).timezone", "+09:00"),
        ("datetime({timezone: 'Europe/Paris'}).year >= 2024", True),
        ("localdatetime({timezone: 'Asia/Tokyo'}).year >= 2024", True),
        ("time({timezone: '+05:00'}).offset", "+05:00"),
    ],
)
def test_construction_from_parts(text: str, expected: Any) -> None:
    assert as_text(text) == expected


def test_a_zone_only_time_is_now_there() -> None:
    hours = as_text("time({timezone: '+05:00'}).hour - time({timezone: 'Z'}).hour")
    assert hours % 24 == 5
