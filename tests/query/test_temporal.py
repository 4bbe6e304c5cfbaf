"""Temporal values: construction, accessors, arithmetic, comparison and ISO output."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from drasi_ray.model.changes import node
from drasi_ray.model.errors import QueryEvaluationError
from drasi_ray.query import temporal
from drasi_ray.query.failures import RowDropped
from drasi_ray.query.temporal import Duration
from drasi_ray.query.values import hashable_key
from tests.query._helpers import as_text, evaluate

UTC = dt.timezone.utc


# --------------------------------------------------------------------------- construction


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("date('2024-01-15')", "2024-01-15"),
        ("date('20240115')", "2024-01-15"),
        ("date('2024-W03-1')", "2024-01-15"),
        ("date({year: 2024, month: 2, day: 29})", "2024-02-29"),
        ("date({year: 2024})", "2024-01-01"),
        ("date(datetime('2024-01-15T23:59:00Z'))", "2024-01-15"),
        ("datetime('2024-01-15T10:30:00Z')", "2024-01-15T10:30:00Z"),
        ("datetime('2024-01-15T10:30:00')", "2024-01-15T10:30:00Z"),
        ("datetime('2024-01-15T10:30:00.250Z')", "2024-01-15T10:30:00.25Z"),
        # Text with an offset is read to the millisecond, as Drasi reads it.
        ("datetime('2024-01-15T10:30:00.123456789Z')", "2024-01-15T10:30:00.123Z"),
        ("datetime('2024-01-15T10:30+01:00')", "2024-01-15T09:30:00Z"),
        ("datetime('2024-01-15T10:30:00-0530')", "2024-01-15T16:00:00Z"),
        ("datetime('2024-01-15T10:30[Europe/Paris]')", "2024-01-15T10:30:00+01:00[Europe/Paris]"),
        ("datetime('2024-07-15T10:30[Europe/Paris]')", "2024-07-15T10:30:00+02:00[Europe/Paris]"),
        ("datetime('2024-01-15')", "2024-01-15T00:00:00Z"),
        (
            "datetime({year: 2024, month: 1, day: 15, hour: 10, minute: 5, "
            "timezone: 'America/New_York'})",
            "2024-01-15T10:05:00-05:00[America/New_York]",
        ),
        ("datetime({year: 2024, month: 1, day: 15, millisecond: 7})", "2024-01-15T00:00:00.007Z"),
        ("datetime({epochMillis: 1705314600000})", "2024-01-15T10:30:00Z"),
        ("datetime({epochSeconds: 1705314600})", "2024-01-15T10:30:00Z"),
        ("datetime.fromEpochMillis(0)", "1970-01-01T00:00:00Z"),
        ("datetime.fromEpoch(1705314600, 500000000)", "2024-01-15T10:30:00.5Z"),
        ("datetime(date('2024-01-15'))", "2024-01-15T00:00:00Z"),
        ("localdatetime('2024-01-15T10:30')", "2024-01-15T10:30:00"),
        ("localdatetime({year: 2024, month: 1, day: 15, hour: 1})", "2024-01-15T01:00:00"),
        ("localdatetime(datetime('2024-01-15T10:30[Europe/Paris]'))", "2024-01-15T10:30:00"),
        ("localtime('10:30:15.5')", "10:30:15.5"),
        ("localtime({hour: 9})", "09:00:00"),
        ("time('10:30+02:00')", "10:30:00+02:00"),
        ("time('10:30')", "10:30:00Z"),
        ("time({hour: 9, timezone: '+01:00'})", "09:00:00+01:00"),
    ],
)
def test_construction_and_iso_output(text: str, iso: str) -> None:
    assert as_text(text) == iso


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("duration('P1Y2M10DT2H30M')", "P1Y2M10DT2H30M"),
        ("duration('PT1.5S')", "PT1.5S"),
        ("duration('PT90M')", "PT1H30M"),
        ("duration('P1W')", "P7D"),
        ("duration('P0D')", "PT0S"),
        ("duration('-P1D')", "P-1D"),
        ("duration('PT-30M')", "PT-30M"),
        ("duration('P1.5D')", "P1DT12H"),
        ("duration({days: 1.5})", "P1DT12H"),
        ("duration({hours: 1, minutes: 90})", "PT2H30M"),
        ("duration({milliseconds: 1500})", "PT1.5S"),
        ("duration({nanoseconds: 1})", "PT0.000000001S"),
        ("duration({years: 1, months: 14})", "P2Y2M"),
        ("duration({weeks: 2, days: -1})", "P13D"),
    ],
)
def test_duration_construction(text: str, iso: str) -> None:
    assert as_text(text) == iso


def test_duration_keeps_units_apart() -> None:
    assert evaluate("duration('P1Y2M3DT4H5M6.007S')") == Duration(14, 3, 14706, 7_000_000)


def test_constructors_without_arguments_mean_now() -> None:
    before = dt.datetime.now(UTC)
    now = evaluate("datetime()")
    assert now.tzinfo is not None
    assert before <= now <= dt.datetime.now(UTC)
    assert evaluate("date()") in (before.date(), dt.datetime.now(UTC).date())
    assert evaluate("localdatetime()").tzinfo is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("date('2024-13-01')", "cannot parse date"),
        ("date('yesterday')", "cannot parse date"),
        ("datetime('2024-01-15T25:00Z')", "cannot parse localdatetime"),
        ("datetime('2024-01-15T10:00[Mars/Olympus]')", "unknown time zone"),
        ("duration('1 day')", "cannot parse duration"),
        ("duration('P')", "cannot parse duration"),
        ("duration({fortnights: 1})", "unknown duration component 'fortnights'"),
        ("duration({days: 'x'})", "must be a number"),
        ("date({month: 1})", "needs a 'year'"),
        ("date({year: 2023, month: 2, day: 29})", "invalid date"),
        ("date({year: 2023, month: 'feb'})", "must be an Integer"),
        ("date(42)", "expects a String, Map or temporal value"),
        ("date('2024-01-15').fortnight", "Date has no property 'fortnight'"),
        ("date('9999-12-31') + duration('P1M')", "Date \\+ Duration is out of range"),
        ("datetime('9999-12-31T23:00Z') + duration('PT2H')", "DateTime \\+ Duration is out"),
        ("date('0001-01-01') - duration('P1D')", "out of range"),
    ],
)
def test_construction_errors(text: str, message: str) -> None:
    with pytest.raises(QueryEvaluationError, match=message):
        evaluate(text)


# --------------------------------------------------------------------------- accessors


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("date('2024-05-15').year", 2024),
        ("date('2024-05-15').month", 5),
        ("date('2024-05-15').day", 15),
        ("date('2024-05-15').quarter", 2),
        ("date('2024-01-15').week", 3),
        ("date('2024-01-15').dayOfWeek", 1),
        ("date('2024-01-21').dayOfWeek", 7),
        ("date('2024-02-01').ordinalDay", 32),
        ("date('2024-05-15').dayOfQuarter", 45),
        ("datetime('2024-05-15T23:30:00Z').dayOfQuarter", 45),
        ("localdatetime('2024-03-31T10:00').dayOfQuarter", 91),
        ("datetime('2024-01-15T10:30:45.123Z').hour", 10),
        ("datetime('2024-01-15T10:30:45.123Z').minute", 30),
        ("datetime('2024-01-15T10:30:45.123Z').second", 45),
        ("datetime('2024-01-15T10:30:45.123Z').millisecond", 123),
        ("datetime('2024-01-15T10:30:45.123Z').microsecond", 123000),
        ("datetime('2024-01-15T10:30:45.123Z').nanosecond", 123000000),
        ("datetime('2024-01-15T10:30:00Z').epochMillis", 1705314600000),
        ("datetime('2024-01-15T10:30:00Z').epochSeconds", 1705314600),
        ("datetime('2024-01-15T11:30:00+01:00').epochMillis", 1705314600000),
        ("datetime({year: 2024, month: 1, day: 15, timezone: '+05:30'}).offset", "+05:30"),
        ("datetime({year: 2024, month: 1, day: 15, timezone: '+05:30'}).offsetMinutes", 330),
        ("datetime('2024-01-15T10:30[Europe/Paris]').timezone", "Europe/Paris"),
        ("datetime('2024-01-15T10:30Z').timezone", "+00:00"),
        ("datetime('2024-01-15T10:30Z').EPOCHMILLIS", 1705314600000),
        ("localdatetime('2024-01-15T10:30').year", 2024),
        ("localtime('10:30:15').second", 15),
        ("time('10:30+02:00').offsetSeconds", 7200),
        ("duration('P1Y2M').years", 1),
        ("duration('P1Y2M').months", 14),
        ("duration('P1Y2M').monthsOfYear", 2),
        ("duration('P10D').weeks", 1),
        ("duration('P10D').days", 10),
        ("duration('PT2H30M').hours", 2),
        ("duration('PT2H30M').minutes", 150),
        ("duration('PT2H30M').minutesOfHour", 30),
        ("duration('PT1M5.5S').seconds", 65),
        ("duration('PT1M5.5S').secondsOfMinute", 5),
        ("duration('PT1.5S').milliseconds", 1500),
        ("duration('PT1.5S').nanosecondsOfSecond", 500000000),
    ],
)
def test_accessors(text: str, expected: Any) -> None:
    assert evaluate(text) == expected


def test_accessor_on_a_temporal_property_of_an_element() -> None:
    row = {"e": node("e1", ["Event"], {"at": "2024-01-15T10:30:00Z"})}
    assert evaluate("datetime(e.at).hour", row) == 10


# --------------------------------------------------------------------------- arithmetic


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("date('2024-01-15') + duration('P1D')", "2024-01-16"),
        ("date('2024-01-31') + duration('P1M')", "2024-02-29"),
        ("date('2023-01-31') + duration('P1M')", "2023-02-28"),
        ("date('2024-03-31') - duration({months: 1})", "2024-02-29"),
        ("date('2024-01-15') + duration('P1Y2M3D')", "2025-03-18"),
        ("date('2024-01-15') + duration('PT36H')", "2024-01-16"),
        ("date('2024-01-15') - duration('PT36H')", "2024-01-14"),
        ("duration('P1D') + date('2024-01-15')", "2024-01-16"),
        ("datetime('2024-01-15T10:30Z') + duration('PT90M')", "2024-01-15T12:00:00Z"),
        ("datetime('2024-01-15T10:30Z') - duration('P1DT1H')", "2024-01-14T09:30:00Z"),
        ("datetime('2024-01-31T10:30Z') + duration('P1M1D')", "2024-03-01T10:30:00Z"),
        ("localdatetime('2024-01-15T23:00') + duration('PT2H')", "2024-01-16T01:00:00"),
        ("localtime('23:00') + duration('PT2H')", "01:00:00"),
        ("duration('PT1H') + duration('PT30M')", "PT1H30M"),
        ("duration('P1M') - duration('P1D')", "P1M-1D"),
        ("duration('P1DT2H') * 2", "P2DT4H"),
        ("2 * duration('PT1.5S')", "PT3S"),
        ("duration('P1D') / 2", "PT12H"),
        ("-duration('P1D')", "P-1D"),
        ("datetime('2024-01-16T12:30Z') - datetime('2024-01-15T10:00Z')", "PT26H30M"),
        ("date('2024-03-01') - date('2024-02-01')", "P29D"),
        ("duration.between(date('2024-01-15'), date('2024-03-20'))", "P65D"),
        ("duration.between(date('2024-03-20'), date('2024-01-15'))", "P-65D"),
        ("duration.between(date('2024-01-31'), date('2024-02-29'))", "P29D"),
        (
            "duration.between(datetime('2024-01-15T10:00Z'), datetime('2024-01-16T12:30Z'))",
            "PT26H30M",
        ),
        ("duration.between(date('2024-01-15'), datetime('2024-01-15T06:00Z'))", "PT6H"),
        (
            "duration.inSeconds(datetime('2024-01-15T10:00Z'), datetime('2024-01-16T12:30Z'))",
            "PT26H30M",
        ),
        ("duration.inDays(date('2024-01-15'), date('2024-03-20'))", "P65D"),
    ],
)
def test_arithmetic(text: str, iso: str) -> None:
    assert as_text(text) == iso


def test_duration_division_by_zero_drops_the_row() -> None:
    with pytest.raises(RowDropped):
        evaluate("duration('P1D') / 0")


@pytest.mark.parametrize(
    "text",
    ["date('2024-01-15') + 1", "date('2024-01-15') * 2", "duration('P1D') - date('2024-01-15')"],
)
def test_arithmetic_type_errors(text: str) -> None:
    with pytest.raises(QueryEvaluationError, match="cannot apply"):
        evaluate(text)


# --------------------------------------------------------------------------- comparison


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("date('2024-01-15') < date('2024-02-01')", True),
        ("date('2024-01-15') = date('2024-01-15')", True),
        ("date('2024-01-15') >= date('2024-01-16')", False),
        ("datetime('2024-01-15T10:00Z') = datetime('2024-01-15T11:00+01:00')", True),
        ("datetime('2024-01-15T10:00Z') < datetime('2024-01-15T10:30+00:00')", True),
        ("date('2024-01-15') = datetime('2024-01-15T00:00Z')", False),
        ("date('2024-01-15') < datetime('2024-01-16T00:00Z')", False),
        ("date('2024-01-15') < '2024-01-16'", False),
        ("date('2024-01-15') = '2024-01-15'", False),
        ("localtime('10:00') < localtime('11:00')", True),
        ("duration('PT60S') = duration('PT1M')", True),
        ("duration('P1D') = duration('PT24H')", True),
        ("duration('P1D') < duration('P2D')", True),
        ("date('2024-01-15') < null", False),
        ("datetime('2024-01-15T10:00Z') IN [datetime('2024-01-15T10:00Z')]", True),
    ],
)
def test_comparisons(text: str, expected: bool | None) -> None:
    assert evaluate(text) is expected


def test_equal_instants_share_a_hash_key() -> None:
    left = evaluate("datetime('2024-01-15T10:00Z')")
    right = evaluate("datetime('2024-01-15T11:00+01:00')")
    assert hashable_key(left) == hashable_key(right)
    assert hash(hashable_key(left)) == hash(hashable_key(right))


# --------------------------------------------------------------------------- change time


@pytest.mark.parametrize(
    ("effective_from", "iso"),
    [(0, "1970-01-01T00:00:00Z"), (1_705_314_600_123, "2024-01-15T10:30:00.123Z")],
)
def test_change_date_time(effective_from: int, iso: str) -> None:
    row = {"e": node("e1", ["Event"], {}, effective_from=effective_from)}
    assert as_text("drasi.changeDateTime(e)", row) == iso
    assert evaluate("drasi.changeDateTime(e).epochMillis", row) == effective_from


def test_from_epoch_millis_is_exact_for_large_values() -> None:
    value = temporal.from_epoch_millis(4_102_444_800_001)
    assert value == dt.datetime(2100, 1, 1, 0, 0, 0, 1000, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (dt.date(2024, 1, 1), "Date"),
        (dt.datetime(2024, 1, 1), "LocalDateTime"),
        (dt.datetime(2024, 1, 1, tzinfo=UTC), "DateTime"),
        (dt.time(1), "LocalTime"),
        (dt.time(1, tzinfo=UTC), "Time"),
        (Duration(), "Duration"),
        ("2024-01-01", None),
    ],
)
def test_type_names(value: Any, name: str | None) -> None:
    assert temporal.type_name(value) == name
