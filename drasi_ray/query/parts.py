"""Query parts: filter a row, then project it (or group and aggregate it), one row change at
a time, with the rules of Drasi's query-part evaluator (drasi-core ``QueryPartEvaluator``).

A query part is everything up to one WITH or the final RETURN. It receives the
:class:`~drasi_ray.query.contexts.Context` of one row's change and returns those of its own
rows for the next part (the last part's are the result diffs). What makes the diffs Drasi's:

- A projecting part (no aggregate) turns ADDING / UPDATING / REMOVING into the same, or into
  an ADDING or REMOVING when the row starts or stops passing its WHERE.
- An aggregating part turns each into an AGGREGATION of the row's group: ``before`` is the
  group read as it stands (Drasi's *snapshot*), ``after`` the group once the row is applied
  or taken back. A row that moves between groups gives two (the new group first). Snapshots
  and applied values differ in type where Drasi's do (:func:`~drasi_ray.query.aggregates.
  aggregate_value`), which is why a group whose values did not change can still be reported.
- A part after an aggregating part receives AGGREGATION contexts and follows Drasi's
  bookkeeping of each group's last reported row and its identity row (:class:`_Signatures`):
  a group that empties leaves the part (its row is removed), one that fills again comes back.

Each part keeps, per incoming row identity, what it made of that row (the projected row, or
the row's contribution to its group: group, values and aggregate arguments), so it reads a
row's previous state without evaluating the previous row again, and takes a contribution back
exactly. Cost per row change: O(1) projections plus O(log n) accumulator updates, no rescan.

The WHERE a part applies is the one before its projection: the MATCH WHERE for the first part,
the previous WITH's WHERE for later parts (Drasi's layout). A row whose evaluation divides by
zero (:class:`RowDropped`) is dropped while it does, and comes back when it no longer does.
Drasi skips such a row's change instead, and then also every later change whose previous row
divided by zero, which leaves a row out of the results for good (docs/conformance.md).

Drasi's stateful functions (:mod:`drasi_ray.query.future_functions`) are compiled against the
query's :class:`~drasi_ray.query.evaluation.EvaluationContext`; a part that holds any points the
context at each row before evaluating it (row key, and result key: the grouping values in an
aggregating part), evaluates the rows as they were before the change, and the group rows it
reads as they stand, with the functions only looking (``SNAPSHOT``), and lets the functions
forget a row that leaves. While a scheduled re-evaluation runs (the context is
``reprocessing``), a row is passed on even where nothing in it changed, so the parts after it
evaluate it again at the new time (Drasi's future re-processing).

An aggregate called in a WHERE (Drasi allows it: ``WHERE drasi.trueFor(sum(o.value) > 1,
...)``) is evaluated, in an aggregating part, over the group's rows as they reach the part,
before its WHERE (every row counts, passing or not, the row being evaluated included); in a
part that does not aggregate, over the row alone (docs/conformance.md: Drasi accumulates it
over every evaluation and never takes a value back).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

from drasi_ray.model.changes import Element
from drasi_ray.model.errors import QueryEvaluationError
from drasi_ray.query import ast
from drasi_ray.query.aggregates import (
    Accumulator,
    accumulator_factory,
    aggregate_value,
    check_argument,
)
from drasi_ray.query.contexts import (
    ADDING,
    REMOVING,
    UPDATING,
    Context,
    Diff,
    Key,
    added,
    adding,
    aggregation,
    deleted,
    removing,
    updated,
    updating,
)
from drasi_ray.query.evaluation import EvaluationContext, EvaluationMode, QueryClock
from drasi_ray.query.expressions import compile_expression, compile_filter, contains_aggregate
from drasi_ray.query.failures import RowDropped
from drasi_ray.query.future_functions import SLIDING_WINDOW, StatefulCall, WindowedArgument
from drasi_ray.query.matching import Predicate, Row
from drasi_ray.query.stateful import digest
from drasi_ray.query.values import (
    EVALUATION_FAILURES,
    REFUSED,
    hashable_key,
    same_values,
    strict_key,
    to_output,
)

Evaluator: TypeAlias = Callable[[Row], Any]
_T = TypeVar("_T")

AGGREGATE_PREFIX = " agg"
RETAIN_HISTORY = "retainhistory"
"""Drasi's ``retainHistory(...)``: the aggregates inside it keep what leaving rows gave."""
"""Prefix of the private row variables that carry aggregate results into item expressions."""
FILTER_AGGREGATE_PREFIX = " where-agg"
"""Prefix of the private row variables that carry a WHERE's aggregate results into it."""


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


_PLAIN = frozenset((type(None), bool, int, float, str))
"""Types :func:`to_output` returns unchanged."""

FILTERED: Any = _Marker("FILTERED")
"""State of a row that exists upstream but does not pass the part's WHERE."""

ABSENT: Any = _Marker("ABSENT")
"""State of a row identity the part has never seen (or that is gone)."""


class EvaluationErrors:
    """Rows refused because evaluating them failed (:data:`EVALUATION_FAILURES`).

    Such a row is treated as not passing, so one bad value cannot wedge the query; the
    messages are kept (the first ``limit``) for the owner to report.
    """

    def __init__(self, limit: int = 100) -> None:
        self.limit = limit
        self.count = 0
        self.messages: list[str] = []

    def record(self, error: Exception) -> None:
        self.count += 1
        if len(self.messages) < self.limit:
            text = str(error)
            if not isinstance(error, QueryEvaluationError):  # Python's own: name it
                text = f"{type(error).__name__}: {text}"
            self.messages.append(text)

    def drain(self) -> list[str]:
        """The messages recorded since the last drain (and forget them)."""
        messages, self.messages, self.count = self.messages, [], 0
        return messages


def _compile_filter(
    where: ast.Expr | None, parameters: Mapping[str, Any], context: EvaluationContext
) -> Predicate | None:
    if where is None:
        return None
    return compile_filter(where, parameters, context)


class _StatefulCalls:
    """The stateful call sites one part compiled (from the context's registry), and how the
    part points the context at a row and releases a row that left."""

    def __init__(self, context: EvaluationContext, first: int) -> None:
        self.context = context
        self.calls: tuple[StatefulCall, ...] = tuple(context.calls[first:])

    def __bool__(self) -> bool:
        return bool(self.calls)

    def focus(self, row: Row, key: Key | None, result_key: Any = None) -> None:
        """Point the context at ``row``; while rebuilding, also at the row's own time and its
        latest element (what a call that must be applied again schedules for)."""
        context = self.context
        context.at_row(key, result_key)
        if context.mode is EvaluationMode.REPLAY:
            latest = _latest_element(row)
            if latest is not None:
                context.anchor_id = latest.id
                context.clock = QueryClock.at(latest.effective_from)

    def look(self, evaluate: Callable[[], _T]) -> _T:
        """Run ``evaluate`` on a row as it was before the change, or a group read as it
        stands: at the context's ``before_clock``, the calls only looking
        (:attr:`EvaluationMode.SNAPSHOT`)."""
        context = self.context
        mode, context.mode = context.mode, EvaluationMode.SNAPSHOT
        clock, context.clock = context.clock, context.before_clock
        try:
            return evaluate()
        finally:
            context.mode, context.clock = mode, clock

    def release_row(self, key: Key, result_too: bool) -> None:
        row_digest = digest(key)
        for call in self.calls:
            call.release_row(row_digest)
            if result_too:
                call.release_result(row_digest)

    def release_result(self, result_key: Any) -> None:
        result_digest = digest(result_key)
        for call in self.calls:
            call.release_result(result_digest)


def _latest_element(row: Row) -> Element | None:
    latest: Element | None = None
    for value in row.values():
        if type(value) is Element and (
            latest is None or value.effective_from > latest.effective_from
        ):
            latest = value
    return latest


@dataclass(frozen=True, slots=True)
class _FilterAggregates:
    """The aggregate calls of a WHERE, each replaced by a private variable of the filter."""

    variables: tuple[str, ...]
    arguments: tuple[Evaluator, ...]
    factories: tuple[Callable[[], Accumulator], ...]
    checks: tuple[Callable[[Any], None], ...]

    def evaluate(self, row: Row) -> tuple[Any, ...]:
        """The calls' arguments for ``row`` (checked)."""
        values = tuple([argument(row) for argument in self.arguments])
        for check, value in zip(self.checks, values, strict=True):
            check(value)
        return values

    def alone(self, row: Row) -> dict[str, Any]:
        """``row`` extended with each call's result over the row alone."""
        scope = dict(row)
        for variable, factory, value in zip(
            self.variables, self.factories, self.evaluate(row), strict=True
        ):
            accumulator = factory()
            accumulator.add(None, value)
            scope[variable] = accumulator.result()
        return scope


def _split_filter(
    where: ast.Expr | None, parameters: Mapping[str, Any], context: EvaluationContext
) -> tuple[ast.Expr | None, _FilterAggregates | None]:
    """``where`` with its aggregate calls replaced by variables, and those calls compiled."""
    if where is None or not contains_aggregate(where):
        return where, None
    rewriter = AggregateRewriter(prefix=FILTER_AGGREGATE_PREFIX)
    rewritten = rewriter.rewrite(where)
    calls = [
        _compile_call(v, call, window, parameters, context) for v, call, window in rewriter.calls
    ]
    aggregates = _FilterAggregates(
        tuple(call.variable for call in calls),
        tuple(call.argument or _count_all for call in calls),
        tuple(call.factory for call in calls),
        tuple(_argument_check(call.name) for call in calls),
    )
    return rewritten, aggregates


class _Signatures:
    """Drasi's record, per group of the previous part, of the group row this part last
    applied and of the group's identity row (its row before its first member).

    It decides whether an AGGREGATION context's ``before`` is taken back (``revert``: it is
    what was last applied) and whether its ``after`` is applied (``apply``: it is not the
    identity row a group returns to when it empties). Rows are compared as Drasi's snapshot
    signatures compare them: the group's grouping values (``grouping``: their columns) by
    value, as the group is keyed (a group opened by ``3.0`` that ``3`` joins is one group), the
    other columns strictly.
    """

    __slots__ = ("_current", "_grouping", "_identity")

    def __init__(self, grouping: frozenset[str] = frozenset()) -> None:
        self._current: dict[Hashable, Any] = {}
        self._identity: dict[Hashable, Any] = {}
        self._grouping = grouping

    def decide(self, context: Context) -> tuple[bool, bool]:
        """``(revert, apply)`` for ``context``; records what is applied."""
        group = context.new_key
        before, after = context.before, context.after
        revert = before is not None
        if revert and context.default_before:
            current = self._current.get(group)
            if current is None:
                self._identity[group] = self._row_key(before)
                revert = False
            else:
                revert = current == self._row_key(before)
        after_key = self._row_key(after)
        apply = True
        if context.default_after:
            identity = self._identity.get(group)
            if identity is not None and identity == after_key:
                self._current.pop(group, None)
                apply = False
        if apply:
            self._current[group] = after_key
        return revert, apply

    def _row_key(self, row: Mapping[str, Any]) -> Any:
        grouping = self._grouping
        return tuple(
            sorted(
                (name, hashable_key(value) if name in grouping else strict_key(value))
                for name, value in row.items()
            )
        )


def _output_row(row: dict[str, Any], errors: EvaluationErrors) -> dict[str, Any]:
    """``row`` with every value in its result form (a last part's rows)."""
    for name, value in row.items():
        if type(value) not in _PLAIN:
            try:
                row[name] = to_output(value)
            except EVALUATION_FAILURES as error:
                errors.record(error)
                row[name] = None
    return row


# --------------------------------------------------------------------------- projection


class ProjectingPart:
    """A WITH / RETURN without aggregates: one output row per passing input row.

    A last part keeps result-form rows (elements turned into property maps); the rows it
    reported are the query's current result set (:meth:`record`, :meth:`results`).
    """

    def __init__(
        self,
        projection: ast.Projection,
        where: ast.Expr | None,
        parameters: Mapping[str, Any],
        last: bool,
        errors: EvaluationErrors,
        context: EvaluationContext,
    ) -> None:
        self._errors = errors
        self._context = context
        first = len(context.calls)
        where, self._filter_aggregates = _split_filter(where, parameters, context)
        self._filter = _compile_filter(where, parameters, context)
        self._items = [
            (i.name, compile_expression(i.expression, parameters, context))
            for i in projection.items
        ]
        self._calls_here = _StatefulCalls(context, first)
        self._stateful = bool(self._calls_here)
        self._looks = self._stateful or context.reads_clock
        self._last = last
        self._state: dict[Key | None, Any] = {}
        self._reported: dict[Key | None, dict[str, Any]] = {}
        self._signatures = _Signatures()

    def follow(self, grouping: frozenset[str]) -> None:
        """This part reads the groups of an aggregating part whose grouping columns are
        ``grouping`` (:class:`_Signatures`)."""
        self._signatures = _Signatures(grouping)

    def _evaluate(self, row: Row, key: Key | None = None) -> Any:
        """The projected row, or FILTERED if it fails the WHERE or a value is refused."""
        if self._stateful:
            self._calls_here.focus(row, key)
        if self._filter is not None and not (
            self._filter(row) if self._filter_aggregates is None else self._passes(row)
        ):
            return FILTERED
        try:
            projected = {name: evaluate(row) for name, evaluate in self._items}
        except RowDropped:
            return FILTERED
        except EVALUATION_FAILURES as error:
            self._errors.record(error)
            return FILTERED
        return _output_row(projected, self._errors) if self._last else projected

    def _look(self, row: Row, key: Key | None) -> Any:
        """:meth:`_evaluate` of a row as it was (stateful functions change nothing)."""
        if not self._looks:
            return self._evaluate(row)
        return self._calls_here.look(lambda: self._evaluate(row, key))

    def _passes(self, row: Row) -> bool:
        """The filter, its aggregates evaluated over ``row`` alone."""
        assert self._filter is not None and self._filter_aggregates is not None
        try:
            scope = self._filter_aggregates.alone(row)
        except RowDropped:
            return False
        except EVALUATION_FAILURES as error:
            self._errors.record(error)
            return False
        return self._filter(scope)

    def _before(self, context: Context) -> Any:
        """What this part made of the row before the change: its state, or (for a row it
        never held, such as a replaced OPTIONAL MATCH null row) ``context.before``
        evaluated."""
        state = self._state.get(context.old_key, ABSENT)
        if state is ABSENT and context.before is not None:
            return self._look(context.before, context.old_key)
        return state

    def process(self, context: Context) -> list[Context]:
        """This part's contexts for one incoming row change."""
        kind = context.kind
        if kind is ADDING:
            return self._adding(context)
        if kind is UPDATING:
            return self._updating(context)
        if kind is REMOVING:
            return self._removing(context)
        return self._aggregation(context)

    def _store(self, key: Key | None, row: Any, context: Context) -> None:
        if not context.phantom:
            self._state[key] = row

    def _release(self, key: Key | None) -> None:
        """Row ``key`` left this part: its stateful calls forget it."""
        if self._stateful and key is not None:
            self._calls_here.release_row(key, result_too=True)

    def _adding(self, context: Context) -> list[Context]:
        after = self._evaluate(context.after, context.new_key)
        self._store(context.new_key, after, context)
        return [] if after is FILTERED else [adding(context.new_key, after, context)]

    def _removing(self, context: Context) -> list[Context]:
        before = self._before(context)
        self._state.pop(context.old_key, None)
        self._release(context.old_key)
        return [removing(context.old_key, before, context)] if isinstance(before, dict) else []

    def _updating(self, context: Context) -> list[Context]:
        if context.before is not None and _unchanged(context) and not self._context.reprocessing:
            return self._refresh(context)
        before = self._before(context)
        after = self._evaluate(context.after, context.new_key)
        self._state.pop(context.old_key, None)
        self._store(context.new_key, after, context)
        old, new = context.old_key, context.new_key
        if old != new:
            self._release(old)
        if after is FILTERED:
            return [removing(old, before, context)] if isinstance(before, dict) else []
        if isinstance(before, dict):
            return [updating(old, new, before, after, context)]
        return [adding(new, after, context)]

    def _refresh(self, context: Context) -> list[Context]:
        """A row change that alters no value: Drasi ignores it, but reads the row as it now is
        next time (2 and 2.0 are equal here, not in what the next change reports). Drasi reads
        it through every part again, so the parts after this one are handed the row as it
        now is too (an update no part reports), to hold it as it now is."""
        held = self._state.get(context.old_key, ABSENT)
        now = self._look(context.after, context.new_key)
        self._state[context.new_key] = now
        if isinstance(held, dict) and isinstance(now, dict) and not self._last:
            return [updating(context.old_key, context.new_key, held, now, context)]
        return []

    def _aggregation(self, context: Context) -> list[Context]:
        """A group's row changed in the (aggregating) part before this one."""
        if _unchanged_group(context) and not self._context.reprocessing:
            return []
        revert, apply = self._signatures.decide(context)
        before_row = context.before
        # The group's row before: its own key, or (a group the row just joined) the new one.
        looked = context.old_key if context.old_key is not None else context.new_key
        before = self._look(before_row, looked) if before_row is not None else ABSENT
        after = self._evaluate(context.after, context.new_key) if apply else FILTERED
        if not apply:
            self._release(context.new_key)  # the group emptied: its row leaves this part
        self._state.pop(looked, None)
        if after is not FILTERED:
            self._state[context.new_key] = after
        new = context.new_key
        if after is FILTERED:
            return [removing(looked, before, context)] if isinstance(before, dict) else []
        if isinstance(before, dict) and revert:
            return [updating(looked, new, before, after, context)]
        return [adding(new, after, context)]

    @property
    def settles_rows(self) -> bool:
        """Whether :meth:`update_row` may stand for the general path: a last part without
        stateful functions or clock reads."""
        return self._last and not self._looks

    def update_row(self, key: Key, row: Row) -> list[Diff]:
        """The diffs of MATCH row ``key`` now being ``row``, an update in place (the same key
        before and after, not a null row): what :meth:`process` makes of its UPDATING context,
        then the engine's :class:`Collector` and :meth:`record`, in one step without the
        contexts. Only where :attr:`settles_rows`; ``tests/query/test_engine_fast_paths.py``
        holds it to the general path."""
        state = self._state
        before = state.get(key, ABSENT)
        after = self._evaluate(row, key)
        state.pop(key, None)
        state[key] = after
        reported = self._reported
        if after is FILTERED:
            if not isinstance(before, dict):
                return []
            reported.pop(key, None)
            return [deleted(before)]
        if not isinstance(before, dict):
            reported[key] = after
            return [added(after)]
        if same_values(before, after):
            return []
        reported.pop(key, None)
        reported[key] = after
        return [updated(before, after)]

    def record(self, context: Context) -> None:
        """Keep a reported row change (a last part's) in the result set."""
        kind = context.kind
        if kind is not ADDING:
            self._reported.pop(context.old_key, None)
        if kind is not REMOVING and not context.phantom:
            self._reported[context.new_key] = context.after

    def results(self) -> list[dict[str, Any]]:
        return [dict(row) for row in self._reported.values()]

    def keyed_results(self) -> Iterable[tuple[Key | None, dict[str, Any]]]:
        """The result rows with the keys they are held by (a last part's)."""
        return self._reported.items()

    def row(self, key: Key | None) -> dict[str, Any] | None:
        """The result row held by ``key`` (None: there is none)."""
        return self._reported.get(key)


def _unchanged(context: Context) -> bool:
    return same_values(context.before, context.after)


def _unchanged_group(context: Context) -> bool:
    """Drasi ignores a group change whose rows are equal unless a row joined or left the
    group."""
    if context.before is None or context.default_before or context.default_after:
        return False
    return _unchanged(context)


# --------------------------------------------------------------------------- aggregation


@dataclass(frozen=True, slots=True)
class _AggregateCall:
    name: str
    variable: str
    argument: Evaluator | None
    factory: Callable[[], Accumulator]
    expression: ast.FunctionCall


@dataclass(frozen=True, slots=True)
class _Contribution:
    """What one input row gives its group (kept so it can be taken back exactly): the group,
    the grouping values, the aggregate arguments, the row (for computed items) and whether
    the row passes the part's WHERE."""

    group: Hashable
    values: tuple[Any, ...]
    arguments: tuple[Any, ...]
    row: Row
    passes: bool = True


@dataclass(slots=True)
class _Group:
    """One group's accumulators and how many rows it holds."""

    accumulators: list[Accumulator]
    rows: int = 0


class AggregateRewriter:
    """Replaces each aggregate call in an item by a private variable (``" agg3"``).

    The rewritten item is then an ordinary expression over the row plus those variables, so
    ``i.amount - sum(p.amount)`` needs no special evaluator. Each call is recorded with the
    duration of the ``drasi.slidingWindow`` it is inside (None: not in a window).
    """

    def __init__(self, prefix: str = AGGREGATE_PREFIX) -> None:
        self.prefix = prefix
        self.calls: list[tuple[str, ast.FunctionCall, ast.Expr | None]] = []
        self.retained: set[str] = set()
        """The variables of the calls inside ``retainHistory(...)``."""

    def rewrite(self, expr: Any, window: ast.Expr | None = None, retain: bool = False) -> Any:
        if isinstance(expr, ast.FunctionCall) and expr.name in ast.AGGREGATE_FUNCTIONS:
            variable = f"{self.prefix}{len(self.calls)}"
            self.calls.append((variable, expr, window))
            if retain:
                self.retained.add(variable)
            return ast.Variable(variable)
        if isinstance(expr, ast.FunctionCall) and expr.name == SLIDING_WINDOW:
            duration, inner = expr.args
            return dataclasses.replace(expr, args=(duration, self.rewrite(inner, duration, retain)))
        retain = retain or (isinstance(expr, ast.FunctionCall) and expr.name == RETAIN_HISTORY)
        if isinstance(expr, tuple):
            return tuple(self.rewrite(item, window, retain) for item in expr)
        if dataclasses.is_dataclass(expr) and not isinstance(expr, type):
            changes = {
                f.name: self.rewrite(getattr(expr, f.name), window, retain)
                for f in dataclasses.fields(expr)
            }
            return dataclasses.replace(expr, **changes)
        return expr


@dataclass(slots=True)
class _Prefilter:
    """A group's accumulators of the WHERE's aggregates: every row that reaches the part."""

    accumulators: list[Accumulator]
    rows: int = 0


_GROUPING, _AGGREGATE, _EXPRESSION = 0, 1, 2
"""How a group's row fills an item: a grouping value (by position), an aggregate result as
is (by call number), or an expression over the row and the results."""


class AggregatingPart:
    """A WITH / RETURN with aggregates: rows grouped by the non-aggregate items.

    Groups are kept while they hold rows; a last part's reported group rows, emptied groups
    at identity values included, are the query's result set (:meth:`record`, :meth:`results`).
    """

    def __init__(
        self,
        projection: ast.Projection,
        where: ast.Expr | None,
        parameters: Mapping[str, Any],
        last: bool,
        errors: EvaluationErrors,
        context: EvaluationContext,
    ) -> None:
        self._errors = errors
        self._context = context
        first = len(context.calls)
        self._last = last
        rewriter = AggregateRewriter()
        keys: list[tuple[str, Evaluator]] = []
        outputs: list[tuple[str, Evaluator]] = []
        for item in projection.items:
            if contains_aggregate(item.expression):
                rewritten = rewriter.rewrite(item.expression)
                outputs.append((item.name, compile_expression(rewritten, parameters, context)))
            else:
                evaluator = compile_expression(item.expression, parameters, context)
                keys.append((item.name, evaluator))
        self._calls = [
            _compile_call(v, call, window, parameters, context, v in rewriter.retained)
            for v, call, window in rewriter.calls
        ]
        where, self._prefilter_calls = _split_filter(where, parameters, context)
        self._filter = _compile_filter(where, parameters, context)
        self._calls_here = _StatefulCalls(context, first)
        self._stateful = bool(self._calls_here)
        self._looks = self._stateful or context.reads_clock
        self._prefilter: dict[Hashable, _Prefilter] = {}
        self._prefilter_held: dict[Key | None, tuple[Hashable, tuple[Any, ...]]] = {}
        self._key_evaluators = tuple(evaluate for _, evaluate in keys)
        self.grouping: frozenset[str] = frozenset(name for name, _ in keys)
        """The names of its grouping columns."""
        self._arguments = tuple(call.argument or _count_all for call in self._calls)
        self._checks = tuple(_argument_check(call.name) for call in self._calls)
        self._recipe = _output_recipe(projection, [n for n, _ in keys], outputs, self._calls)
        self._needs_scope = any(kind == _EXPRESSION for _, kind, _ in self._recipe)
        self._state: dict[Key | None, Any] = {}
        self._groups: dict[Hashable, _Group] = {}
        self._signatures = _Signatures()
        self._results: dict[Hashable, dict[str, Any]] = {}
        self._identity: Any = None

    def follow(self, grouping: frozenset[str]) -> None:
        """This part reads the groups of an aggregating part whose grouping columns are
        ``grouping`` (:class:`_Signatures`)."""
        self._signatures = _Signatures(grouping)

    # ------------------------------------------------------------------ evaluation

    def _contribution(self, row: Row, filtered: bool = True, key: Key | None = None) -> Any:
        """The row's contribution; FILTERED if it fails the WHERE (unless ``filtered`` is
        false: then it is evaluated all the same, with ``passes`` false) or a value is
        refused. ``key`` is the row's identity (for stateful functions)."""
        if self._stateful or self._prefilter_calls is not None:
            return self._grouped_contribution(row, filtered, key)
        passes = self._filter is None or self._filter(row)
        if not passes and filtered:
            return FILTERED
        try:
            values = tuple([evaluate(row) for evaluate in self._key_evaluators])
            arguments = tuple([argument(row) for argument in self._arguments])
            for check, value in zip(self._checks, arguments, strict=True):
                check(value)
            group = tuple([_group_key(value) for value in values])
        except RowDropped:
            return FILTERED
        except EVALUATION_FAILURES as error:
            self._errors.record(error)
            return FILTERED
        return _Contribution(group, values, arguments, row, passes)

    def _arguments_of(self, row: Row) -> tuple[Any, ...]:
        arguments = tuple([argument(row) for argument in self._arguments])
        for check, value in zip(self._checks, arguments, strict=True):
            check(value)
        return arguments

    def _grouped_contribution(self, row: Row, filtered: bool, key: Key | None) -> Any:
        """:meth:`_contribution` when the WHERE needs the row's group first: it calls
        stateful functions (kept per group) or aggregates (over the group's rows)."""
        try:
            values = tuple([evaluate(row) for evaluate in self._key_evaluators])
            group = tuple([_group_key(value) for value in values])
        except RowDropped:
            return FILTERED
        except EVALUATION_FAILURES as error:
            self._errors.record(error)
            return FILTERED
        if self._stateful:
            self._calls_here.focus(row, key, group)
        scope = row if self._prefilter_calls is None else self._prefilter_scope(row, group)
        passes = self._filter is None or self._filter(scope)
        if not passes and filtered:
            return FILTERED
        try:
            arguments = self._arguments_of(row)
        except RowDropped:
            return FILTERED
        except EVALUATION_FAILURES as error:
            self._errors.record(error)
            return FILTERED
        return _Contribution(group, values, arguments, row, passes)

    def _look(self, row: Row, key: Key | None, filtered: bool = True) -> Any:
        """:meth:`_contribution` of a row as it was (stateful functions change nothing)."""
        if not self._looks:
            return self._contribution(row, filtered)
        return self._calls_here.look(lambda: self._contribution(row, filtered, key))

    # ------------------------------------------------------------------ WHERE aggregates

    def _prefilter_scope(self, row: Row, group: Hashable) -> dict[str, Any]:
        """``row`` with the results of the WHERE's aggregates over ``group``'s rows."""
        calls = self._prefilter_calls
        assert calls is not None
        held = self._prefilter.get(group)
        accumulators = held.accumulators if held is not None else None
        scope = dict(row)
        for number, variable in enumerate(calls.variables):
            if accumulators is None:
                scope[variable] = calls.factories[number]().result()
            else:
                scope[variable] = accumulators[number].result()
        return scope

    def _count_prefilter(self, context: Context) -> None:
        """Take the row's old values out of its group's WHERE aggregates and put its new ones
        in, whether or not it passes the WHERE (they are what the WHERE reads)."""
        calls = self._prefilter_calls
        assert calls is not None
        old = self._prefilter_held.pop(context.old_key, None)
        if old is not None:
            self._prefilter_change(old[0], old[1], context.old_key, -1)
        row = context.after
        if row is None or context.phantom:
            return
        try:
            values = tuple([evaluate(row) for evaluate in self._key_evaluators])
            group = tuple([_group_key(value) for value in values])
            arguments = calls.evaluate(row)
        except REFUSED:
            return
        self._prefilter_held[context.new_key] = (group, arguments)
        self._prefilter_change(group, arguments, context.new_key, 1)

    def _prefilter_change(
        self, group: Hashable, arguments: tuple[Any, ...], token: Key | None, sign: int
    ) -> None:
        calls = self._prefilter_calls
        assert calls is not None
        held = self._prefilter.get(group)
        if held is None:
            held = self._prefilter[group] = _Prefilter([f() for f in calls.factories])
        for accumulator, value in zip(held.accumulators, arguments, strict=True):
            if sign > 0:
                accumulator.add(token, value)
            else:
                accumulator.remove(token, value)
        held.rows += sign
        if held.rows <= 0:
            del self._prefilter[group]

    def _fresh(self) -> list[Accumulator]:
        """Accumulators of a group that holds no row (they read the identity values)."""
        return [call.factory() for call in self._calls]

    def _group(self, key: Hashable) -> _Group:
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _Group([call.factory() for call in self._calls])
        return group

    def _row(self, item: _Contribution, snapshot: bool, look: bool = True) -> dict[str, Any]:
        """The row of ``item``'s group as Drasi projects ``item``'s row: its grouping values,
        the aggregates (read as a snapshot, or as just applied or taken back), and the items
        computed from them over ``item``'s row. Stateful functions in those items only look
        unless ``look`` is false (the group's row after a row is applied)."""
        if self._looks and self._needs_scope:
            self._calls_here.focus(item.row, (item.group,), item.group)
            if look and self._context.mode is not EvaluationMode.SNAPSHOT:
                return self._calls_here.look(lambda: self._row(item, snapshot))
        group = self._groups.get(item.group)
        accumulators = group.accumulators if group is not None else self._fresh()
        results = [
            aggregate_value(call.name, accumulator, argument, snapshot)
            for call, accumulator, argument in zip(
                self._calls, accumulators, item.arguments, strict=True
            )
        ]
        scope: dict[str, Any] = {}
        if self._needs_scope:
            scope = dict(item.row)
            for call, result in zip(self._calls, results, strict=True):
                scope[call.variable] = result
        ordered: dict[str, Any] = {}
        for name, kind, source in self._recipe:
            if kind == _GROUPING:
                ordered[name] = item.values[source]
            elif kind == _AGGREGATE:
                ordered[name] = results[source]
            else:
                ordered[name] = self._computed(source, scope)
        return _output_row(ordered, self._errors) if self._last else ordered

    def _computed(self, evaluate: Evaluator, scope: Row) -> Any:
        try:
            return evaluate(scope)
        except RowDropped:
            return None
        except EVALUATION_FAILURES as error:
            self._errors.record(error)
            return None

    def _apply(self, item: _Contribution, token: Hashable) -> dict[str, Any]:
        group = self._group(item.group)
        for accumulator, value in zip(group.accumulators, item.arguments, strict=True):
            accumulator.add(token, value)
        group.rows += 1
        return self._row(item, snapshot=False, look=False)

    def _revert(self, item: _Contribution, token: Hashable) -> dict[str, Any]:
        group = self._group(item.group)
        for accumulator, value in zip(group.accumulators, item.arguments, strict=True):
            accumulator.remove(token, value)
        group.rows -= 1
        row = self._row(item, snapshot=False)
        if group.rows <= 0 and self._reads_identity(group):
            del self._groups[item.group]  # a fresh group reads the same
        if group.rows <= 0 and self._stateful and item.group not in self._prefilter:
            self._calls_here.release_result(item.group)
        return row

    def _reads_identity(self, group: _Group) -> bool:
        """Whether an empty group's accumulators read as a fresh group's: not so when Drasi's
        ``collect`` could not take a value back (it kept ``2`` when told to take ``2.0``)."""
        if self._identity is None:
            self._identity = strict_key([accumulator.result() for accumulator in self._fresh()])
        reads = strict_key([accumulator.result() for accumulator in group.accumulators])
        return bool(reads == self._identity)

    def _reconcile(
        self,
        before: _Contribution | None,
        before_row: dict[str, Any] | None,
        after: _Contribution,
        after_row: dict[str, Any],
        snapshot: dict[str, Any] | None,
    ) -> list[Context]:
        """Drasi's aggregation contexts of a row change: one for the row's group, or two when
        the row moved: the new group, as joined by a new row, then the old group, as left by
        a removed row."""
        new_key = (after.group,)
        if before is None or before_row is None:
            return [aggregation(None, new_key, None, after_row)]
        if before.group == after.group:
            return [aggregation(new_key, new_key, before_row, after_row)]
        old_key = (before.group,)
        old_after = self._row(before, snapshot=True)
        return [
            aggregation(None, new_key, snapshot, after_row, default_before=True),
            aggregation(old_key, old_key, before_row, old_after, default_after=True),
        ]

    # ------------------------------------------------------------------ row changes

    def process(self, context: Context) -> list[Context]:
        """This part's aggregation contexts for one incoming row change. A change Drasi does
        not report (``silent``: an OPTIONAL MATCH null row an update replaced or brought
        back) still changes the group, and is reported as the group's change: Drasi keeps
        the null row's contribution, counting it twice (docs/conformance.md)."""
        if self._prefilter_calls is not None:
            self._count_prefilter(context)
        kind = context.kind
        if kind is ADDING:
            return self._adding(context)
        if kind is UPDATING:
            return self._updating(context)
        if kind is REMOVING:
            return self._removing(context)
        return self._aggregation(context)

    def _held(self, key: Key | None) -> Any:
        return self._state.get(key, ABSENT)

    def _adding(self, context: Context) -> list[Context]:
        if context.phantom:
            return []
        item = self._contribution(context.after, key=context.new_key)
        self._state[context.new_key] = item
        if not isinstance(item, _Contribution):
            return []
        snapshot = self._row(item, snapshot=True)
        after = self._apply(item, context.new_key)
        return [aggregation(None, (item.group,), snapshot, after, default_before=True)]

    def _removing(self, context: Context) -> list[Context]:
        item = self._state.pop(context.old_key, ABSENT)
        if self._stateful and context.old_key is not None:
            self._calls_here.release_row(context.old_key, result_too=False)
        if not isinstance(item, _Contribution):
            return []
        key = (item.group,)
        snapshot = self._row(item, snapshot=True)
        after = self._revert(item, context.old_key)
        return [aggregation(key, key, snapshot, after, default_after=True)]

    def _updating(self, context: Context) -> list[Context]:
        if context.before is not None and _unchanged(context) and not self._context.reprocessing:
            # Drasi ignores it (the group keeps what the row gave it) but takes the row back
            # as it now is next time.
            self._state[context.new_key] = self._look(context.after, context.new_key)
            return []
        before = self._held(context.old_key)
        after = (
            ABSENT if context.phantom else self._contribution(context.after, key=context.new_key)
        )
        if self._stateful and context.old_key is not None and context.old_key != context.new_key:
            self._calls_here.release_row(context.old_key, result_too=False)
        self._state.pop(context.old_key, None)
        if after is not ABSENT:
            self._state[context.new_key] = after
        snapshot = self._row(after, snapshot=True) if isinstance(after, _Contribution) else None
        held = isinstance(before, _Contribution)
        before_row = reverted = None
        if held:
            before_row = self._row(before, snapshot=True)
            reverted = self._revert(before, context.old_key)
        elif before is ABSENT and context.before is not None:
            # A null row that an earlier match already replaced: Drasi reads the group as the
            # null row would, and takes back a row it does not hold (we do not).
            phantom = self._look(context.before, context.old_key)
            if isinstance(phantom, _Contribution) and isinstance(after, _Contribution):
                before_row = self._row(phantom, snapshot=True)
                after_row = self._apply(after, context.new_key)
                return self._reconcile(phantom, before_row, after, after_row, snapshot)
        if not isinstance(after, _Contribution):
            if held and reverted is not None:
                key = (before.group,)
                return [aggregation(key, key, before_row, reverted)]
            return []
        after_row = self._apply(after, context.new_key)
        return self._reconcile(before if held else None, before_row, after, after_row, snapshot)

    def _aggregation(self, context: Context) -> list[Context]:
        """A group's row changed in the aggregating part before this one: take its old row
        back and apply its new one, as :class:`_Signatures` decides."""
        if _unchanged_group(context) and not self._context.reprocessing:
            return []
        revert, apply = self._signatures.decide(context)
        before = None
        if context.before is not None:
            looked = context.old_key if context.old_key is not None else context.new_key
            before = self._look(context.before, looked, filtered=False)
        after = self._contribution(context.after, filtered=False, key=context.new_key)
        if not isinstance(after, _Contribution) or (before is not None and before is FILTERED):
            return []
        snapshot = self._row(after, snapshot=True)
        before_row = self._row(before, snapshot=True) if before is not None else None
        reverted = None
        if before is not None and before.passes and revert:
            reverted = self._revert(before, context.old_key)
        if not after.passes or not apply:
            if reverted is not None and before is not None:
                return self._reconcile(before, before_row, before, reverted, snapshot)
            if before is not None and before.passes:
                return [removing((before.group,), before_row, context)]
            return []
        after_row = self._apply(after, context.new_key)
        return self._reconcile(before, before_row, after, after_row, snapshot)

    # ------------------------------------------------------------------ results

    def record(self, context: Context) -> None:
        """Keep a reported group row (a last part's result row) as the group's result."""
        if context.kind is REMOVING:
            self._results.pop(context.old_key, None)
        else:
            self._results[context.new_key] = dict(context.after)

    def results(self) -> list[dict[str, Any]]:
        return [dict(row) for row in self._results.values()]

    def keyed_results(self) -> Iterable[tuple[Hashable, dict[str, Any]]]:
        """The group rows with the keys they are held by (a last part's)."""
        return self._results.items()

    def row(self, key: Hashable) -> dict[str, Any] | None:
        """The group row held by ``key`` (None: there is none)."""
        return self._results.get(key)


def _output_recipe(
    projection: ast.Projection,
    key_names: list[str],
    outputs: list[tuple[str, Evaluator]],
    calls: list[_AggregateCall],
) -> list[tuple[str, int, Any]]:
    """``(name, kind, source)`` per item in item order (see the kinds above). An item that is
    a bare aggregate call (``count(s) AS n``) reads its accumulator's result directly."""
    evaluators = dict(outputs)
    recipe: list[tuple[str, int, Any]] = []
    for item in projection.items:
        name = item.name
        if name in evaluators:
            expression = item.expression
            if isinstance(expression, ast.FunctionCall) and expression.name in (
                ast.AGGREGATE_FUNCTIONS
            ):
                number = _call_number(expression, calls)
                if number is not None:
                    recipe.append((name, _AGGREGATE, number))
                    continue
            recipe.append((name, _EXPRESSION, evaluators[name]))
        else:
            recipe.append((name, _GROUPING, key_names.index(name)))
    return recipe


def _call_number(expression: ast.FunctionCall, calls: list[_AggregateCall]) -> int | None:
    """The position in ``calls`` of the call the rewriter made for ``expression`` (it keeps
    the very AST node of a bare call)."""
    for number, call in enumerate(calls):
        if call.expression is expression:
            return number
    return None


def _count_all(_row: Row) -> Any:
    """The argument of an aggregate call without one: every row counts."""
    return 1


def _group_key(value: Any) -> Any:
    """:func:`hashable_key`, with strings and integers (their own keys) inline."""
    kind = type(value)
    if kind is str or kind is int:
        return value
    return hashable_key(value)


def _argument_check(name: str) -> Callable[[Any], None]:
    """:func:`check_argument` for aggregate ``name``, skipping the values that always pass
    (numbers for every aggregate; strings and graph elements where any key will do)."""
    passes: tuple[type, ...] = (int, float)
    if name in ("count", "collect"):
        passes = (int, float, str, Element)
    elif name in ("min", "max"):
        passes = (int, float, str)

    def check(value: Any) -> None:
        if value is not None and type(value) not in passes:
            check_argument(name, value)

    return check


def _compile_call(
    variable: str,
    call: ast.FunctionCall,
    window: ast.Expr | None,
    parameters: Mapping[str, Any],
    context: EvaluationContext,
    retain: bool = False,
) -> _AggregateCall:
    """Compile one aggregate call; inside a sliding window its argument is windowed, inside
    ``retainHistory(...)`` its accumulator never takes a value back. An aggregate of several
    arguments gets their values as one list."""
    argument = None
    if len(call.args) == 1:
        argument = compile_expression(call.args[0], parameters, context)
    elif call.args:
        argument = compile_expression(ast.ListLiteral(call.args), parameters, context)
    if window is not None and argument is not None:
        duration = compile_expression(window, parameters, context)
        argument = WindowedArgument(duration, argument, context)
    factory = accumulator_factory(call.name, call.distinct, retain)
    return _AggregateCall(call.name, variable, argument, factory, call)
