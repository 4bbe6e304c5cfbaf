"""Temporal values: date, time, localtime, datetime, localdatetime and duration.

Representation (chosen so values are immutable, hashable and cheap to compare):

- ``date`` -> :class:`datetime.date`
- ``localtime`` -> naive :class:`datetime.time`; ``time`` -> :class:`datetime.time` with tzinfo
- ``localdatetime`` -> naive :class:`datetime.datetime`
- ``datetime`` -> :class:`datetime.datetime` with tzinfo (zoned)
- ``duration`` -> :class:`Duration` (months, days, seconds, nanoseconds), as openCypher: the
  three units are kept apart because a month and a day have no fixed length in seconds.

Python's temporal types carry microseconds, so nanoseconds beyond microsecond precision are
truncated on instants (durations keep them).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from drasi_ray.model.errors import QueryEvaluationError
from drasi_ray.query.failures import RowDropped

_NANOS_PER_SECOND = 1_000_000_000
_SECONDS_PER_DAY = 86_400
_MONTH_DAYS = 30  # Drasi's length of a month, where it needs one (ordering, fractions)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


@dataclass(frozen=True, slots=True, eq=False)
class Duration:
    """A duration: ``months``, ``days``, ``seconds`` and ``nanoseconds`` (the last normalised
    to ``0 <= nanoseconds < 1e9``). Components may be negative.

    Drasi keeps a duration as months and one length of time (a chrono ``TimeDelta``), so a day
    is 24 hours there: two durations are equal when their months and their :attr:`length`
    are (``P1D = PT24H``), and the days stay apart here only to write the text ``P1D``.
    """

    months: int = 0
    days: int = 0
    seconds: int = 0
    nanoseconds: int = 0

    @staticmethod
    def of(months: int, days: int, seconds: int, nanoseconds: int) -> Duration:
        """Build a duration, carrying whole seconds out of ``nanoseconds``."""
        carry, nanos = divmod(nanoseconds, _NANOS_PER_SECOND)
        return Duration(months, days, seconds + carry, nanos)

    @property
    def total_nanoseconds_of_time(self) -> int:
        return self.seconds * _NANOS_PER_SECOND + self.nanoseconds

    @property
    def length(self) -> int:
        """Days and time together, in nanoseconds (Drasi's ``TimeDelta`` part)."""
        return self.days * _SECONDS_PER_DAY * _NANOS_PER_SECOND + self.total_nanoseconds_of_time

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Duration):
            return NotImplemented
        return (self.months, self.length) == (other.months, other.length)

    def __hash__(self) -> int:
        return hash((self.months, self.length))


# --------------------------------------------------------------------------- type tests


def type_name(value: Any) -> str | None:
    """The Cypher type name of a temporal value, or None if ``value`` is not temporal."""
    if isinstance(value, dt.datetime):
        return "DateTime" if value.tzinfo is not None else "LocalDateTime"
    if isinstance(value, dt.date):
        return "Date"
    if isinstance(value, dt.time):
        return "Time" if value.tzinfo is not None else "LocalTime"
    if isinstance(value, Duration):
        return "Duration"
    return None


def is_duration(value: Any) -> bool:
    return isinstance(value, Duration)


def same_kind(left: Any, right: Any) -> bool:
    """True when both are temporal values of the same Cypher type (so ``=`` may compare them)."""
    kind = type_name(left)
    return kind is not None and kind == type_name(right)


def nominal_nanoseconds(value: Duration) -> int:
    """The length of ``value`` in nanoseconds, a month counted as 30 days: the order of
    durations, as Drasi's ``<`` compares them (drasi-core expressions/mod.rs). Different
    durations may tie (``P1M`` and ``P30D``)."""
    return value.months * _MONTH_DAYS * _SECONDS_PER_DAY * _NANOS_PER_SECOND + value.length


def orderable(left: Any, right: Any) -> bool:
    """True when ``<`` is defined between the two: both of the same temporal type (durations
    order by :func:`nominal_nanoseconds`)."""
    return same_kind(left, right)


def order_key(value: Any) -> Any:
    """What ``<`` compares for a temporal value: a duration's nominal length, else itself."""
    return nominal_nanoseconds(value) if isinstance(value, Duration) else value


# --------------------------------------------------------------------------- construction


def now() -> dt.datetime:
    """The current instant as a UTC ``datetime``."""
    return dt.datetime.now(dt.timezone.utc)


def from_epoch_millis(millis: int) -> dt.datetime:
    """A UTC ``datetime`` ``millis`` milliseconds after the epoch (exact, no float rounding)."""
    return _EPOCH + dt.timedelta(milliseconds=millis)


def from_epoch_seconds(seconds: int | float, nanoseconds: int = 0) -> dt.datetime:
    """A UTC ``datetime`` from epoch seconds (and extra nanoseconds)."""
    whole = math.floor(seconds)
    micros = round((seconds - whole) * 1_000_000) + nanoseconds // 1000
    return _EPOCH + dt.timedelta(seconds=whole, microseconds=micros)


def parse_zone(name: str) -> dt.tzinfo:
    """``Z``, ``+01:00``, ``-0530`` or an IANA region like ``Europe/Paris``."""
    if name in ("Z", "z", "UTC"):
        return dt.timezone.utc
    match = re.fullmatch(r"([+-])(\d{2}):?(\d{2})?(?::?(\d{2}))?", name)
    if match:
        sign = -1 if match.group(1) == "-" else 1
        offset = dt.timedelta(
            hours=int(match.group(2)),
            minutes=int(match.group(3) or 0),
            seconds=int(match.group(4) or 0),
        )
        return dt.timezone(sign * offset)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise QueryEvaluationError(f"unknown time zone '{name}'") from error


_ZONE_SUFFIX = re.compile(r"^(?P<body>.*?)(?:\[(?P<region>[^\]]+)\])?$")
_OFFSET_SUFFIX = re.compile(r"(?P<offset>Z|z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)$")


def _split_zone(text: str) -> tuple[str, dt.tzinfo | None]:
    """Split ``2020-01-01T10:00+01:00[Europe/Paris]`` into the local part and its zone."""
    match = _ZONE_SUFFIX.match(text.strip())
    assert match is not None  # the pattern matches any string
    body, region = match.group("body"), match.group("region")
    zone: dt.tzinfo | None = parse_zone(region) if region else None
    time_start = body.find("T") if "T" in body else (0 if ":" in body[:3] else len(body))
    offset = _OFFSET_SUFFIX.search(body, time_start)
    if offset and (time_start < len(body) or body[:1] not in "+-"):
        body = body[: offset.start()]
        zone = zone or parse_zone(offset.group("offset"))
    return body, zone


def _parse_error(kind: str, text: str) -> QueryEvaluationError:
    return QueryEvaluationError(f"cannot parse {kind} from '{text}'")


def _fraction_micros(text: str) -> str:
    """Truncate a fractional second to microseconds, which is all Python keeps."""
    return re.sub(r"([.,]\d{1,6})\d*", r"\1", text).replace(",", ".")


_YEAR_MONTH = re.compile(r"(?P<year>\d{4})-?(?P<month>\d{2})")
_ORDINAL_DATE = re.compile(r"(?P<year>\d{4})-?(?P<day>\d{3})")
_QUARTER_DATE = re.compile(r"(?P<year>\d{4})-?Q(?P<quarter>\d)-?(?P<day>\d{1,2})")


def parse_date(text: str) -> dt.date:
    """ISO-8601 calendar and week dates, and as Drasi also reads them: ``2015-07`` (its first
    day), ``2015``, the ordinal ``2015-202`` and the quarter's ``2015-Q2-60``."""
    stripped = text.strip()
    try:
        return dt.date.fromisoformat(stripped)
    except ValueError:
        pass
    try:
        if stripped.isdigit() and len(stripped) == 4:
            return dt.date(int(stripped), 1, 1)
        if match := _YEAR_MONTH.fullmatch(stripped):
            return dt.date(int(match["year"]), int(match["month"]), 1)
        if match := _ORDINAL_DATE.fullmatch(stripped):
            return _ordinal_date(int(match["year"]), int(match["day"]))
        if match := _QUARTER_DATE.fullmatch(stripped):
            return _quarter_date(int(match["year"]), int(match["quarter"]), int(match["day"]))
    except ValueError as error:
        raise _parse_error("date", text) from error
    raise _parse_error("date", text)


def _ordinal_date(year: int, day: int) -> dt.date:
    value = dt.date.fromordinal(dt.date(year, 1, 1).toordinal() + day - 1)
    if value.year != year or day < 1:
        raise ValueError(f"year {year} has no day {day}")
    return value


def _quarter_date(year: int, quarter: int, day: int) -> dt.date:
    if not 1 <= quarter <= 4 or not 1 <= day <= 92:
        raise ValueError(f"no day {day} in quarter {quarter}")
    return dt.date(year, quarter * 3 - 2, 1) + dt.timedelta(days=day - 1)


def parse_local_time(text: str) -> dt.time:
    try:
        return dt.time.fromisoformat(_fraction_micros(text.strip()))
    except ValueError as error:
        raise _parse_error("time", text) from error


def parse_time(text: str) -> dt.time:
    """A zoned time; no offset in the text means UTC."""
    body, zone = _split_zone(text)
    local = parse_local_time(body)
    offset = zone.utcoffset(None) if zone is not None else None
    return local.replace(tzinfo=dt.timezone(offset) if offset is not None else dt.timezone.utc)


def parse_local_datetime(text: str) -> dt.datetime:
    """ISO-8601 text, or a date :func:`parse_date` reads, ``T`` and a time."""
    stripped = text.strip()
    try:
        return dt.datetime.fromisoformat(_fraction_micros(stripped))
    except ValueError:
        pass
    date_text, separator, time_text = stripped.partition("T")
    try:
        if separator:
            return dt.datetime.combine(parse_date(date_text), parse_local_time(time_text))
    except QueryEvaluationError as error:
        raise _parse_error("localdatetime", text) from error
    raise _parse_error("localdatetime", text)


def parse_datetime(text: str) -> dt.datetime:
    """A zoned datetime; no offset or region in the text means UTC.

    An offset without a ``[zone]`` gives the instant in UTC, as Drasi reads it (drasi-core
    ``ZonedDateTime::from_string``): ``2024-01-02T10:00+01:00`` is 09:00 UTC, its hour 9, and
    to the millisecond, as Drasi keeps it (``.123456`` reads as ``.123``). (Drasi refuses text
    without an offset or a zone; we read it as UTC.)
    """
    body, zone = _split_zone(text)
    local = parse_local_datetime(body).replace(tzinfo=zone or dt.timezone.utc)
    if "[" in text:
        return local
    instant = local.astimezone(dt.timezone.utc)
    return instant.replace(microsecond=instant.microsecond // 1000 * 1000)


_DURATION = re.compile(
    r"(?P<sign>-)?P(?:(?P<years>-?[\d.]+)Y)?(?:(?P<months>-?[\d.]+)M)?(?:(?P<weeks>-?[\d.]+)W)?"
    r"(?:(?P<days>-?[\d.]+)D)?(?:T(?:(?P<hours>-?[\d.]+)H)?(?:(?P<minutes>-?[\d.]+)M)?"
    r"(?:(?P<seconds>-?[\d.]+)S)?)?",
    re.IGNORECASE,
)


def parse_duration(text: str) -> Duration:
    """ISO-8601 duration text such as ``P1Y2M3DT4H5M6.5S`` or ``PT90M``."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or not any(match.group(unit) for unit in _DURATION_UNITS[:7]):
        raise _parse_error("duration", text)
    parts = {
        unit: Decimal(value)
        for unit, value in match.groupdict().items()
        if unit != "sign" and value is not None
    }
    duration = duration_from_components(parts)
    return negate_duration(duration) if match.group("sign") else duration


_DURATION_UNITS = (
    "years",
    "months",
    "weeks",
    "days",
    "hours",
    "minutes",
    "seconds",
    "milliseconds",
    "microseconds",
    "nanoseconds",
)


def duration_from_components(parts: Mapping[str, Decimal]) -> Duration:
    """Build a duration from unit amounts (any may be fractional; fractions cascade down)."""
    months_total = parts.get("years", Decimal(0)) * 12 + parts.get("months", Decimal(0))
    months = int(months_total)
    days_total = (
        parts.get("weeks", Decimal(0)) * 7
        + parts.get("days", Decimal(0))
        + (months_total - months) * _MONTH_DAYS
    )
    days = int(days_total)
    seconds_total = (
        (days_total - days) * _SECONDS_PER_DAY
        + parts.get("hours", Decimal(0)) * 3600
        + parts.get("minutes", Decimal(0)) * 60
        + parts.get("seconds", Decimal(0))
        + parts.get("milliseconds", Decimal(0)) / 1000
        + parts.get("microseconds", Decimal(0)) / 1_000_000
        + parts.get("nanoseconds", Decimal(0)) / _NANOS_PER_SECOND
    )
    nanos = int((seconds_total * _NANOS_PER_SECOND).to_integral_value())
    return Duration.of(months, days, 0, nanos)


def duration_from_map(value: Mapping[str, Any]) -> Duration:
    """``duration({days: 1, hours: 12})``; unknown keys are an error (a typo is not silence)."""
    parts: dict[str, Decimal] = {}
    for key, amount in value.items():
        unit = key.lower()
        if unit not in _DURATION_UNITS:
            raise QueryEvaluationError(f"unknown duration component '{key}'")
        if amount is None:
            continue
        if isinstance(amount, bool) or not isinstance(amount, (int, float)):
            raise QueryEvaluationError(f"duration component '{key}' must be a number")
        parts[unit] = Decimal(str(amount))
    return duration_from_components(parts)


def _map_int(value: Mapping[str, Any], key: str, default: int) -> int:
    amount = value.get(key, default)
    if amount is None:
        return default
    if isinstance(amount, bool) or not isinstance(amount, int):
        raise QueryEvaluationError(f"temporal component '{key}' must be an Integer")
    return amount


def _lower_keys(value: Mapping[str, Any]) -> dict[str, Any]:
    return {str(key).lower(): item for key, item in value.items()}


def date_from_map(value: Mapping[str, Any]) -> dt.date:
    """``date({year: 2024, month: 1, day: 15})``, or by ``week`` and ``dayOfWeek``, by
    ``ordinalDay``, or by ``quarter`` and ``dayOfQuarter``, tried in that order as Drasi does
    (drasi-core ``create_date_from_component``). A missing month, day, dayOfWeek or
    dayOfQuarter is the first (Drasi would count dayOfWeek and dayOfQuarter from 0, the day
    before)."""
    parts = _lower_keys(value)
    if "year" not in parts:
        raise QueryEvaluationError("a date map needs a 'year'")
    year = _map_int(parts, "year", 1)
    try:
        if "week" in parts:
            week, weekday = _map_int(parts, "week", 1), _map_int(parts, "dayofweek", 1)
            return dt.date.fromisocalendar(year, week, weekday)
        if "ordinalday" in parts:
            return _ordinal_date(year, _map_int(parts, "ordinalday", 1))
        if "quarter" in parts:
            quarter, day = _map_int(parts, "quarter", 1), _map_int(parts, "dayofquarter", 1)
            return _quarter_date(year, quarter, day)
        return dt.date(year, _map_int(parts, "month", 1), _map_int(parts, "day", 1))
    except ValueError as error:
        raise QueryEvaluationError(f"invalid date {dict(value)}: {error}") from error


def time_from_map(value: Mapping[str, Any]) -> dt.time:
    """The time-of-day part of a map (hour .. nanosecond), naive."""
    parts = _lower_keys(value)
    micros = (
        _map_int(parts, "millisecond", 0) * 1000
        + _map_int(parts, "microsecond", 0)
        + _map_int(parts, "nanosecond", 0) // 1000
    )
    try:
        return dt.time(
            _map_int(parts, "hour", 0),
            _map_int(parts, "minute", 0),
            _map_int(parts, "second", 0),
            micros,
        )
    except ValueError as error:
        raise QueryEvaluationError(f"invalid time {dict(value)}: {error}") from error


def now_in_zone_of(value: Mapping[str, Any]) -> dt.datetime | None:
    """For a map holding only a ``timezone``, the current instant there at that zone's fixed
    offset (``datetime({timezone: 'Europe/Paris'})``, as drasi-core's constructors); else
    None."""
    if set(_lower_keys(value)) != {"timezone"}:
        return None
    local = now().astimezone(zone_from_map(value))
    return local.replace(tzinfo=dt.timezone(local.utcoffset() or dt.timedelta(0)))


def zone_from_map(value: Mapping[str, Any]) -> dt.tzinfo | None:
    zone = _lower_keys(value).get("timezone")
    if zone is None:
        return None
    if not isinstance(zone, str):
        raise QueryEvaluationError("'timezone' must be a String")
    return parse_zone(zone)


def zoned_time_from_map(value: Mapping[str, Any]) -> dt.time:
    """``time({hour: 10, timezone: 'Europe/Paris'})``: a named zone gives its offset on
    1970-01-01, as Drasi takes it (drasi-core ``Time``); no zone means UTC."""
    local = time_from_map(value)
    zone = zone_from_map(value) or dt.timezone.utc
    offset = dt.datetime.combine(_EPOCH.date(), local, tzinfo=zone).utcoffset()
    return local.replace(tzinfo=dt.timezone(offset or dt.timedelta(0)))


def datetime_from_map(value: Mapping[str, Any]) -> dt.datetime:
    """``datetime({year.., timezone: 'Europe/Paris'})`` or ``{epochMillis}``/``{epochSeconds}``."""
    parts = _lower_keys(value)
    if "epochmillis" in parts:
        return from_epoch_millis(_map_int(parts, "epochmillis", 0))
    if "epochseconds" in parts:
        return from_epoch_seconds(
            _map_int(parts, "epochseconds", 0), _map_int(parts, "nanosecond", 0)
        )
    local = local_datetime_from_map(value)
    return local.replace(tzinfo=zone_from_map(value) or dt.timezone.utc)


def local_datetime_from_map(value: Mapping[str, Any]) -> dt.datetime:
    return dt.datetime.combine(date_from_map(value), time_from_map(value))


# --------------------------------------------------------------------------- accessors


def _date_fields(value: dt.date) -> dict[str, Callable[[], Any]]:
    iso = value.isocalendar()

    def day_of_quarter() -> int:
        # By ordinals: ``value`` may be a datetime, which cannot be subtracted from a date.
        start = dt.date(value.year, ((value.month - 1) // 3) * 3 + 1, 1)
        return value.toordinal() - start.toordinal() + 1

    return {
        "year": lambda: value.year,
        "quarter": lambda: (value.month - 1) // 3 + 1,
        "month": lambda: value.month,
        "week": lambda: iso.week,
        "weekyear": lambda: iso.year,
        "day": lambda: value.day,
        "ordinalday": lambda: value.timetuple().tm_yday,
        "dayofweek": lambda: iso.weekday,
        "weekday": lambda: iso.weekday,
        "dayofquarter": day_of_quarter,
        "quarterday": day_of_quarter,
    }


def _time_fields(value: dt.time | dt.datetime) -> dict[str, Callable[[], Any]]:
    return {
        "hour": lambda: value.hour,
        "minute": lambda: value.minute,
        "second": lambda: value.second,
        "millisecond": lambda: value.microsecond // 1000,
        "microsecond": lambda: value.microsecond,
        "nanosecond": lambda: value.microsecond * 1000,
    }


def _zone_fields(value: dt.time | dt.datetime) -> dict[str, Callable[[], Any]]:
    """The zone's name, else its offset as chrono writes a ``FixedOffset`` (``+00:00``, never
    ``Z``), as Drasi's accessors give them."""

    def offset() -> dt.timedelta:
        delta = value.utcoffset()
        return delta if delta is not None else dt.timedelta(0)

    zone = value.tzinfo
    return {
        "timezone": lambda: zone.key if isinstance(zone, ZoneInfo) else _chrono_offset(value),
        "offset": lambda: _chrono_offset(value),
        "offsetminutes": lambda: int(offset().total_seconds()) // 60,
        "offsetseconds": lambda: int(offset().total_seconds()),
    }


def _epoch_fields(value: dt.datetime) -> dict[str, Callable[[], Any]]:
    def since_epoch() -> dt.timedelta:
        return value - _EPOCH

    return {
        "epochmillis": lambda: since_epoch() // dt.timedelta(milliseconds=1),
        "epochseconds": lambda: since_epoch() // dt.timedelta(seconds=1),
    }


def _duration_fields(value: Duration) -> dict[str, Callable[[], Any]]:
    """Drasi's duration accessors (drasi-core expressions/mod.rs): each unit counts the whole
    length of days and time, truncated toward zero (``P1DT2H`` is 26 hours); months add whole
    30-day lengths and years whole 365-day lengths. The ``...Of...`` parts are remainders that
    keep the sign, where Drasi writes 12 for ``P1Y``'s monthsOfYear (and 7 for daysOfWeek)
    instead of 0: we keep 0."""
    length = value.length

    def whole(unit_nanos: int) -> int:
        return _truncate(length, unit_nanos)

    day = _SECONDS_PER_DAY * _NANOS_PER_SECOND
    return {
        "years": lambda: _truncate(value.months, 12) + _truncate(whole(day), 365),
        "quarters": lambda: _truncate(value.months, 3),
        "months": lambda: value.months + _truncate(whole(day), _MONTH_DAYS),
        "weeks": lambda: whole(7 * day),
        "days": lambda: whole(day),
        "hours": lambda: whole(3600 * _NANOS_PER_SECOND),
        "minutes": lambda: whole(60 * _NANOS_PER_SECOND),
        "seconds": lambda: whole(_NANOS_PER_SECOND),
        "milliseconds": lambda: whole(1_000_000),
        "microseconds": lambda: whole(1000),
        "nanoseconds": lambda: length,
        "monthsofyear": lambda: _remainder(value.months, 12),
        "monthsofquarter": lambda: _remainder(value.months, 3),
        "daysofweek": lambda: _remainder(whole(day), 7),
        "minutesofhour": lambda: _remainder(whole(60 * _NANOS_PER_SECOND), 60),
        "secondsofminute": lambda: _remainder(whole(_NANOS_PER_SECOND), 60),
        "millisecondsofsecond": lambda: _remainder(whole(1_000_000), 1000),
        "microsecondsofsecond": lambda: _remainder(whole(1000), 1_000_000),
        "nanosecondsofsecond": lambda: _remainder(length, _NANOS_PER_SECOND),
    }


def _truncate(amount: int, unit: int) -> int:
    """``amount / unit`` rounded toward zero, exactly (Rust's integer division)."""
    quotient = abs(amount) // unit
    return -quotient if amount < 0 else quotient


def _remainder(amount: int, unit: int) -> int:
    """The remainder of :func:`_truncate`, with the sign of ``amount`` (Rust's ``%``)."""
    return amount - _truncate(amount, unit) * unit


def _fields(value: Any) -> dict[str, Callable[[], Any]]:
    if isinstance(value, Duration):
        return _duration_fields(value)
    if isinstance(value, dt.datetime):
        fields = {**_date_fields(value), **_time_fields(value)}
        if value.tzinfo is not None:
            fields.update(_zone_fields(value))
            fields.update(_epoch_fields(value))
        return fields
    if isinstance(value, dt.date):
        return _date_fields(value)
    if isinstance(value, dt.time):
        fields = _time_fields(value)
        if value.tzinfo is not None:
            fields.update(_zone_fields(value))
        return fields
    return {}


def accessor(value: Any, key: str) -> Any:
    """``value.key`` for a temporal value (keys case-insensitive, as Cypher's accessors).

    Returns None when ``value`` is not temporal; raises for an unknown accessor on a
    temporal value (a typo should not read as null).
    """
    fields = _fields(value)
    if not fields:
        return None
    getter = fields.get(key.lower())
    if getter is None:
        raise QueryEvaluationError(f"{type_name(value)} has no property '{key}'")
    return getter()


# --------------------------------------------------------------------------- arithmetic


def _add_months(value: dt.date, months: int) -> dt.date:
    """Shift by calendar months, clamping the day to the target month's last day."""
    if months == 0:
        return value
    index = value.year * 12 + (value.month - 1) + months
    year, month = divmod(index, 12)
    day = min(value.day, _days_in_month(year, month + 1))
    return value.replace(year=year, month=month + 1, day=day)


def _days_in_month(year: int, month: int) -> int:
    start = dt.date(year, month, 1)
    following = dt.date(year + month // 12, month % 12 + 1, 1)
    return (following - start).days


def _time_delta(duration: Duration) -> dt.timedelta:
    return dt.timedelta(seconds=duration.seconds, microseconds=duration.nanoseconds // 1000)


def add_duration(value: Any, duration: Duration) -> Any:
    """``instant + duration``: months first (clamped), then days, then the time part.

    Raises QueryEvaluationError when the result falls outside years 1 to 9999 (e.g.
    ``date('9999-12-31') + duration('P1D')``), as it does for any other bad operand.
    """
    try:
        return _add_duration(value, duration)
    except (OverflowError, ValueError) as error:
        message = f"{type_name(value)} + Duration is out of range: {error}"
        raise QueryEvaluationError(message) from None


def _add_duration(value: Any, duration: Duration) -> Any:
    if isinstance(value, dt.datetime):
        shifted = _add_months(value, duration.months)
        assert isinstance(shifted, dt.datetime)
        return shifted + dt.timedelta(days=duration.days) + _time_delta(duration)
    if isinstance(value, dt.date):
        # A date keeps only whole days of the time part, truncated toward zero (PT-36H is -1 day).
        whole_days = int(duration.seconds / _SECONDS_PER_DAY)
        return _add_months(value, duration.months) + dt.timedelta(days=duration.days + whole_days)
    if isinstance(value, dt.time):
        base = dt.datetime.combine(dt.date(2000, 1, 1), value)
        return (base + _time_delta(duration)).timetz()
    return NotImplemented


def negate_duration(duration: Duration) -> Duration:
    return Duration.of(-duration.months, -duration.days, -duration.seconds, -duration.nanoseconds)


def add(left: Any, right: Any) -> Any:
    """``left + right`` for temporal operands; NotImplemented when not applicable."""
    if isinstance(left, Duration) and isinstance(right, Duration):
        return Duration.of(
            left.months + right.months,
            left.days + right.days,
            left.seconds + right.seconds,
            left.nanoseconds + right.nanoseconds,
        )
    if isinstance(right, Duration) and type_name(left) is not None:
        return add_duration(left, right)
    if isinstance(left, Duration) and type_name(right) is not None:
        return add_duration(right, left)
    return NotImplemented


def subtract(left: Any, right: Any) -> Any:
    """``left - right``: instant - duration, duration - duration, and instant - instant of the
    same type (a duration in days and seconds, as :func:`between` without months)."""
    if isinstance(right, Duration) and type_name(left) is not None:
        return add(left, negate_duration(right))
    if same_kind(left, right) and not isinstance(left, Duration):
        return _difference(right, left)
    return NotImplemented


def _difference(start: Any, end: Any) -> Duration:
    """``end - start`` as days + seconds (no months)."""
    if isinstance(start, dt.datetime) or not isinstance(start, dt.date):
        if isinstance(start, dt.time):
            start = dt.datetime.combine(dt.date(2000, 1, 1), start)
            end = dt.datetime.combine(dt.date(2000, 1, 1), end)
        delta = end - start
        nanos = (delta.days * _SECONDS_PER_DAY + delta.seconds) * _NANOS_PER_SECOND + (
            delta.microseconds * 1000
        )
        return Duration.of(0, 0, 0, nanos)
    return Duration(0, (end - start).days, 0, 0)


def multiply(left: Any, right: Any) -> Any:
    """``duration * number`` (either order); fractions cascade down as in construction."""
    if isinstance(left, Duration) and _is_number(right):
        return _scale(left, Decimal(str(right)))
    if isinstance(right, Duration) and _is_number(left):
        return _scale(right, Decimal(str(left)))
    return NotImplemented


def divide(left: Any, right: Any) -> Any:
    """``duration / number``; a zero divisor is left to the caller (it drops the row)."""
    if isinstance(left, Duration) and _is_number(right):
        if right == 0:
            raise RowDropped("division by zero")
        return _scale(left, 1 / Decimal(str(right)))
    return NotImplemented


def _scale(duration: Duration, factor: Decimal) -> Duration:
    return duration_from_components(
        {
            "months": duration.months * factor,
            "days": duration.days * factor,
            "seconds": duration.seconds * factor,
            "nanoseconds": duration.nanoseconds * factor,
        }
    )


def negate(value: Any) -> Any:
    return negate_duration(value) if isinstance(value, Duration) else NotImplemented


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def between(start: Any, end: Any) -> Duration | None:
    """``duration.between(start, end)``: the time elapsed, as Drasi gives it (drasi-core
    ``Between``, a chrono difference): days for two dates, else days and time together as
    seconds, never months (2024-01-01 to 2024-03-06 is P65D).

    Null in, null out. Both must be instants of compatible kinds (a date may be paired with
    a datetime: it counts as its midnight).
    """
    if start is None or end is None:
        return None
    start, end = _align(start, end)
    return _difference(start, end)


def in_months(start: Any, end: Any) -> Duration | None:
    """``duration.inMonths(start, end)``: the calendar months from one date to the other, as
    Drasi counts them (drasi-core ``InMonths``): by year and month only, so Jan 31 to Feb 1 is
    one month. Zero when either is a time of day, which has no month."""
    if start is None or end is None:
        return None
    if type_name(start) in (None, "Duration") or type_name(end) in (None, "Duration"):
        raise QueryEvaluationError(
            f"duration.inMonths needs two temporal instants, got {start!r} and {end!r}"
        )
    if isinstance(start, dt.time) or isinstance(end, dt.time):
        return Duration()
    return Duration((end.year - start.year) * 12 + end.month - start.month)


def _align(start: Any, end: Any) -> tuple[Any, Any]:
    """Make two instants comparable: promote a date to the other side's datetime kind, and a
    local datetime paired with a zoned one to the zoned one's zone (as drasi-core ``Between``)."""
    if isinstance(start, dt.datetime) != isinstance(end, dt.datetime):
        if isinstance(start, dt.datetime) and isinstance(end, dt.date):
            end = dt.datetime.combine(end, dt.time(0), tzinfo=start.tzinfo)
        elif isinstance(end, dt.datetime) and isinstance(start, dt.date):
            start = dt.datetime.combine(start, dt.time(0), tzinfo=end.tzinfo)
    if isinstance(start, dt.datetime) and isinstance(end, dt.datetime):
        if start.tzinfo is None:
            start = start.replace(tzinfo=end.tzinfo)
        if end.tzinfo is None:
            end = end.replace(tzinfo=start.tzinfo)
        return start, end
    if type_name(start) != type_name(end) or type_name(start) is None:
        raise QueryEvaluationError(
            f"duration.between needs two temporal values, got {start!r} and {end!r}"
        )
    return start, end


def in_seconds(start: Any, end: Any) -> Duration | None:
    """``duration.inSeconds(start, end)``: the difference in seconds only (no months/days)."""
    if start is None or end is None:
        return None
    start, end = _align(start, end)
    if isinstance(start, dt.date) and not isinstance(start, dt.datetime):
        return Duration(0, 0, (end - start).days * _SECONDS_PER_DAY, 0)
    return _difference(start, end)


def in_days(start: Any, end: Any) -> Duration | None:
    """``duration.inDays(start, end)``: whole days only."""
    difference = in_seconds(start, end)
    if difference is None:
        return None
    return Duration(
        0, int(difference.total_nanoseconds_of_time / (_SECONDS_PER_DAY * _NANOS_PER_SECOND)), 0, 0
    )


# --------------------------------------------------------------------------- output


def _format_offset(offset: dt.timedelta) -> str:
    """ISO-8601: ``Z`` for UTC, else :func:`_offset_text`."""
    return "Z" if offset == dt.timedelta(0) else _offset_text(offset)


def _offset_text(offset: dt.timedelta) -> str:
    """``+01:00``, ``-05:30`` (``+00:00`` for UTC), with ``:SS`` only when it has seconds:
    chrono's ``FixedOffset`` Display."""
    total = int(offset.total_seconds())
    sign = "-" if total < 0 else "+"
    hours, rest = divmod(abs(total), 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{sign}{hours:02d}:{minutes:02d}"
    return text + (f":{seconds:02d}" if seconds else "")


def _format_time_of_day(value: dt.time | dt.datetime) -> str:
    text = f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    return text


def _format_zone(value: dt.time | dt.datetime) -> str:
    offset = value.utcoffset()
    text = _format_offset(offset if offset is not None else dt.timedelta(0))
    if isinstance(value.tzinfo, ZoneInfo):
        text += f"[{value.tzinfo.key}]"
    return text


def format_duration(value: Duration) -> str:
    """ISO-8601: ``P1Y2M3DT4H5M6.5S``; the zero duration is ``PT0S``."""
    years, months = int(value.months / 12), int(math.fmod(value.months, 12))
    total_nanos = value.total_nanoseconds_of_time
    sign = "-" if total_nanos < 0 else ""
    seconds, nanos = divmod(abs(total_nanos), _NANOS_PER_SECOND)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    date_part = "".join(
        f"{amount}{unit}"
        for amount, unit in ((years, "Y"), (months, "M"), (value.days, "D"))
        if amount
    )
    time_part = "".join(
        f"{sign}{amount}{unit}" for amount, unit in ((hours, "H"), (minutes, "M")) if amount
    )
    if seconds or nanos:
        fraction = f".{nanos:09d}".rstrip("0") if nanos else ""
        time_part += f"{sign}{seconds}{fraction}S"
    if not date_part and not time_part:
        return "PT0S"
    return "P" + date_part + ("T" + time_part if time_part else "")


def _chrono_time_of_day(value: dt.time | dt.datetime) -> str:
    """A time of day as chrono's ``NaiveTime`` Display writes it: the fraction of a second, if
    any, in 3 digits when whole milliseconds, else 6 (we keep no nanoseconds), zeros kept."""
    text = f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    micros = value.microsecond
    if micros % 1000 == 0:
        return text + (f".{micros // 1000:03d}" if micros else "")
    return text + f".{micros:06d}"


def _chrono_offset(value: dt.time | dt.datetime) -> str:
    """The UTC offset of ``value`` as chrono writes it (:func:`_offset_text`)."""
    return _offset_text(value.utcoffset() or dt.timedelta(0))


def _chrono_duration(value: Duration) -> str:
    """A duration as chrono's ``TimeDelta`` Display writes it (chrono 0.4.41), which is how
    Drasi writes one: days and time as one count of seconds, the fraction without trailing
    zeros, a negative one with '-' before the P, and the zero one ``P0D`` (``PT7261.002S``,
    ``-PT1.5S``). Drasi's ``Duration`` Display writes only that chrono part, so it would write
    ``P1M`` as ``P0D``: we write years and months in front instead (``P1Y2M``, ``P1MT3600S``).
    """
    nanos = (value.days * _SECONDS_PER_DAY + value.seconds) * _NANOS_PER_SECOND
    nanos += value.nanoseconds
    seconds, fraction = divmod(abs(nanos), _NANOS_PER_SECOND)
    digits = f"{seconds}.{fraction:09d}".rstrip("0") if fraction else str(seconds)
    sign = "-" if nanos < 0 else ""
    if not value.months:
        return f"{sign}PT{digits}S" if nanos else "P0D"
    years, months = int(value.months / 12), int(math.fmod(value.months, 12))
    date_part = "".join(
        f"{amount}{unit}" for amount, unit in ((years, "Y"), (months, "M")) if amount
    )
    return f"P{date_part}" + (f"T{sign}{digits}S" if nanos else "")


def to_result_text(value: Any) -> str | None:
    """The text Drasi writes for a temporal value in a query result, or None if not temporal.

    drasi-lib writes a temporal value as its chrono ``Display``, which is not always the ISO
    text ``toString`` gives (a local datetime ``2024-01-02 10:00:00.250``), except a zoned
    datetime, which it writes as RFC 3339 (chrono's ``to_rfc3339``): a ``T``, the fraction of a
    second only if there is one (3 or 6 digits), the offset never ``Z`` and without the zone's
    name (``2024-01-02T10:00:00.250+01:00``).
    """
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            time_of_day = _chrono_time_of_day(value)
            return f"{value.date().isoformat()}T{time_of_day}{_chrono_offset(value)}"
        return f"{value.date().isoformat()} {_chrono_time_of_day(value)}"
    if isinstance(value, dt.time):
        return _chrono_time_of_day(value)  # a zoned time too: Drasi's Display drops its offset
    if isinstance(value, Duration):
        return _chrono_duration(value)
    return to_iso(value)


def to_iso(value: Any) -> str | None:
    """ISO-8601 text of a temporal value (UTC offsets written ``Z``), or None if not temporal."""
    if isinstance(value, Duration):
        return format_duration(value)
    if isinstance(value, dt.datetime):
        text = f"{value.date().isoformat()}T{_format_time_of_day(value)}"
        return text + _format_zone(value) if value.tzinfo is not None else text
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        text = _format_time_of_day(value)
        return text + _format_zone(value) if value.tzinfo is not None else text
    return None
