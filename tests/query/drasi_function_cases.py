"""Scalar function cases with the value Drasi (drasi-lib 0.3.0, drasi-core 0.5.10) returns.

Each :class:`FunctionCase` is one expression evaluated over one node (``n``, with the given
properties, effective_from :data:`EFFECTIVE_FROM`). ``expected`` is drasi_ray's result in
output form (REFUSED: the row is refused with an evaluation error). ``drasi`` is what Drasi
gives when it differs (a documented deviation, docs/conformance.md): a value, ERROR (Drasi
stops the query) or SILENT (Drasi panics in the query's task: no result, and the query
answers nothing more).

tests/query/test_function_cases.py checks drasi_ray against ``expected``;
tests/query/test_function_cases_oracle.py checks drasi-lib against ``drasi`` (or
``expected``), so the table stays Drasi's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final

EFFECTIVE_FROM: Final = 1_700_000_000_123
"""The node's effective_from (ms): the change's transaction and realtime clocks."""


UUID_V4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
"""The text of a random (version 4, RFC 4122 variant) UUID, as Drasi's ``randomUUID()``."""


class _Outcome:
    """A non-value outcome (REFUSED, ERROR, SILENT)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


REFUSED: Final = _Outcome("REFUSED")
ERROR: Final = _Outcome("ERROR")
SILENT: Final = _Outcome("SILENT")
_SAME: Final = _Outcome("SAME")


@dataclass(frozen=True)
class FunctionCase:
    expression: str
    expected: Any
    properties: dict[str, Any] = field(default_factory=dict)
    drasi: Any = _SAME
    note: str = ""

    @property
    def drasi_outcome(self) -> Any:
        """Drasi's result: ``drasi`` if given, else ERROR for a refused row, else ``expected``."""
        if self.drasi is not _SAME:
            return self.drasi
        return ERROR if self.expected is REFUSED else self.expected

    @property
    def differs(self) -> bool:
        """Whether Drasi's outcome is not drasi_ray's (a documented deviation)."""
        return self.drasi is not _SAME

    @property
    def id(self) -> str:
        return self.expression if not self.properties else f"{self.expression} {self.properties}"


LIST_HELPERS = [
    FunctionCase("drasi.listMax([1, 2, 3])", 3),
    FunctionCase("drasi.listMax([1, 2.5, 2])", 2.5),
    FunctionCase("drasi.listMax([3, 2.5])", 3),
    FunctionCase("drasi.listMax([2.5, 3])", 3),
    FunctionCase("drasi.listMin([3, 1, 2])", 1),
    FunctionCase("drasi.listMin([1.0, 1])", 1.0),
    FunctionCase("drasi.listMin([1, 1.0])", 1),
    FunctionCase("drasi.listMax([null, 1, 2])", 2),
    FunctionCase("drasi.listMin([null, 1, 2])", None),
    FunctionCase("drasi.listMin([1, null, 0])", 0),
    FunctionCase("drasi.listMax([null])", None),
    FunctionCase("drasi.listMax([null, null])", None),
    FunctionCase("drasi.listMax(null)", None),
    FunctionCase("drasi.listMin(null)", None),
    FunctionCase("drasi.listMax([1, 'a'])", 1),
    FunctionCase("drasi.listMax(['a', 1])", 1),
    FunctionCase("drasi.listMin([1, 'a'])", "a"),
    FunctionCase("drasi.listMin(['a', 1])", "a"),
    FunctionCase("drasi.listMax([null, 'a'])", "a"),
    FunctionCase("drasi.listMin(['a', null])", "a"),
    FunctionCase("drasi.listMax(['b', 'a', 'c'])", "c"),
    FunctionCase("drasi.listMin(['b', 'a', 'c'])", "a"),
    FunctionCase("drasi.listMax([true, false])", True),
    FunctionCase("drasi.listMin([true, false])", False),
    FunctionCase("drasi.listMax([1, true])", 1),
    FunctionCase("drasi.listMax([true, 1])", 1),
    FunctionCase("drasi.listMax([true, date('2024-01-01')])", True),
    FunctionCase("drasi.listMax([date('2024-01-01'), true])", "2024-01-01"),
    FunctionCase("drasi.listMax([date('2024-01-01'), date('2023-01-01')])", "2024-01-01"),
    FunctionCase("drasi.listMin([date('2024-01-01'), 'x'])", "2024-01-01"),
    FunctionCase("drasi.listMax([duration({days: 1}), duration({days: 2})])", "PT172800S"),
    # across temporal types only a lower rank is "less": listMin finds it, listMax never moves
    FunctionCase(
        "drasi.listMin([datetime('2024-01-01T00:00:00Z'), time('10:00:00Z')])", "10:00:00"
    ),
    FunctionCase(
        "drasi.listMin([time('10:00:00Z'), localdatetime('2024-01-01T00:00:00')])",
        "2024-01-01 00:00:00",
    ),
    FunctionCase(
        "drasi.listMin([localdatetime('2024-01-01T00:00:00'), localtime('10:00')])", "10:00:00"
    ),
    FunctionCase(
        "drasi.listMin([duration({days: 1}), datetime('2024-01-01T00:00:00Z')])",
        "2024-01-01T00:00:00+00:00",
    ),
    FunctionCase("drasi.listMin([localtime('10:00'), date('2024-01-01')])", "2024-01-01"),
    # a time by its clock time alone, its offset ignored
    FunctionCase("drasi.listMax([time('10:00:00+02:00'), time('09:00:00Z')])", "10:00:00"),
    FunctionCase("drasi.listMin([time('09:00:00Z'), time('10:00:00+02:00')])", "09:00:00"),
    # Integers exactly, beyond a double's 53 bits
    FunctionCase("drasi.listMax([9007199254740992, 9007199254740993])", 9007199254740993),
    FunctionCase("drasi.listMin([9007199254740993, 9007199254740992])", 9007199254740992),
    FunctionCase("drasi.listMax([[1], [2]])", [1]),
    FunctionCase("drasi.listMax([{a: 1}, {a: 2}])", {"a": 1}),
    FunctionCase("drasi.listMax([1, 2], 5)", 2),
    FunctionCase("drasi.listMax(5)", 5),
    FunctionCase("drasi.listMax(1.5)", 1.5),
    FunctionCase("drasi.listMax('abc')", "abc"),
    FunctionCase("drasi.listMax(true)", True),
    FunctionCase("drasi.listMax({a: 1})", {"a": 1}),
    FunctionCase("drasi.listMax(duration({days: 1}))", "PT86400S"),
    FunctionCase("drasi.listMin(date('2024-01-02'))", "2024-01-02"),
    FunctionCase("drasi.listMax(n.values)", 7, {"values": [3, 7, 5]}),
    FunctionCase("drasi.listMin(n.values)", 3.5, {"values": [4, 3.5, 5]}),
    FunctionCase("drasi.listMax(n)", REFUSED),
    FunctionCase("drasi.listMax([])", None, drasi=SILENT, note="Drasi panics on an empty list"),
    FunctionCase("drasi.listMin([])", None, drasi=SILENT, note="Drasi panics on an empty list"),
    FunctionCase("drasi.stdevp([1, 2, 3, 4])", 1.118033988749895),
    FunctionCase("drasi.stdevp([1])", 0.0),
    FunctionCase("drasi.stdevp([1, 'a', null, 3])", 1.0),
    FunctionCase("drasi.stdevp([0.1, 0.2, 0.7, 1.3, 2.9, 0.0001])", 1.011035773215875),
    FunctionCase("drasi.stdevp(n.values)", 0.0, {"values": [1e300, 1e300]}),
    FunctionCase("drasi.stdevp(null)", None),
    FunctionCase("drasi.stdevp(5)", REFUSED),
    FunctionCase("drasi.stdevp([])", None, drasi=SILENT, note="Drasi panics on no numbers"),
    FunctionCase("drasi.stdevp(['a'])", None, drasi=SILENT, note="Drasi panics on no numbers"),
]

TEXT = [
    FunctionCase("toStringOrNull(12)", "12"),
    FunctionCase("toStringOrNull(1.0)", "1"),
    FunctionCase("toStringOrNull(-0.0)", "-0"),
    FunctionCase("toStringOrNull(123456789.125)", "123456789.125"),
    FunctionCase("toStringOrNull(0.000001)", "0.000001"),
    FunctionCase("toStringOrNull(n.big)", "100000000000000000000", {"big": 1e20}),
    FunctionCase("toStringOrNull(n.small)", "0.0000001", {"small": 1e-7}),
    FunctionCase("toStringOrNull('x')", "x"),
    FunctionCase("toStringOrNull(null)", None),
    FunctionCase("toStringOrNull([])", "[]"),
    FunctionCase("toStringOrNull([1, 'a', 2.5, null, true])", "[1, a, 2.5, null, true]"),
    FunctionCase("toStringOrNull([[1, 2], ['a']])", "[[1, 2], [a]]"),
    FunctionCase("toStringOrNull({a: 1})", None),
    FunctionCase("toStringOrNull(n)", None, drasi=ERROR, note="Drasi stops the query"),
    FunctionCase("toStringOrNull(true)", "true", drasi=ERROR, note="Drasi stops the query"),
    FunctionCase(
        "toStringOrNull(date('2024-01-02'))", "2024-01-02", drasi=ERROR, note="as toString"
    ),
    FunctionCase("toStringOrNull(duration({days: 1}))", "P1D", drasi=ERROR, note="as toString"),
    # toInteger of a Float beyond the i64 bounds saturates, in both engines; of an infinity
    # or NaN, Drasi stops the query where drasi_ray saturates too (NaN gives 0, as Rust's
    # ``as i64``)
    FunctionCase("toInteger(n.big)", -(2**63), {"big": -1e300}),
    FunctionCase("toInteger(toFloat('inf'))", 2**63 - 1, drasi=ERROR, note="Drasi stops the query"),
    FunctionCase("toInteger(toFloat('NaN'))", 0, drasi=ERROR, note="Drasi stops the query"),
    # toFloat and toInteger read a number's text as Rust parses it: no spaces, no '_'
    FunctionCase("toFloat(' 1.5')", None),
    FunctionCase("toFloat('1_000.5')", None),
    FunctionCase("toInteger(' 7')", None),
    # split at a list of delimiters drops the empty pieces
    FunctionCase("split('a,,b;c', [',', ';'])", ["a", "b", "c"]),
    FunctionCase("split(',a,', [','])", ["a"]),
]

TRIGONOMETRY = [
    FunctionCase("pi()", 3.141592653589793),
    FunctionCase("cos(0)", 1.0),
    FunctionCase("cos(1)", 0.5403023058681398),
    FunctionCase("cos(0.5)", 0.8775825618903728),
    FunctionCase("sin(1)", 0.8414709848078965),
    FunctionCase("sin(-0.0)", -0.0),
    FunctionCase("sin(n.big)", -0.6452512852657808, {"big": 1e20}),
    FunctionCase("tan(1)", 1.5574077246549023),
    FunctionCase("tan(1.5707963267948966)", 1.633123935319537e16),
    FunctionCase("degrees(1)", 57.29577951308232),
    FunctionCase("degrees(3.141592653589793)", 180.0),
    FunctionCase("degrees(n.i)", 5.160745025300393e17, {"i": 9007199254740993}),
    FunctionCase("radians(180)", 3.141592653589793),
    FunctionCase("radians(1.5)", 0.026179938779914945),
    FunctionCase("radians(n.i)", 157205283378409.78, {"i": 9007199254740993}),
    FunctionCase("degrees(n.huge)", REFUSED, {"huge": 1e308}),
    FunctionCase("cos(null)", None),
    FunctionCase("degrees(null)", None),
    FunctionCase("cos('a')", REFUSED),
    FunctionCase("radians('x')", REFUSED),
    FunctionCase("cos(true)", REFUSED),
]

COLLECTIONS = [
    FunctionCase("coll.distinct([1, 2, 1, 'a', 'a', null, null])", [1, 2, "a", None]),
    FunctionCase("coll.distinct([])", []),
    FunctionCase("coll.distinct(null)", None),
    FunctionCase("coll.distinct('abc')", REFUSED),
    FunctionCase("coll.distinct([[1], [1], {a: 1}, {a: 1}])", [[1], {"a": 1}]),
    # coll.distinct([1, 1.0]): Drasi's answer is left to chance, one call in ~100 differs
    # (pinned by tests/differential/test_distinct_hashing.py)
    FunctionCase("coll.indexOf([1, 2, 3], 2)", 1),
    FunctionCase("coll.indexOf([1, 2, 3], 5)", -1),
    FunctionCase("coll.indexOf([1, 2.0, 3], 2)", 1),
    FunctionCase("coll.indexOf([1, 2], 1.0)", 0),
    FunctionCase("coll.indexOf([], 1)", -1),
    FunctionCase("coll.indexOf(null, 1)", None),
    FunctionCase("coll.indexOf([1, null], null)", None),
    FunctionCase("coll.indexOf('abc', 'b')", REFUSED),
    FunctionCase("coll.insert([1, 2, 3], 1, 'x')", [1, "x", 2, 3]),
    FunctionCase("coll.insert([1, 2], 2, 'x')", [1, 2, "x"]),
    FunctionCase("coll.insert([], 0, null)", [None]),
    FunctionCase("coll.insert([1, 2], 0, [3, 4])", [[3, 4], 1, 2]),
    FunctionCase("coll.insert(null, 0, 1)", None),
    FunctionCase("coll.insert([1], null, 1)", None),
    FunctionCase("coll.insert([1, 2], 3, 'x')", REFUSED),
    FunctionCase("coll.insert([1, 2], -1, 'x')", REFUSED),
    FunctionCase("coll.insert([1], 1.5, 2)", REFUSED),
]

_LDT = "localdatetime('2017-11-11T12:31:14.645876123')"

TRUNCATION = [
    FunctionCase(f"date.truncate('millennium', {_LDT})", "2000-01-01 00:00:00"),
    FunctionCase(f"date.truncate('century', {_LDT})", "2000-01-01 00:00:00"),
    FunctionCase(f"date.truncate('decade', {_LDT})", "2010-01-01 00:00:00"),
    FunctionCase(f"date.truncate('year', {_LDT})", "2017-01-01 00:00:00"),
    FunctionCase(f"date.truncate('weekYear', {_LDT})", "2017-01-02 00:00:00"),
    FunctionCase(f"date.truncate('quarter', {_LDT})", "2017-10-01 00:00:00"),
    FunctionCase(f"date.truncate('month', {_LDT})", "2017-11-01 00:00:00"),
    FunctionCase(f"date.truncate('week', {_LDT})", "2017-11-06 00:00:00"),
    FunctionCase(f"date.truncate('day', {_LDT})", "2017-11-11 00:00:00"),
    FunctionCase(f"date.truncate('hour', {_LDT})", "2017-11-11 12:00:00"),
    FunctionCase(f"date.truncate('minute', {_LDT})", "2017-11-11 12:31:00"),
    FunctionCase(f"date.truncate('second', {_LDT})", "2017-11-11 12:31:14"),
    FunctionCase(f"date.truncate('millisecond', {_LDT})", "2017-11-11 12:31:14.645"),
    FunctionCase(f"date.truncate('microsecond', {_LDT})", "2017-11-11 12:31:14.645876"),
    FunctionCase("date.truncate('quarter', date('2024-02-15'))", "2024-01-01"),
    FunctionCase(
        "date.truncate('quarter', date('2024-03-15'))",
        "2024-01-01",
        drasi="2024-04-01",
        note="Drasi's quarter of March, June and September starts the month after",
    ),
    FunctionCase(
        "date.truncate('quarter', date('2024-12-15'))",
        "2024-10-01",
        drasi=ERROR,
        note="Drasi's quarter of December would start in a 13th month",
    ),
    FunctionCase("date.truncate('weekYear', date('2024-06-02'))", "2024-01-01"),
    FunctionCase(
        "date.truncate('weekYear', date('2025-01-02'))",
        "2024-12-30",
        drasi="2025-01-06",
        note="Drasi's week-year starts on the first Monday of the calendar year",
    ),
    FunctionCase("date.truncate('week', date('2024-06-02'))", "2024-05-27"),
    FunctionCase("date.truncate('day', date('2024-06-02'))", "2024-06-02"),
    FunctionCase("date.truncate('hour', date('2024-06-02'))", "2024-06-02"),
    FunctionCase("date.truncate('DAY', date('2024-06-02'))", "2024-06-02"),
    FunctionCase("date.truncate('month', date('2024-06-17'), {day: 5})", "2024-06-05"),
    FunctionCase("date.truncate('day', date('2024-06-17'), {day: 5})", "2024-06-21"),
    FunctionCase("date.truncate('year', date('2024-06-17'), {month: 3, day: 2})", "2024-03-02"),
    FunctionCase("date.truncate('week', date('2024-06-19'), {dayOfWeek: 3})", "2024-06-19"),
    FunctionCase("date.truncate('month', date('2024-01-31'), {month: 2})", "2024-02-01"),
    FunctionCase("localtime.truncate('hour', localtime('12:31:14.645876'))", "12:00:00"),
    FunctionCase("localtime.truncate('minute', localtime('12:31:14.645876'))", "12:31:00"),
    FunctionCase("localtime.truncate('second', localtime('12:31:14.645876'))", "12:31:14"),
    FunctionCase("localtime.truncate('millisecond', localtime('12:31:14.645876'))", "12:31:14.645"),
    FunctionCase(
        "localtime.truncate('microsecond', localtime('12:31:14.645876'))", "12:31:14.645876"
    ),
    FunctionCase("localtime.truncate('day', localtime('12:31:14.645876'))", "00:00:00"),
    FunctionCase(
        "localtime.truncate('hour', localtime('12:31:14.645876'), {minute: 5, second: 3})",
        "12:05:03",
    ),
    FunctionCase("localtime.truncate('hour', localtime('12:31:14'), {hour: 2})", "14:00:00"),
    FunctionCase(
        "localtime.truncate('hour', localtime('12:31:14'), {millisecond: 5, microsecond: 7})",
        "12:00:00.005007",
    ),
    FunctionCase("time.truncate('hour', time('12:31:14+02:00'))", "12:00:00"),
    FunctionCase(
        "datetime.truncate('day', datetime('2024-03-15T10:11:12.123+02:00'))",
        "2024-03-15T00:00:00+00:00",
    ),
    FunctionCase(
        "datetime.truncate('day', datetime('2024-03-31T12:11:12[Europe/Paris]'))",
        "2024-03-31T00:00:00+02:00",
    ),
    FunctionCase(
        "datetime.truncate('day', datetime('2024-03-15T10:11:12[Europe/Paris]'),"
        " {timezone: 'America/New_York'})",
        "2024-03-15T00:00:00-04:00",
    ),
    FunctionCase(
        "datetime.truncate('hour', datetime('2024-03-15T10:11:12Z'), {minute: 30})",
        "2024-03-15T10:30:00+00:00",
    ),
    FunctionCase(
        "localdatetime.truncate('month', localdatetime('2024-03-15T10:11:12'), {day: 2, hour: 3})",
        "2024-03-02 03:00:00",
    ),
    FunctionCase(
        "date.truncate('month', datetime('2024-03-15T10:11:12Z'))", "2024-03-01T00:00:00+00:00"
    ),
    FunctionCase("datetime.truncate('month', date('2024-03-15'))", "2024-03-01"),
    # a zoned datetime is truncated on its local clock (here a day and an hour the UTC clock
    # would put elsewhere)
    FunctionCase(
        "datetime.truncate('day', datetime('2024-03-31T01:11:12[Europe/Paris]'))",
        "2024-03-31T00:00:00+01:00",
    ),
    FunctionCase(
        "datetime.truncate('hour', datetime('2024-05-15T01:30:00[Asia/Kolkata]'))",
        "2024-05-15T01:00:00+05:30",
    ),
    # weekYear takes dayOfWeek and no time fields; the unit timezone keeps the time and adds them
    FunctionCase(
        "datetime.truncate('weekYear', datetime('2024-05-15T10:30:00Z'), {hour: 5})",
        "2024-01-01T00:00:00+00:00",
    ),
    FunctionCase("date.truncate('weekYear', date('2024-05-15'), {dayOfWeek: 3})", "2024-01-03"),
    FunctionCase("time.truncate('timezone', time('10:30:15+02:00'), {hour: 1})", "11:30:15"),
    # a time keeps its offset
    FunctionCase("time.truncate('hour', time('10:30:00+02:00')) = time('10:00:00+02:00')", True),
    FunctionCase("time.truncate('hour', time('10:30:00+02:00')) = time('10:00:00Z')", False),
    FunctionCase(
        "localtime.truncate('second', localtime('10:00:00'), {nanosecond: 1000000000})", REFUSED
    ),
    FunctionCase(
        "localtime.truncate('second', localtime('10:00:00'), {millisecond: 1000})", REFUSED
    ),
    FunctionCase("date.truncate('month', date('2024-05-15'), {day: true})", REFUSED),
    FunctionCase("date.truncate('bogus', date('2024-06-02'))", REFUSED),
    FunctionCase("date.truncate('month', date('2024-06-17'), {month: 13})", REFUSED),
    FunctionCase("localtime.truncate('timezone', localtime('12:31:14'))", REFUSED),
    FunctionCase("localtime.truncate('hour', localtime('23:31:14'), {hour: 2})", REFUSED),
    FunctionCase("date.truncate('day', 'x')", REFUSED),
    FunctionCase("date.truncate(1, date('2024-03-15'))", REFUSED),
    FunctionCase("date.truncate('day', date('2024-03-15'), 5)", REFUSED),
    FunctionCase("date.truncate('day', date('2024-03-15'), {day: 1.5})", REFUSED),
    FunctionCase("date.truncate('day', duration({days: 1}))", REFUSED),
    FunctionCase("date.truncate(null, date('2024-03-15'))", None, drasi=ERROR, note="null in"),
    FunctionCase("date.truncate('day', null)", None, drasi=ERROR, note="null in"),
]

CLOCKS = [
    *(
        FunctionCase(f"{kind}.{clock}()", value)
        for kind, value in (
            ("date", "2023-11-14"),
            ("localtime", "22:13:20.123"),
            ("localdatetime", "2023-11-14 22:13:20.123"),
            ("time", "22:13:20.123"),
            ("datetime", "2023-11-14T22:13:20.123+00:00"),
        )
        for clock in ("transaction", "realtime", "statement")
    ),
    FunctionCase("datetime.transaction('Europe/Paris')", "2023-11-14T23:13:20.123+01:00"),
    FunctionCase("time.transaction('Europe/Paris')", "23:13:20.123"),
    FunctionCase("date.transaction('Pacific/Kiritimati')", "2023-11-15"),
    FunctionCase("localtime.transaction('Asia/Kolkata')", "03:43:20.123"),
    FunctionCase("datetime.transaction('Z')", "2023-11-14T22:13:20.123+00:00"),
    FunctionCase("datetime.transaction('America/New York')", "2023-11-14T17:13:20.123-05:00"),
    FunctionCase("datetime.transaction('[Europe/Paris]')", "2023-11-14T23:13:20.123+01:00"),
    FunctionCase("datetime.transaction().epochMillis", EFFECTIVE_FROM),
    FunctionCase("datetime.transaction() = datetime.realtime()", True),
    FunctionCase("date.transaction() + duration({days: 1})", "2023-11-15"),
    FunctionCase(
        "localdatetime.realtime('Europe/Paris')",
        "2023-11-14 23:13:20.123",
        drasi="2023-11-14 22:13:20.123",
        note="Drasi gives the UTC clock for a local datetime in a zone",
    ),
    FunctionCase(
        "datetime.transaction('+05:00')",
        "2023-11-15T03:13:20.123+05:00",
        drasi="2023-11-14T22:13:20.123+00:00",
        note="Drasi reads a zone given as an offset as UTC",
    ),
    FunctionCase(
        "datetime.transaction('America/Port-au-Prince')",
        "2023-11-14T17:13:20.123-05:00",
        drasi="2023-11-14T22:13:20.123+00:00",
        note="Drasi reads a zone name with a hyphen as UTC",
    ),
    FunctionCase("datetime.transaction('Nowhere/Land')", REFUSED),
    FunctionCase("datetime.transaction(null)", REFUSED),
    FunctionCase("datetime.transaction(5)", REFUSED),
]

SCALAR_CASES = LIST_HELPERS + TEXT + TRIGONOMETRY + COLLECTIONS + TRUNCATION + CLOCKS
