"""Drasi's future and stateful functions, compiled against a query's evaluation context.

========================================  =======================================================
function                                  returns (``Awaiting``: not due yet, see values.AWAITING)
========================================  =======================================================
``drasi.awaiting()``                      ``Awaiting``
``drasi.trueUntil(cond, due)``            true once ``cond`` held until ``due``; ``Awaiting``
                                          while it holds before ``due`` (the first due time
                                          scheduled for the row wins)
``drasi.trueFor(cond, duration)``         true once ``cond`` held for ``duration`` without a
                                          break; ``Awaiting`` while it holds for less
``drasi.trueLater(cond, due)``            ``cond`` once ``due`` is past; ``Awaiting`` before
                                          (the last due time scheduled for the row wins)
``drasi.trueNowOrLater(cond, due)``       true if ``cond`` holds now, else as ``trueLater``
``drasi.future(element, due)``            ``element`` once ``due`` is past; ``Awaiting`` before
                                          (every due time scheduled is kept)
``drasi.previousValue(x[, default])``     the value ``x`` had when the row was last evaluated
``drasi.previousDistinctValue(x[, d])``   the last value ``x`` had that differs from its value
``drasi.slidingWindow(duration, agg)``    ``agg`` over the rows that changed within
                                          ``duration`` (see :mod:`drasi_ray.query.parts`)
========================================  =======================================================

A null condition, due time or duration gives null, as does a future function evaluated
without an anchor (a change being evaluated). Due times are a Date (midnight UTC), a
LocalDateTime (read as UTC), a ZonedDateTime or an Integer of epoch milliseconds; durations a
Duration (its months are dropped, as Drasi's ``TimeDelta`` drops them) or an Integer of
milliseconds.

"Now" is the evaluation's ``realtime`` (:class:`~drasi_ray.query.evaluation.QueryClock`): the
change's time, or the due time when a scheduled re-evaluation runs. When a function cannot
answer yet it schedules a re-evaluation of the anchor element's rows at the due time, under the
key (call site, row): see :mod:`drasi_ray.query.futures` for how ``trueFor``/``trueUntil``
(first due time wins), ``trueLater``/``trueNowOrLater``/``slidingWindow`` (last wins) and
``future`` (all kept) push.

State is kept per (call site, result key): the grouping values when the function is evaluated
in an aggregating part (so the rows of one group share a ``trueFor`` clock, as in Drasi), else
the row. Each call also remembers, per row, its last arguments and result (a memo), which is
what lets a restarted query rebuild exactly the rows it had (``EvaluationMode.REPLAY``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from drasi_ray.model.changes import Element
from drasi_ray.model.errors import QueryEvaluationError
from drasi_ray.query import temporal
from drasi_ray.query.evaluation import EvaluationContext, EvaluationMode
from drasi_ray.query.functions import FunctionSpec
from drasi_ray.query.futures import PushType
from drasi_ray.query.stateful import MISSING, FunctionState, Memo, digest
from drasi_ray.query.values import AWAITING, equals, type_name

Row = Mapping[str, Any]
Evaluator = Callable[[Row], Any]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MS = dt.timedelta(milliseconds=1)
_NANOS_PER_MS = 1_000_000


# --------------------------------------------------------------------------- arguments


def _bad(function: str, expected: str, value: Any) -> QueryEvaluationError:
    return QueryEvaluationError(f"{function}() expects {expected}, got {type_name(value)}")


def condition_of(function: str, value: Any) -> bool | None:
    """A condition argument: a Boolean, or None for null; anything else is an error."""
    if value is None or isinstance(value, bool):
        return value
    raise _bad(function, "a Boolean condition", value)


def due_ms_of(function: str, value: Any) -> int | None:
    """A due-time argument in epoch milliseconds (None for null)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise _bad(function, "a due time", value)
    if isinstance(value, int):
        if value < 0:
            raise QueryEvaluationError(f"{function}() due time must not be negative, got {value}")
        return value
    if isinstance(value, dt.datetime):
        instant = value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)
        return (instant - _EPOCH) // _MS
    if isinstance(value, dt.date):
        return (dt.datetime.combine(value, dt.time(0), tzinfo=dt.timezone.utc) - _EPOCH) // _MS
    raise _bad(function, "a Date, LocalDateTime, ZonedDateTime or Integer due time", value)


def duration_ms_of(function: str, value: Any) -> int | None:
    """A duration argument in milliseconds (None for null); months are dropped (Drasi)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise _bad(function, "a Duration", value)
    if isinstance(value, int):
        return value
    if isinstance(value, temporal.Duration):
        length = value.length
        return length // _NANOS_PER_MS if length >= 0 else -(-length // _NANOS_PER_MS)
    raise _bad(function, "a Duration or Integer milliseconds", value)


# --------------------------------------------------------------------------- base classes


class StatefulCall:
    """One call site of a stateful function in a compiled query.

    ``__call__(row)`` evaluates it for the row the context points at. When a row leaves the
    query part, :meth:`release_row` is called with its digest, and :meth:`release_result` with
    the digest of a result key nothing uses any more, so per-row state does not outlive it.
    """

    name = ""

    def __init__(self, args: Sequence[Evaluator], context: EvaluationContext) -> None:
        state = context.state
        if state is None:
            raise QueryEvaluationError(
                f"{self.name}() keeps state between changes: it can only be evaluated in a "
                "continuous query"
            )
        self._args = tuple(args)
        self._context = context
        self._state: FunctionState = state
        self.site = context.register(self)

    def __call__(self, row: Row) -> Any:
        raise NotImplementedError

    def release_row(self, row_digest: str) -> None:
        """The row ``row_digest`` is gone: forget what was kept for it alone."""
        self._state.forget(self.site, row_digest)

    def release_result(self, result_digest: str) -> None:
        """No row has result key ``result_digest`` any more (kept values stay by default)."""

    def _push(self, push_type: PushType, row_digest: str, anchor_id: str, due_ms: int) -> None:
        clock = self._context.clock
        self._state.queue.push(
            push_type, (self.site, row_digest), anchor_id, clock.transaction_ms, due_ms
        )

    def _unschedule(self, row_digest: str) -> None:
        self._state.queue.remove((self.site, row_digest))


class MemoizedCall(StatefulCall):
    """A call whose result is remembered per row, so a rebuild can return it again.

    Subclasses implement :meth:`apply` (evaluate and update state) and may override
    :meth:`keep`/:meth:`recall` to store something other than the result itself.
    """

    def __call__(self, row: Row) -> Any:
        values = [argument(row) for argument in self._args]
        context, state = self._context, self._state
        row_digest = digest(context.row_key)
        arguments = digest(tuple(values))
        if context.mode is not EvaluationMode.APPLY:
            memo = state.memo(self.site, row_digest)
            if memo is not None and (
                memo.arguments == arguments or context.mode is EvaluationMode.SNAPSHOT
            ):
                return self.recall(memo.result, values)
            if context.mode is EvaluationMode.SNAPSHOT:
                return None
        result = self.apply(values, row_digest)
        state.remember(self.site, row_digest, Memo(arguments, self.keep(result)))
        return result

    def apply(self, values: list[Any], row_digest: str) -> Any:
        raise NotImplementedError

    def keep(self, result: Any) -> Any:
        """What to remember of ``result`` (JSON-encodable by the state's codec)."""
        return result

    def recall(self, kept: Any, values: list[Any]) -> Any:
        """The result again, from what :meth:`keep` kept and the same arguments."""
        return kept


# --------------------------------------------------------------------------- the functions


class Awaiting(StatefulCall):
    """``drasi.awaiting()``: always Awaiting (it keeps nothing, but has a call site)."""

    name = "drasi.awaiting"

    def __call__(self, row: Row) -> Any:
        return AWAITING


class TrueUntil(MemoizedCall):
    name = "drasi.trueUntil"

    def apply(self, values: list[Any], row_digest: str) -> Any:
        anchor = self._context.anchor_id
        condition = condition_of(self.name, values[0])
        if anchor is None or condition is None:
            return None
        due_ms = due_ms_of(self.name, values[1])
        if due_ms is None:
            return None
        if not condition or due_ms <= self._context.clock.realtime_ms:
            self._unschedule(row_digest)
            return condition
        self._push(PushType.IF_NOT_EXISTS, row_digest, anchor, due_ms)
        return AWAITING


class TrueFor(MemoizedCall):
    """``drasi.trueFor``: the time since when the condition holds is kept per result key."""

    name = "drasi.trueFor"

    def apply(self, values: list[Any], row_digest: str) -> Any:
        context = self._context
        anchor = context.anchor_id
        condition = condition_of(self.name, values[0])
        if anchor is None or condition is None:
            return None
        length = duration_ms_of(self.name, values[1])
        if length is None:
            return None
        result_digest = digest(context.result_key)
        if not condition:
            self._state.set_value(self.site, result_digest, MISSING)
            self._unschedule(row_digest)
            return False
        since = self._state.value(self.site, result_digest)
        if since is MISSING:
            since = context.clock.transaction_ms
            self._state.set_value(self.site, result_digest, since)
        due_ms = since + length
        if due_ms <= context.clock.realtime_ms:
            self._unschedule(row_digest)
            return True
        self._push(PushType.IF_NOT_EXISTS, row_digest, anchor, due_ms)
        return AWAITING

    def release_result(self, result_digest: str) -> None:
        """A row (or group) that leaves restarts its condition's clock when it comes back, as
        Drasi clears the time when the row is removed."""
        self._state.set_value(self.site, result_digest, MISSING)


class TrueLater(MemoizedCall):
    """``drasi.trueLater(condition, due)``: the condition once ``due`` has passed; before
    then awaiting, with the row re-evaluated at ``due`` (the entry overwrites an earlier one)."""

    name = "drasi.trueLater"
    true_now_suffices = False
    """Whether a condition true now is the answer at once, whatever ``due``
    (:class:`TrueNowOrLater`)."""

    def apply(self, values: list[Any], row_digest: str) -> Any:
        anchor = self._context.anchor_id
        condition = condition_of(self.name, values[0])
        if anchor is None or condition is None:
            return None
        if condition and self.true_now_suffices:
            return True
        due_ms = due_ms_of(self.name, values[1])
        if due_ms is None:
            return None
        if due_ms <= self._context.clock.realtime_ms:
            return condition
        self._push(PushType.OVERWRITE, row_digest, anchor, due_ms)
        return AWAITING


class TrueNowOrLater(TrueLater):
    """``drasi.trueNowOrLater(condition, due)``: true at once when the condition is, else as
    :class:`TrueLater`."""

    name = "drasi.trueNowOrLater"
    true_now_suffices = True


class FutureElement(MemoizedCall):
    """``drasi.future(element, due)``: schedules its *argument* element, not the anchor."""

    name = "drasi.future"

    def apply(self, values: list[Any], row_digest: str) -> Any:
        element = values[0]
        if not isinstance(element, Element):
            raise _bad(self.name, "a node or relationship", element)
        due_ms = due_ms_of(self.name, values[1])
        if due_ms is None:
            raise _bad(self.name, "a due time", None)
        if due_ms <= self._context.clock.realtime_ms:
            self._unschedule(row_digest)
            return element
        self._push(PushType.ALWAYS, row_digest, element.id, due_ms)
        return AWAITING

    def keep(self, result: Any) -> Any:
        return result is not AWAITING  # the element itself is not kept: it is the argument

    def recall(self, kept: Any, values: list[Any]) -> Any:
        return values[0] if kept else AWAITING


class PreviousValue(StatefulCall):
    """``drasi.previousValue``: keeps (current, previous) per result key.

    Not memoized: in a rebuild, a row whose value is still the kept current one gets the kept
    previous one, which is what it got when last applied. State outlives the row, as Drasi's
    does (a row that comes back continues from the value it had).
    """

    name = "drasi.previousValue"

    def __call__(self, row: Row) -> Any:
        value = self._args[0](row)
        default = self._args[1](row) if len(self._args) > 1 else None
        context = self._context
        result_digest = digest(context.result_key)
        kept = self._state.value(self.site, result_digest)
        if context.mode is EvaluationMode.SNAPSHOT:
            return default if kept is MISSING else kept[1]
        if context.mode is EvaluationMode.REPLAY and kept is not MISSING and equals(kept[0], value):
            return kept[1]
        previous = default if kept is MISSING else kept[0]
        self._state.set_value(self.site, result_digest, [value, previous])
        return previous


class PreviousDistinctValue(StatefulCall):
    """``drasi.previousDistinctValue``: keeps (last different value, current) per result key.

    Evaluating it again with the value it last saw changes nothing, so a rebuild needs no memo.
    """

    name = "drasi.previousDistinctValue"

    def __call__(self, row: Row) -> Any:
        value = self._args[0](row)
        default = self._args[1](row) if len(self._args) > 1 else None
        context = self._context
        result_digest = digest(context.result_key)
        kept = self._state.value(self.site, result_digest)
        distinct, last = (default, default) if kept is MISSING else kept
        if context.mode is EvaluationMode.SNAPSHOT:
            return distinct
        if not equals(value, last):
            distinct = last
        self._state.set_value(self.site, result_digest, [distinct, value])
        return distinct


class SlidingWindowValue(StatefulCall):
    """``drasi.slidingWindow(duration, expression)`` outside the arguments of an aggregate: the
    expression's value. The window itself is applied by the aggregating part to the aggregate
    calls inside the expression (:class:`WindowedArgument`)."""

    name = "drasi.slidingWindow"

    def __call__(self, row: Row) -> Any:
        return self._args[1](row)


class WindowedArgument(MemoizedCall):
    """The argument of an aggregate call inside ``drasi.slidingWindow(duration, ...)``.

    A row contributes its value until ``duration`` after the change that last touched it
    (the evaluation's transaction time); after that it contributes null, which every
    aggregate ignores. While it contributes, a re-evaluation is scheduled for when it expires.
    """

    name = "drasi.slidingWindow"

    def __init__(
        self, duration: Evaluator, argument: Evaluator, context: EvaluationContext
    ) -> None:
        super().__init__((duration, argument), context)

    def apply(self, values: list[Any], row_digest: str) -> Any:
        length = duration_ms_of(self.name, values[0])
        if length is None:
            return None
        clock = self._context.clock
        due_ms = clock.transaction_ms + length
        if clock.realtime_ms >= due_ms:
            return None
        anchor = self._context.anchor_id
        if anchor is not None:
            self._push(PushType.OVERWRITE, row_digest, anchor, due_ms)
        return values[1]

    def keep(self, result: Any) -> Any:
        return result is not None  # whether the row still contributed

    def recall(self, kept: Any, values: list[Any]) -> Any:
        return values[1] if kept else None


# --------------------------------------------------------------------------- registry

_CALLS: dict[str, tuple[type[StatefulCall], int, int]] = {
    "drasi.awaiting": (Awaiting, 0, 0),
    "drasi.trueuntil": (TrueUntil, 2, 2),
    "drasi.truefor": (TrueFor, 2, 2),
    "drasi.truelater": (TrueLater, 2, 2),
    "drasi.truenoworlater": (TrueNowOrLater, 2, 2),
    "drasi.future": (FutureElement, 2, 2),
    "drasi.previousvalue": (PreviousValue, 1, 2),
    "drasi.previousdistinctvalue": (PreviousDistinctValue, 1, 2),
    "drasi.slidingwindow": (SlidingWindowValue, 2, 2),
}

SLIDING_WINDOW = "drasi.slidingwindow"


def _unavailable(*_args: Any) -> Any:
    raise QueryEvaluationError("a stateful function is compiled by the engine, not called")


SPECS: Mapping[str, FunctionSpec] = {
    name: FunctionSpec(name, _unavailable, low, high) for name, (_, low, high) in _CALLS.items()
}
"""Name and arity of every stateful function, by lower-case name (for the parser)."""


def lookup(name: str) -> FunctionSpec | None:
    """The stateful function called ``name`` (any case), or None."""
    return SPECS.get(name.lower())


def compile_call(name: str, args: Sequence[Evaluator], context: EvaluationContext) -> StatefulCall:
    """Compile one call of the stateful function ``name`` (registering its call site)."""
    kind = _CALLS[name.lower()][0]
    return kind(args, context)
