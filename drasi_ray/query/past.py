"""Drasi's past functions, over the element history of the query being evaluated.

``drasi.getVersionByTimestamp(element, ts)`` and ``drasi.getVersionsByTimeRange(element, from,
to[, retrieve_initial_value])`` read :class:`~drasi_ray.model.history.ElementHistory` (its
semantics and bounds are documented there) through the evaluation context
(:class:`~drasi_ray.query.evaluation.EvaluationContext`): the engine of a query that calls them
keeps one. Both are contextual functions (the compiler passes the context first). Timestamps
are milliseconds: an Integer, or a date (its midnight UTC), a local datetime (read as UTC) or a
datetime; a negative Integer is an error, as the other argument types Drasi refuses.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from drasi_ray.model.changes import Element
from drasi_ray.model.errors import QueryEvaluationError
from drasi_ray.model.history import ElementHistory
from drasi_ray.query.values import type_name

PAST_FUNCTIONS = frozenset({"drasi.getversionbytimestamp", "drasi.getversionsbytimerange"})
"""The functions that read element history (lower-case registry names)."""


def get_version_by_timestamp(context: Any, element: Any, timestamp: Any) -> Element | None:
    """``drasi.getVersionByTimestamp(element, ts)``: the element's version in effect at
    ``ts``, null if it had none yet."""
    subject = _element("drasi.getVersionByTimestamp", element)
    time = _millis("drasi.getVersionByTimestamp", timestamp)
    return _history(context, "drasi.getVersionByTimestamp").as_at(subject.id, time)


def get_versions_by_time_range(
    context: Any, element: Any, start: Any, end: Any, retrieve_initial_value: Any = False
) -> list[Element]:
    """``drasi.getVersionsByTimeRange(element, from, to[, retrieve_initial_value])``: the
    element's versions that took effect from ``from`` to ``to`` (both included), oldest
    first; with ``retrieve_initial_value`` true, from the version in effect at ``from``."""
    name = "drasi.getVersionsByTimeRange"
    subject = _element(name, element)
    if not isinstance(retrieve_initial_value, bool):
        raise QueryEvaluationError(
            f"{name}() expects a Boolean 4th argument, got {type_name(retrieve_initial_value)}"
        )
    history = _history(context, name)
    return history.between(
        subject.id, _millis(name, start), _millis(name, end), retrieve_initial_value
    )


def _element(function: str, value: Any) -> Element:
    if not isinstance(value, Element):
        raise QueryEvaluationError(
            f"{function}() expects a node or relationship, got {type_name(value)}"
        )
    return value


def _history(context: Any, function: str) -> ElementHistory:
    history: ElementHistory | None = getattr(context, "history", None)
    if history is None:
        raise QueryEvaluationError(f"{function}() is evaluated outside a continuous query")
    return history


def _millis(function: str, value: Any) -> int:
    """A past function's timestamp in milliseconds (see the module docstring)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise QueryEvaluationError(f"{function}() timestamp must not be negative: {value}")
        return value
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)
        return (moment - _EPOCH) // dt.timedelta(milliseconds=1)
    if isinstance(value, dt.date):
        return (dt.datetime.combine(value, dt.time(0), dt.timezone.utc) - _EPOCH) // _MILLISECOND
    raise QueryEvaluationError(
        f"{function}() expects a timestamp (Integer ms, date or datetime), got {type_name(value)}"
    )


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MILLISECOND = dt.timedelta(milliseconds=1)
