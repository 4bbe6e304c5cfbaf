"""Drasi's order of values across types: what ``drasi.listMax`` and ``drasi.listMin`` compare.

The ``<`` operator of a query has its own rules (:mod:`drasi_ray.query.values`: only numbers
with numbers and a temporal type with itself). Drasi's list helpers instead compare with the
ordering its value type implements (drasi-core ``variable_value/partial_eq.rs``), which also
ranks values of different types:

    null < boolean < date < local time < local datetime < time < datetime < duration
         < string < number

with two quirks kept here because they decide results: only a string or a number is greater
than a value of a lower rank (a date is not "greater" than a boolean, the two are
unordered), and null is unordered with a string. Lists, maps and graph elements are
unordered with everything. Within a type: numbers by value (an Integer against a Float as
the Float nearest it), strings by code point, ``false < true``, instants chronologically, a
``time`` by its clock time alone (its offset ignored), durations by their length of days and
time (months ignored). NaN is unordered.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from drasi_ray.query import temporal

_NULL, _BOOLEAN, _STRING, _NUMBER = 0, 1, 8, 9
_TEMPORAL_RANKS = {
    "Date": 2,
    "LocalTime": 3,
    "LocalDateTime": 4,
    "Time": 5,
    "DateTime": 6,
    "Duration": 7,
}


def _rank(value: Any) -> int | None:
    """The value's rank in the order of types above, None for an unordered type."""
    if value is None:
        return _NULL
    if isinstance(value, bool):
        return _BOOLEAN
    if isinstance(value, (int, float)):
        return _NUMBER
    if isinstance(value, str):
        return _STRING
    return _TEMPORAL_RANKS.get(temporal.type_name(value) or "")


def compare(left: Any, right: Any) -> int | None:
    """-1, 0 or 1 as ``left`` is less than, equal to or greater than ``right`` in Drasi's order
    of values; None when the two are unordered."""
    left_rank, right_rank = _rank(left), _rank(right)
    if left_rank is None or right_rank is None:
        return None
    if left_rank == right_rank:
        return _compare_same_type(left, right, left_rank)
    if left_rank > right_rank:
        return 1 if left_rank >= _STRING else None
    if left_rank == _NULL and right_rank == _STRING:
        return None
    return -1


def _compare_same_type(left: Any, right: Any, rank: int) -> int | None:
    if rank == _NULL:
        return 0
    if rank == _NUMBER:
        return _compare_numbers(left, right)
    if rank == _TEMPORAL_RANKS["Duration"]:
        return _sign(left.length, right.length)
    if rank == _TEMPORAL_RANKS["Time"]:
        return _sign(_clock_time(left), _clock_time(right))
    return _sign(left, right)


def _compare_numbers(left: int | float, right: int | float) -> int | None:
    if type(left) is int and type(right) is int:
        return _sign(left, right)
    first, second = float(left), float(right)
    if math.isnan(first) or math.isnan(second):
        return None
    return _sign(first, second)


def _clock_time(value: dt.time) -> dt.time:
    return value.replace(tzinfo=None)


def _sign(left: Any, right: Any) -> int:
    return int(left > right) - int(left < right)
