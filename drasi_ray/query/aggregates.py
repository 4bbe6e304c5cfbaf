"""Revertible accumulators for count, sum, avg, min, max and collect (with DISTINCT), and
Drasi's ``drasi.linearGradient`` and ``drasi.last``.

An accumulator summarises the values one aggregate call received from the rows of one group.
Rows come and go, so every accumulator supports :meth:`Accumulator.add` and an exact
:meth:`Accumulator.remove` of a value it was given before, both in O(log n) at worst — never
a rescan of the group. ``token`` identifies the contributing row (it keeps ``collect`` in
arrival order and lets a row take back exactly its own value).

Result types follow docs/semantics.md §3: ``count`` is an Integer, ``sum`` and ``avg`` are Floats,
numeric ``min``/``max`` are Floats (Drasi's), and an empty group gives the identity values
count 0, sum 0.0, avg 0.0, min/max null, collect [].
Nulls are ignored by every aggregate, as in openCypher.

As Drasi's, ``sum``, ``avg``, ``min`` and ``max`` also take durations: ``sum`` and ``avg`` of
durations are Durations (exact, component by component, where Drasi keeps milliseconds of the
time part only), and ``min``/``max`` order durations by
:func:`~drasi_ray.query.temporal.nominal_nanoseconds`.
"""

from __future__ import annotations

import datetime as dt
import heapq
import math
from collections import deque
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Protocol

from drasi_ray.model.changes import Element
from drasi_ray.model.errors import QueryEvaluationError
from drasi_ray.query import temporal
from drasi_ray.query.values import hashable_key, is_list, is_number, strict_key, type_name


class Accumulator(Protocol):
    """What the engine needs from one aggregate call's per-group state."""

    def add(self, token: Hashable, value: Any) -> None: ...

    def remove(self, token: Hashable, value: Any) -> None: ...

    def result(self) -> Any: ...


class Count:
    """``count(x)``: the number of non-null values."""

    __slots__ = ("_count",)

    def __init__(self) -> None:
        self._count = 0

    def add(self, token: Hashable, value: Any) -> None:
        if value is not None:
            self._count += 1

    def remove(self, token: Hashable, value: Any) -> None:
        if value is not None:
            self._count -= 1

    def result(self) -> int:
        return self._count


def _number(function: str, value: Any) -> int | float:
    kind = type(value)
    if kind is float or kind is int:
        number: int | float = value
        return number
    if not is_number(value):
        raise QueryEvaluationError(f"{function}() expects numbers, got {type_name(value)}")
    result: int | float = value
    return result


class _Total:
    """An exact running total: integers summed exactly, floats kept apart.

    Keeping integers exact avoids drift from many add/remove pairs; floats are summed with
    a count of non-finite values so that inf/nan do not poison later removals.
    """

    __slots__ = ("count", "floats", "integers", "specials")

    def __init__(self) -> None:
        self.integers = 0
        self.floats = 0.0
        self.count = 0
        self.specials: dict[Any, int] = {}

    def change(self, value: int | float, sign: int) -> None:
        self.count += sign
        if isinstance(value, int):
            self.integers += sign * value
        elif math.isfinite(value):
            self.floats += sign * value
        else:
            key = "nan" if math.isnan(value) else value
            self.specials[key] = self.specials.get(key, 0) + sign
            if not self.specials[key]:
                del self.specials[key]
        if self.count == 0:
            # An empty group sums to nothing: forget the floats' rounding residue, and what an
            # Integer taken back as an equal Float (2 given, 2.0 taken back) left behind.
            self.integers = 0
            self.floats = 0.0

    def value(self) -> float:
        if self.specials:
            return sum((math.nan if k == "nan" else k) for k in self.specials)
        return float(self.integers) + self.floats


class _DurationTotal:
    """An exact running total of durations, component by component."""

    __slots__ = ("count", "total", "used")

    def __init__(self) -> None:
        self.count = 0
        self.total = temporal.Duration()
        self.used = False  # ever given a duration: then its empty sum is PT0S, not 0.0

    def change(self, value: temporal.Duration, sign: int) -> None:
        self.count += sign
        self.used = True
        total = self.total
        self.total = temporal.Duration.of(
            total.months + sign * value.months,
            total.days + sign * value.days,
            total.seconds + sign * value.seconds,
            total.nanoseconds + sign * value.nanoseconds,
        )


class _Summing:
    """What ``sum`` and ``avg`` keep: the non-null numbers and durations, totalled apart."""

    __slots__ = ("_durations", "_numbers")

    function = "sum"
    """The aggregate's name, for error messages."""

    def __init__(self) -> None:
        self._numbers = _Total()
        self._durations = _DurationTotal()

    def add(self, token: Hashable, value: Any) -> None:
        kind = type(value)
        if kind is int or kind is float:  # the common case, without a further call
            self._numbers.change(value, 1)
        elif value is not None:
            self._change(value, 1)

    def remove(self, token: Hashable, value: Any) -> None:
        kind = type(value)
        if kind is int or kind is float:
            self._numbers.change(value, -1)
        elif value is not None:
            self._change(value, -1)

    def _change(self, value: Any, sign: int) -> None:
        if type(value) is temporal.Duration:
            self._durations.change(value, sign)
        else:
            self._numbers.change(_number(self.function, value), sign)

    def _mixed(self) -> bool:
        """Numbers and durations at once: such a group has no sum or average (null)."""
        return self._numbers.count > 0 and self._durations.count > 0

    def _of_durations(self, argument: Any) -> bool | None:
        """Whether the group's total is of durations (None: numbers and durations mixed, which
        has no total). An empty group takes the kind of ``argument``, as Drasi types it."""
        numbers, durations = self._numbers.count, self._durations.count
        if numbers and durations:
            return None
        if numbers or durations:
            return bool(durations)
        return type(argument) is temporal.Duration

    def typed_total(self, argument: Any) -> float | temporal.Duration | None:
        """The total read over a row whose argument is ``argument`` (see
        :meth:`_of_durations`)."""
        kind = self._of_durations(argument)
        if kind is None:
            return None
        return self._durations.total if kind else self._numbers.value()

    def typed_mean(self, argument: Any) -> float | temporal.Duration | None:
        """The mean read over a row whose argument is ``argument``; 0.0 for no values."""
        kind = self._of_durations(argument)
        if kind is None:
            return None
        durations, numbers = self._durations, self._numbers
        if kind and durations.count:
            mean: temporal.Duration = temporal.divide(durations.total, durations.count)
            return mean
        return numbers.value() / numbers.count if numbers.count else 0.0


class Sum(_Summing):
    """``sum(x)``: a Float over numbers, a Duration over durations; 0.0 for no values (PT0S
    once the group has summed durations, as Drasi's); null over numbers and durations mixed."""

    __slots__ = ()

    def result(self) -> float | temporal.Duration | None:
        if self._mixed():
            return None
        durations = self._durations
        if durations.count or (durations.used and not self._numbers.count):
            return durations.total
        return self._numbers.value()


class Avg(_Summing):
    """``avg(x)``: a Float over numbers, a Duration over durations; 0.0 for no values
    (Drasi's identity, not null); null over numbers and durations mixed."""

    __slots__ = ()

    function = "avg"

    def result(self) -> float | temporal.Duration | None:
        if self._mixed():
            return None
        durations = self._durations
        if durations.count:
            mean: temporal.Duration = temporal.divide(durations.total, durations.count)
            return mean
        numbers = self._numbers
        if numbers.count == 0:
            return 0.0
        return numbers.value() / numbers.count


_TEMPORAL_RANKS: dict[str | None, int] = {
    "Date": 3,
    "LocalDateTime": 4,
    "DateTime": 5,
    "LocalTime": 6,
    "Time": 7,
}
"""min/max ranks of the ordered temporal types. Values of one type order among themselves;
two types never compare (Python refuses date < datetime, naive < aware), they order by rank."""

_DURATION_RANK = 8


def _order_key(value: Any) -> tuple[int, Any]:
    """A total order for min/max: numbers by value, then strings, then booleans, then each
    temporal type, then durations (by nominal length). Other values (lists, maps...) raise
    QueryEvaluationError."""
    kind = type(value)
    if kind is float or kind is int:
        return (0, value)
    if is_number(value):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, bool):
        return (2, value)
    if kind is temporal.Duration:
        return (_DURATION_RANK, temporal.nominal_nanoseconds(value))
    rank = _TEMPORAL_RANKS.get(temporal.type_name(value))
    if rank is None:
        raise QueryEvaluationError(f"cannot order values of type {type_name(value)}")
    return (rank, value)


def _key(value: Any) -> Any:
    """:func:`hashable_key`, with strings, integers and non-NaN floats (their own keys)
    inline."""
    kind = type(value)
    if kind is str or kind is int or (kind is float and value == value):
        return value
    return hashable_key(value)


class _Extreme:
    """min or max over a multiset: value counts plus a heap with lazy deletion.

    Each distinct value has at most one heap entry; entries of values whose count dropped to
    zero are discarded when they surface, and the heap is rebuilt when stale entries
    outnumber live ones, so memory stays proportional to the live distinct values.

    A heap entry is ``(rank, value, serial, key)``: ``rank`` and ``value`` order it (for max,
    the rank is negated and a number's value too, so the heap stays a min-heap of plain tuples
    compared in C); ``serial`` is unique, so ties never compare the keys.
    """

    __slots__ = ("_counts", "_heap", "_maximum", "_serial", "_values")

    def __init__(self, maximum: bool) -> None:
        self._maximum = maximum
        self._counts: dict[Any, int] = {}
        self._values: dict[Any, Any] = {}
        self._heap: list[tuple[Any, Any, int, Any]] = []
        self._serial = 0

    def _entry(self, key: Any) -> tuple[Any, Any, int, Any]:
        rank, value = _order_key(self._values[key])
        self._serial += 1
        if not self._maximum:
            return (rank, value, self._serial, key)
        return (-rank, -value if rank == 0 else _Reversed(value), self._serial, key)

    def add(self, token: Hashable, value: Any) -> None:
        if value is None:
            return
        key = _key(value)
        count = self._counts.get(key, 0)
        self._counts[key] = count + 1
        if count == 0:
            self._values[key] = value
            heapq.heappush(self._heap, self._entry(key))
            if len(self._heap) > 2 * len(self._counts) + 16:
                self._heap = [self._entry(k) for k in self._counts]
                heapq.heapify(self._heap)

    def remove(self, token: Hashable, value: Any) -> None:
        """Take back one ``value``; nothing if it is not there (Drasi's bookkeeping of a
        group fed by an aggregating part can take back what it never applied)."""
        if value is None:
            return
        key = _key(value)
        count = self._counts.get(key, 0) - 1
        if count > 0:
            self._counts[key] = count
        elif count == 0:
            del self._counts[key]
            del self._values[key]

    def result(self) -> Any:
        heap = self._heap
        while heap and heap[0][3] not in self._counts:
            heapq.heappop(heap)
        if not heap:
            return None
        value = self._values[heap[0][3]]
        return float(value) if is_number(value) else value


class _Reversed:
    """Inverts the order of a wrapped key (max-heaps over arbitrary comparable keys)."""

    __slots__ = ("key",)

    def __init__(self, key: Any) -> None:
        self.key = key

    def __lt__(self, other: _Reversed) -> bool:
        return bool(other.key < self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and bool(self.key == other.key)

    def __hash__(self) -> int:
        return hash(self.key)


class Min(_Extreme):
    """``min(x)``; numbers come out as Float (Drasi's), null for no values."""

    def __init__(self) -> None:
        super().__init__(maximum=False)


class Max(_Extreme):
    """``max(x)``; numbers come out as Float (Drasi's), null for no values."""

    def __init__(self) -> None:
        super().__init__(maximum=True)


class Collect:
    """``collect(x)``: the non-null values, in the order they were added. As Drasi's, taking
    a value back removes the first equal one (not necessarily the one that row added), and
    a row that changes takes its value back and adds the new one at the end.

    Values are kept by arrival number, with a queue of numbers per distinct value (Integer and
    Float apart, as Drasi compares them), so both steps cost O(1); only building the list is
    O(n), as Drasi's copy of it is.
    """

    __slots__ = ("_numbers", "_serial", "_values")

    def __init__(self) -> None:
        self._values: dict[int, Any] = {}
        self._numbers: dict[Any, deque[int]] = {}
        self._serial = 0

    def add(self, token: Hashable, value: Any) -> None:
        if value is None:
            return
        self._serial += 1
        self._values[self._serial] = value
        key = strict_key(value)
        queue = self._numbers.get(key)
        if queue is None:
            self._numbers[key] = deque((self._serial,))
        else:
            queue.append(self._serial)

    def remove(self, token: Hashable, value: Any) -> None:
        if value is None:
            return
        key = strict_key(value)
        queue = self._numbers.get(key)
        if not queue:
            return
        del self._values[queue.popleft()]
        if not queue:
            del self._numbers[key]

    def result(self) -> list[Any]:
        return list(self._values.values())


class Distinct:
    """``f(DISTINCT x)``: feeds the inner accumulator each distinct value once."""

    __slots__ = ("_counts", "_inner")

    def __init__(self, inner: Accumulator) -> None:
        self._inner = inner
        self._counts: dict[Any, int] = {}

    def add(self, token: Hashable, value: Any) -> None:
        if value is None:
            return
        key = hashable_key(value)
        count = self._counts.get(key, 0)
        self._counts[key] = count + 1
        if count == 0:
            self._inner.add(key, value)

    def remove(self, token: Hashable, value: Any) -> None:
        if value is None:
            return
        key = hashable_key(value)
        count = self._counts.get(key, 0) - 1
        if count > 0:
            self._counts[key] = count
        elif count == 0:
            del self._counts[key]
            self._inner.remove(key, value)

    def result(self) -> Any:
        return self._inner.result()


class LinearGradient:
    """``drasi.linearGradient(x, y)``: the slope of the least-squares line through the
    group's points, sample covariance of x and y over sample variance of x.

    The statistics are kept as Drasi keeps them (running means, a running sum of squared
    deviations of x and of co-deviations), updated and reverted with Drasi's own formulas in
    Drasi's order of operations, so the Float is the one Drasi reports. A point with a null
    coordinate is left out. Null for fewer than two points and for points all at one x
    (no slope; Drasi divides 0 by 0); an infinite slope, which only rounding residue can
    produce, is 0.0 as Drasi reports it. Numbers count as themselves, durations as
    milliseconds, dates and datetimes as epoch milliseconds (local ones read as UTC), times as
    whole seconds since midnight.
    """

    __slots__ = ("_count", "_covariance", "_mean_x", "_mean_y", "_squares")

    def __init__(self) -> None:
        self._count = 0
        self._mean_x = self._mean_y = self._squares = self._covariance = 0.0

    def add(self, token: Hashable, value: Any) -> None:
        point = gradient_point(value)
        if point is None:
            return
        x, y = point
        self._count += 1
        delta_x, delta_y = x - self._mean_x, y - self._mean_y
        self._mean_x += delta_x / self._count
        self._mean_y += delta_y / self._count
        self._squares += delta_x * (x - self._mean_x)
        self._covariance += delta_x * (y - self._mean_y)

    def remove(self, token: Hashable, value: Any) -> None:
        point = gradient_point(value)
        if point is None:
            return
        x, y = point
        self._count -= 1
        if self._count == 0:
            self._mean_x = self._mean_y = self._squares = self._covariance = 0.0
            return
        delta_x, delta_y = x - self._mean_x, y - self._mean_y
        self._mean_x -= delta_x / self._count
        self._mean_y -= delta_y / self._count
        self._squares -= delta_x * (x - self._mean_x)
        self._covariance -= delta_x * (y - self._mean_y)

    def result(self) -> float | None:
        if self._count < 2:
            return None  # Drasi: 0.0 / 0.0
        scale = float(self._count - 1)
        slope = _ieee_divide(self._covariance / scale, self._squares / scale)
        if math.isnan(slope):
            return None
        return slope if math.isfinite(slope) else 0.0


def _ieee_divide(numerator: float, denominator: float) -> float:
    """``numerator / denominator`` as IEEE 754 (and Rust) divide: a zero denominator gives an
    infinity or NaN instead of raising."""
    if denominator != 0.0:
        return numerator / denominator
    if numerator == 0.0 or math.isnan(numerator):
        return math.nan
    return math.copysign(math.inf, numerator) * math.copysign(1.0, denominator)


def gradient_point(value: Any) -> tuple[float, float] | None:
    """The (x, y) of a ``drasi.linearGradient`` argument pair ``[x, y]`` as Floats; None when
    either is null. Raises QueryEvaluationError for a coordinate of another type."""
    x, y = value
    if x is None or y is None:
        return None
    return _coordinate(x), _coordinate(y)


def _coordinate(value: Any) -> float:
    """A gradient coordinate as Drasi reads it (see :class:`LinearGradient`)."""
    if is_number(value):
        return float(value)
    if type(value) is temporal.Duration:
        return float(_toward_zero(value.length, 1_000_000))
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)
        return float(_epoch_micros(moment) // 1000)
    if isinstance(value, dt.date):
        midnight = dt.datetime.combine(value, dt.time(0), tzinfo=dt.timezone.utc)
        return float(_epoch_micros(midnight) // 1000)
    if isinstance(value, dt.time):
        return float(value.hour * 3600 + value.minute * 60 + value.second)
    raise QueryEvaluationError(
        f"drasi.linearGradient() expects numbers or temporal values, got {type_name(value)}"
    )


def _epoch_micros(moment: dt.datetime) -> int:
    return (moment - _EPOCH) // dt.timedelta(microseconds=1)


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _toward_zero(amount: int, unit: int) -> int:
    """``amount / unit`` truncated toward zero (chrono's ``num_milliseconds``)."""
    quotient = abs(amount) // unit
    return quotient if amount >= 0 else -quotient


class Last:
    """``drasi.last(x)``: the value the group's latest change brought, as Drasi's: a row
    entering the group sets it (null included), a row leaving sets it to null (so removing
    any row clears it until the next row enters); null for an empty group. Takes what Drasi
    can store in an element property: null, booleans, numbers, strings, lists, maps, local
    datetimes and datetimes (a graph element inside a list or map becomes null)."""

    __slots__ = ("_value",)

    def __init__(self) -> None:
        self._value: Any = None

    def add(self, token: Hashable, value: Any) -> None:
        self._value = storable_value(value)

    def remove(self, token: Hashable, value: Any) -> None:
        self._value = None

    def result(self) -> Any:
        return self._value


def storable_value(value: Any) -> Any:
    """``value`` as Drasi keeps it for ``drasi.last`` (an element property value): graph
    elements inside lists and maps become null. Raises QueryEvaluationError for a value that
    is no property value (a graph element, a date, a time, a duration)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dt.datetime):
        return value
    if is_list(value):
        return [_nested_storable(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _nested_storable(item) for key, item in value.items()}
    raise QueryEvaluationError(f"drasi.last() cannot keep a value of type {type_name(value)}")


def _nested_storable(value: Any) -> Any:
    return None if isinstance(value, Element) else storable_value(value)


_FACTORIES: dict[str, Callable[[], Accumulator]] = {
    "count": Count,
    "sum": Sum,
    "avg": Avg,
    "min": Min,
    "max": Max,
    "collect": Collect,
    "drasi.lineargradient": LinearGradient,
    "drasi.last": Last,
}


class Retained:
    """An aggregate inside Drasi's ``retainHistory(...)``: a row that leaves or changes takes
    nothing back, so the value covers every value the group was ever given (an update adds
    its new value to the old one: ``retainHistory(count(x))`` counts versions, and
    ``retainHistory(collect(x))`` lists every value in arrival order). Memory grows with the
    values given, as in Drasi."""

    __slots__ = ("_added", "_inner")

    def __init__(self, inner: Accumulator) -> None:
        self._inner = inner
        self._added = 0

    def add(self, token: Hashable, value: Any) -> None:
        self._added += 1  # every value is kept apart, even from the same row
        self._inner.add((token, self._added), value)

    def remove(self, token: Hashable, value: Any) -> None:
        """Nothing to take back: the history stays."""

    def result(self) -> Any:
        return self._inner.result()


def accumulator_factory(
    name: str, distinct: bool, retain: bool = False
) -> Callable[[], Accumulator]:
    """A constructor of empty accumulators for aggregate function ``name`` (lower-case), with
    DISTINCT and inside ``retainHistory(...)`` as asked."""
    base = _FACTORIES[name]
    counted: Callable[[], Accumulator] = (lambda: Distinct(base())) if distinct else base
    if not retain:
        return counted
    return lambda: Retained(counted())


def check_argument(name: str, value: Any) -> None:
    """Raise QueryEvaluationError if aggregate ``name`` cannot take ``value``.

    Checked before a row touches any accumulator, so a bad row is refused whole.
    """
    if value is None:
        return
    if name in ("sum", "avg"):
        if type(value) is not temporal.Duration:
            _number(name, value)
    elif name in ("min", "max"):
        _order_key(value)
        hashable_key(value)
    elif name in ("count", "collect"):
        hashable_key(value)
    elif name == "drasi.lineargradient":
        gradient_point(value)
    elif name == "drasi.last":
        storable_value(value)


_I64_LIMIT = 2**63


def _truncated(number: float) -> int:
    """``number`` as Rust's ``as i64`` makes it: toward zero, saturating, NaN to 0."""
    if math.isnan(number):
        return 0
    if number >= _I64_LIMIT:
        return _I64_LIMIT - 1
    if number < -_I64_LIMIT:
        return -_I64_LIMIT
    return int(number)


def _extreme_value(accumulator: Accumulator, argument: Any, snapshot: bool) -> Any:
    value = accumulator.result()
    if snapshot and type(argument) is int and type(value) is float:
        return _truncated(value)
    return value


def _sum_value(accumulator: Accumulator, argument: Any, snapshot: bool) -> Any:
    if isinstance(accumulator, _Summing) and argument is not None:
        return accumulator.typed_total(argument)
    return accumulator.result()


def _avg_value(accumulator: Accumulator, argument: Any, snapshot: bool) -> Any:
    if isinstance(accumulator, _Summing) and argument is not None:
        return accumulator.typed_mean(argument)
    return accumulator.result()


_TYPED_VALUES: dict[str, Callable[[Accumulator, Any, bool], Any]] = {
    "min": _extreme_value,
    "max": _extreme_value,
    "sum": _sum_value,
    "avg": _avg_value,
}


def aggregate_value(name: str, accumulator: Accumulator, argument: Any, snapshot: bool) -> Any:
    """What Drasi's aggregate ``name`` gives, evaluated over a row whose argument is
    ``argument``: when applying or taking back that row (``snapshot=False``), or when reading
    the group as it stands without changing it (``snapshot=True``, what Drasi does for the
    ``before`` of a diff).

    Drasi types some results by that argument: ``min``/``max`` read as a snapshot give an
    Integer for an Integer argument (the Float extreme truncated toward zero: ``2.5`` reads as
    ``2``) and a Float otherwise, while applying gives a Float; ``sum`` and ``avg`` give a
    Duration over durations (an empty group: for a duration argument) and null over numbers
    and durations mixed, where Drasi mixes their units. Drasi's ``min``/``max`` also give null
    for a null argument, which hides the group's extreme: we give the extreme. (Both are in
    docs/conformance.md's deviations.) Other aggregates give :meth:`Accumulator.result`
    whatever the row.
    """
    typed = _TYPED_VALUES.get(name)
    if typed is None or isinstance(accumulator, Distinct):
        return accumulator.result()
    return typed(accumulator, argument, snapshot)
