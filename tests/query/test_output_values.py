"""How each kind of value is written in a query's results, compared with what Drasi writes.

Drasi's platform query host turns a result row into JSON with drasi-core's
``From<VariableValue> for serde_json::Value`` (core/src/evaluation/variable_value/mod.rs):
numbers, strings, booleans, null, lists and maps as JSON, temporal values as the text of their
chrono ``Display`` (chrono 0.4.41). drasi-lib's ``convert_variable_value_to_json``
(lib/src/queries/manager.rs) writes the same, except for a zoned datetime, which it writes as
RFC 3339: we write what drasi-lib writes (checked through drasi-lib 0.3.0). A whole element is
written differently (docs/conformance.md lists it).

Each case runs a real query and reads the value back from the JSON the platform reaction
writes to Redis, so a test sees exactly the bytes a Drasi reaction would read.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from drasi_ray.model.changes import ZERO_VERSION, ElementDelta, node
from drasi_ray.model.reaction_specs import PlatformReaction
from drasi_ray.model.results import QueryResult
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.reactions.platform import PlatformStreamReaction


def written(expression: str, **properties: Any) -> bytes:
    """The bytes the platform reaction writes for ``expression`` over one node ``n``."""
    query = ContinuousQuery("q", f"MATCH (n:N) RETURN {expression} AS v")
    element = node("1", ["N"], properties)
    diffs = query.apply(ElementDelta(None, element, ZERO_VERSION, 0))
    reaction = PlatformStreamReaction("q", PlatformReaction(), "redis://unused")
    (event,) = reaction.render([QueryResult("q", 1, 0, 0, tuple(diffs))])
    prefix, suffix = b'"addedResults":[{"v":', b"}]"
    start = event.payload.index(prefix) + len(prefix)
    return event.payload[start : event.payload.index(suffix, start)]


@pytest.mark.parametrize(
    ("expression", "json"),
    [
        ("42", b"42"),
        ("-9223372036854775808", b"-9223372036854775808"),
        ("9223372036854775807", b"9223372036854775807"),
        ("21.0", b"21.0"),  # serde_json writes a whole float with its '.0'
        ("0.1 + 0.2", b"0.30000000000000004"),
        ("'text'", b'"text"'),
        ("true", b"true"),
        ("null", b"null"),
        ("[1, 2.0, 'a', null, [true]]", b'[1,2.0,"a",null,[true]]'),
        ("{a: 1, b: {c: [2.5]}}", b'{"a":1,"b":{"c":[2.5]}}'),
        ("date('2024-01-02')", b'"2024-01-02"'),
    ],
)
def test_scalars_lists_maps_and_dates_are_written_as_drasi_writes_them(
    expression: str, json: bytes
) -> None:
    assert written(expression) == json


@pytest.mark.parametrize(
    ("value", "json"),
    [
        # serde_json 1.0.151 (drasi-lib 0.3.0) formats floats with zmij: positional from 1e-5
        # up to 1e16, a signed exponent without leading zeros outside it.
        (1e16, b"1e+16"),
        (2.5e16, b"2.5e+16"),
        (1e15, b"1000000000000000.0"),
        (123456789.125, b"123456789.125"),
        (1e-4, b"0.0001"),
        (1e-5, b"0.00001"),
        (-1.5e-5, b"-0.000015"),
        (1e-6, b"1e-6"),
        (1e-7, b"1e-7"),
        (-1.5e-7, b"-1.5e-7"),
        (-0.0, b"-0.0"),
        (1e300, b"1e+300"),
        (1.7976931348623157e308, b"1.7976931348623157e+308"),
        (2.2250738585072014e-308, b"2.2250738585072014e-308"),
        (5e-324, b"5e-324"),  # the smallest subnormal
        # No JSON number exists for these: Drasi writes its f64 Display text as a string.
        (math.nan, b'"NaN"'),
        (math.inf, b'"inf"'),
        (-math.inf, b'"-inf"'),
    ],
)
def test_floats_are_written_as_drasi_writes_them(value: float, json: bytes) -> None:
    assert written("n.v", v=value) == json
    assert written("[n.v]", v=value) == b"[" + json + b"]"


def test_a_property_holding_a_list_or_map_is_written_as_json() -> None:
    assert written("n.tags", tags=["a", 1]) == b'["a",1]'
    assert written("n.meta", meta={"x": [1.5, None]}) == b'{"x":[1.5,null]}'


@pytest.mark.parametrize(
    ("expression", "json"),
    [
        # chrono's NaiveTime Display: the fraction in 3, 6 or 9 digits, zeros kept.
        ("localtime('10:00')", b'"10:00:00"'),
        ("localtime('10:00:00.5')", b'"10:00:00.500"'),
        ("localtime('10:00:00.012')", b'"10:00:00.012"'),
        ("localtime('10:00:00.0001')", b'"10:00:00.000100"'),
        ("localtime('10:00:00.123456')", b'"10:00:00.123456"'),
    ],
)
def test_a_local_time_is_written_as_drasi_writes_it(expression: str, json: bytes) -> None:
    assert written(expression) == json


@pytest.mark.parametrize(
    ("expression", "json"),
    [
        # chrono's NaiveDateTime Display: the date, a space, the time (its Debug has the 'T').
        ("localdatetime('2024-01-02T10:00')", b'"2024-01-02 10:00:00"'),
        ("localdatetime('2024-01-02T10:00:00.25')", b'"2024-01-02 10:00:00.250"'),
        ("localdatetime('2024-01-02T23:59:59.999999')", b'"2024-01-02 23:59:59.999999"'),
    ],
)
def test_a_local_datetime_is_written_as_drasi_writes_it(expression: str, json: bytes) -> None:
    assert written(expression) == json


@pytest.mark.parametrize(
    ("expression", "json"),
    [
        # drasi-lib writes a zoned datetime as RFC 3339 (chrono's to_rfc3339): a T, the
        # fraction only if any, the offset (never Z, no zone name). Checked through drasi-lib.
        ("datetime('2024-01-02T10:00Z')", b'"2024-01-02T10:00:00+00:00"'),
        (
            "datetime({year: 2024, month: 1, day: 2, hour: 10, millisecond: 250, "
            "timezone: '+01:00'})",
            b'"2024-01-02T10:00:00.250+01:00"',
        ),
        (
            "datetime({year: 2024, month: 1, day: 2, hour: 10, timezone: '-05:30'})",
            b'"2024-01-02T10:00:00-05:30"',
        ),
        ("datetime('2024-01-02T10:00:00-05:30')", b'"2024-01-02T15:30:00+00:00"'),
        ("datetime('2024-07-02T10:00:00[Europe/Paris]')", b'"2024-07-02T10:00:00+02:00"'),
    ],
)
def test_a_zoned_datetime_is_written_as_drasi_writes_it(expression: str, json: bytes) -> None:
    assert written(expression) == json


@pytest.mark.parametrize(
    ("expression", "json"),
    [
        # drasi-core's ZonedTime Display writes only its time of day: the offset is not written.
        ("time('10:00:00+01:00')", b'"10:00:00"'),
        ("time('10:00:00.5Z')", b'"10:00:00.500"'),
        ("time('23:15:30.123456-05:30')", b'"23:15:30.123456"'),
    ],
)
def test_a_zoned_time_is_written_as_drasi_writes_it(expression: str, json: bytes) -> None:
    assert written(expression) == json


@pytest.mark.parametrize(
    ("expression", "json"),
    [
        # chrono's TimeDelta Display (chrono 0.4.41): days and time as one count of seconds,
        # the fraction without trailing zeros, '-' before the P, and P0D for nothing.
        ("duration('PT2H1M1.002S')", b'"PT7261.002S"'),
        ("duration({days: 1, hours: 2})", b'"PT93600S"'),
        ("duration('P1W')", b'"PT604800S"'),
        ("duration({milliseconds: 1500})", b'"PT1.5S"'),
        ("duration({nanoseconds: 1})", b'"PT0.000000001S"'),
        ("duration('PT0S')", b'"P0D"'),
        ("duration('-PT1.5S')", b'"-PT1.5S"'),
        ("duration('P-1DT1H')", b'"-PT82800S"'),
        ("datetime('2024-01-16T12:30Z') - datetime('2024-01-15T10:00Z')", b'"PT95400S"'),
    ],
)
def test_a_duration_is_written_as_drasi_writes_it(expression: str, json: bytes) -> None:
    assert written(expression) == json


@pytest.mark.parametrize(
    ("expression", "json"),
    [
        # Drasi's Duration Display writes only its chrono part, so it would write P1M as P0D;
        # we write the years and months in front instead of losing them.
        ("duration('P1Y2M')", b'"P1Y2M"'),
        ("duration('P1M1DT1H')", b'"P1MT90000S"'),
        ("-duration('P1MT1S')", b'"P-1MT-1S"'),
    ],
)
def test_a_duration_in_months_keeps_them_in_front(expression: str, json: bytes) -> None:
    assert written(expression) == json
