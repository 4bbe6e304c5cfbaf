"""``date.truncate``, ``localtime.truncate``, ``localdatetime.truncate``, ``time.truncate`` and
``datetime.truncate``, as Drasi computes them.

Drasi registers one implementation under all five names, so the result has the type of the
value truncated, whatever the name: ``date.truncate('month', datetime(...))`` is a datetime.
``truncate(unit, value[, fields])``:

- ``unit`` (any case): ``millennium``, ``century``, ``decade``, ``year``, ``weekYear``,
  ``quarter``, ``month``, ``week``, ``day`` set the time of day to midnight; ``hour``,
  ``minute``, ``second``, ``millisecond``, ``microsecond`` leave the date and cut the time.
  ``week`` starts on Monday; ``weekYear`` is the Monday of week 1 of the ISO week-year and
  ``quarter`` the first day of the quarter (Drasi's differ there, docs/conformance.md).
- ``fields``, a map, is *added* to the truncated value as Drasi adds it: ``year``, ``month``,
  ``day`` add their value minus one (so on a unit that truncated them they set it:
  ``{day: 5}`` after ``'month'`` is the 5th); ``dayOfWeek`` likewise after ``week`` and
  ``weekYear``; ``hour``, ``minute``, ``second``, ``millisecond``, ``microsecond``,
  ``nanosecond`` add their value (nanoseconds below a microsecond are lost: the values here
  hold microseconds). A result outside its range (a 13th month, a 25th hour) is an error.
  With fields, the unit ``timezone`` leaves a time as it is; on a datetime, ``{timezone:
  'Europe/Paris'}`` places the truncated local time in that zone.
- A datetime is truncated on its local clock and keeps its offset.

A null argument gives null (Drasi stops the query instead, docs/conformance.md). Any other
argument type, or an unknown unit, is an error.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from drasi_ray.model.errors import QueryEvaluationError
from drasi_ray.query import temporal
from drasi_ray.query.values import type_name

_MIDNIGHT = dt.time(0)


def _millennium(day: dt.date) -> dt.date:
    return _first_of_year(day.year // 1000 * 1000)


def _century(day: dt.date) -> dt.date:
    return _first_of_year(day.year // 100 * 100)


def _decade(day: dt.date) -> dt.date:
    return _first_of_year(day.year // 10 * 10)


def _first_of_year(year: int) -> dt.date:
    if year < dt.MINYEAR:
        raise QueryEvaluationError(f"year {year} is out of range")
    return dt.date(year, 1, 1)


_DATE_UNITS: dict[str, Callable[[dt.date], dt.date]] = {
    "millennium": _millennium,
    "century": _century,
    "decade": _decade,
    "year": lambda day: dt.date(day.year, 1, 1),
    "weekyear": lambda day: dt.date.fromisocalendar(day.isocalendar()[0], 1, 1),
    "quarter": lambda day: dt.date(day.year, (day.month - 1) // 3 * 3 + 1, 1),
    "month": lambda day: dt.date(day.year, day.month, 1),
    "week": lambda day: day - dt.timedelta(days=day.weekday()),
    "day": lambda day: day,
}
"""The units that truncate a date (and set the time of day to midnight)."""

_TIME_UNITS: dict[str, Callable[[dt.time], dt.time]] = {
    "hour": lambda clock: dt.time(clock.hour),
    "minute": lambda clock: dt.time(clock.hour, clock.minute),
    "second": lambda clock: dt.time(clock.hour, clock.minute, clock.second),
    "millisecond": lambda clock: dt.time(
        clock.hour, clock.minute, clock.second, clock.microsecond // 1000 * 1000
    ),
    "microsecond": lambda clock: dt.time(clock.hour, clock.minute, clock.second, clock.microsecond),
}
"""The units that truncate a time of day (and leave the date)."""


def truncate(unit: Any, value: Any, fields: Any = None) -> Any:
    """Truncate ``value`` to ``unit`` and add ``fields`` (see the module docstring)."""
    if unit is None or value is None:
        return None
    if not isinstance(unit, str):
        raise QueryEvaluationError(f"truncate() expects a unit String, got {type_name(unit)}")
    if fields is not None and not isinstance(fields, Mapping):
        raise QueryEvaluationError(f"truncate() expects a Map of fields, got {type_name(fields)}")
    name = unit.lower()
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            return _truncate_local_datetime(name, value, fields)
        return _truncate_datetime(name, value, fields)
    if isinstance(value, dt.date):
        return _truncate_date(name, value, fields)
    if isinstance(value, dt.time):
        clock = _truncate_time(name, value.replace(tzinfo=None), fields)
        return clock.replace(tzinfo=value.tzinfo)
    raise QueryEvaluationError(f"truncate() expects a temporal instant, got {type_name(value)}")


def _truncate_local_datetime(
    unit: str, value: dt.datetime, fields: Mapping[str, Any] | None
) -> dt.datetime:
    day = _truncate_date(unit, value.date(), fields)
    return dt.datetime.combine(day, _truncate_time(unit, value.time(), fields))


def _truncate_datetime(
    unit: str, value: dt.datetime, fields: Mapping[str, Any] | None
) -> dt.datetime:
    local = _truncate_local_datetime(unit, value.replace(tzinfo=None), fields)
    zone = None if fields is None else fields.get("timezone")
    if zone is not None:
        if not isinstance(zone, str):
            raise QueryEvaluationError(f"truncate() timezone must be a String, got {zone!r}")
        return local.replace(tzinfo=temporal.parse_zone(zone))
    offset = value.utcoffset()
    assert offset is not None  # value is zoned
    return local.replace(tzinfo=dt.timezone(offset))


def _truncate_date(unit: str, value: dt.date, fields: Mapping[str, Any] | None) -> dt.date:
    rule = _DATE_UNITS.get(unit)
    if rule is None and unit not in _TIME_UNITS:
        raise _unknown_unit(unit)
    day = value if rule is None else rule(value)
    if fields is None:
        return day
    try:
        shifted = dt.date(
            day.year + _field(fields, "year", 1),
            day.month + _field(fields, "month", 1),
            day.day + _field(fields, "day", 1),
        )
    except ValueError as error:
        raise QueryEvaluationError(f"truncate() fields {dict(fields)} give no date") from error
    if unit in ("week", "weekyear"):
        shifted += dt.timedelta(days=_field(fields, "dayOfWeek", 1))
    return shifted


def _truncate_time(unit: str, value: dt.time, fields: Mapping[str, Any] | None) -> dt.time:
    if unit in _DATE_UNITS:
        clock = _MIDNIGHT
    elif unit in _TIME_UNITS:
        clock = _TIME_UNITS[unit](value)
    elif unit == "timezone" and fields is not None:
        clock = value
    else:
        raise _unknown_unit(unit)
    if fields is None or unit == "weekyear":
        return clock
    return _add_time_fields(clock, fields)


def _add_time_fields(clock: dt.time, fields: Mapping[str, Any]) -> dt.time:
    nanoseconds = (
        clock.microsecond * 1000
        + _field(fields, "millisecond") * 1_000_000
        + _field(fields, "microsecond") * 1000
        + _field(fields, "nanosecond")
    )
    try:
        if not 0 <= nanoseconds < 1_000_000_000:
            raise ValueError("nanosecond must be in 0..999999999")
        return dt.time(
            clock.hour + _field(fields, "hour"),
            clock.minute + _field(fields, "minute"),
            clock.second + _field(fields, "second"),
            nanoseconds // 1000,
        )
    except ValueError as error:
        raise QueryEvaluationError(f"truncate() fields {dict(fields)} give no time") from error


def _field(fields: Mapping[str, Any], key: str, origin: int = 0) -> int:
    """How much field ``key`` adds: its value less ``origin`` (0 when absent)."""
    value = fields.get(key)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool):
        raise QueryEvaluationError(f"truncate() field {key} must be an Integer, got {value!r}")
    return value - origin


def _unknown_unit(unit: str) -> QueryEvaluationError:
    return QueryEvaluationError(f"truncate() does not know the unit '{unit}'")
