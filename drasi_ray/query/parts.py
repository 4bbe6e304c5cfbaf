"""Query parts: filter the incoming rows, then project (or group and aggregate) them.

A query part is everything up to one WITH or the final RETURN. Each part keeps, per incoming
row identity, what it made of that row, so a row change costs O(1) projections plus, when
aggregating, O(log n) accumulator updates — never a rescan:

- :class:`ProjectingPart` (no aggregate): the projected row, or :data:`FILTERED` when the row
  exists upstream but fails the part's WHERE (or its evaluation dropped it);
- :class:`AggregatingPart`: the row's contribution (group, aggregate arguments) so it can be
  taken back exactly, and the per-group accumulators.

The WHERE a part applies is the one that precedes its projection: the MATCH WHERE for the
first part, the previous WITH's WHERE for later parts (Drasi's layout), which is what makes
"the row existed but did not pass" observable (SEMANTICS.md §4, ``before: null``).

A part that is not last feeds the next one :class:`RowChange` values; the last part turns its
changes into result diffs (SEMANTICS.md §4).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from drasi_ray.model.changes import Element
from drasi_ray.model.errors import QueryEvaluationError
from drasi_ray.query import ast, temporal
from drasi_ray.query.aggregates import Accumulator, accumulator_factory, check_argument
from drasi_ray.query.expressions import compile_expression, compile_predicate, contains_aggregate
from drasi_ray.query.failures import RowDropped
from drasi_ray.query.matching import Key, Predicate, Row, safe_predicate
from drasi_ray.query.solutions import RowChange
from drasi_ray.query.values import EVALUATION_FAILURES, hashable_key, to_output

Diff: TypeAlias = dict[str, Any]
Evaluator: TypeAlias = Callable[[Row], Any]

AGGREGATE_PREFIX = " agg"
"""Prefix of the private row variables that carry aggregate results into item expressions."""


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


def same_value(left: Any, right: Any) -> bool:
    """Value equality for change detection: numbers by value, ``true`` distinct from ``1``,
    elements equal only if their labels, endpoints and properties are all equal."""
    if type(left) is not type(right):
        return hashable_key_or_none(left) == hashable_key_or_none(right) and not (
            isinstance(left, bool) or isinstance(right, bool)
        )
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(same_value(left[k], right[k]) for k in left)
    if isinstance(left, (list, tuple)):
        return len(left) == len(right) and all(map(same_value, left, right))
    if isinstance(left, Element):
        return bool(left == right) and same_value(
            getattr(left, "properties", None), getattr(right, "properties", None)
        )
    return bool(left == right)


def hashable_key_or_none(value: Any) -> Any:
    try:
        return hashable_key(value)
    except Exception:  # an unkeyable value only ever equals itself
        return id(value)


_SCALARS = (str, float, int)


def same_row(left: Mapping[str, Any], right: Mapping[str, Any]) -> bool:
    """:func:`same_value` on every column (and the same columns). Strings and numbers of one
    type, the usual columns, are compared inline."""
    if left.keys() != right.keys():
        return False
    for name, first in left.items():
        second = right[name]
        if first is second:
            continue
        kind = type(first)
        if kind is type(second) and kind in _SCALARS:
            if first != second:
                return False
        elif not same_value(first, second):
            return False
    return True


class EvaluationErrors:
    """Rows refused because evaluating them failed (:data:`EVALUATION_FAILURES`).

    Such a row is treated as not passing (like a division by zero), so one bad value cannot
    wedge the query; the messages are kept (the first ``limit``) for the owner to report.
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


def _compile_filter(where: ast.Expr | None, parameters: Mapping[str, Any]) -> Predicate | None:
    if where is None:
        return None
    return safe_predicate(compile_predicate(where, parameters))


# --------------------------------------------------------------------------- projection


class ProjectingPart:
    """A WITH / RETURN without aggregates: one output row per passing input row.

    ``last`` parts keep output-form rows (elements turned into property maps) and emit
    ADD / UPDATE / DELETE; earlier parts keep raw values and emit :class:`RowChange`.
    """

    def __init__(
        self,
        projection: ast.Projection,
        where: ast.Expr | None,
        parameters: Mapping[str, Any],
        last: bool,
        errors: EvaluationErrors,
    ) -> None:
        self._errors = errors
        self._filter = _compile_filter(where, parameters)
        self._items = [
            (i.name, compile_expression(i.expression, parameters)) for i in projection.items
        ]
        self._last = last
        self._state: dict[Key, Any] = {}

    def _evaluate(self, row: Row | None) -> Any:
        if row is None:
            return ABSENT
        if self._filter is not None and not self._filter(row):
            return FILTERED
        try:
            projected = {name: evaluate(row) for name, evaluate in self._items}
            if self._last:
                for name, value in projected.items():
                    if type(value) not in _PLAIN:  # plain values are their own output form
                        projected[name] = to_output(value)
        except RowDropped:
            return FILTERED
        except EVALUATION_FAILURES as error:
            self._errors.record(error)
            return FILTERED
        return projected

    def _step(self, change: RowChange) -> tuple[Any, Any]:
        """Apply one change to the state; return (before, after) states of the row."""
        before = ABSENT if change.old_key is None else self._state.pop(change.old_key, ABSENT)
        after = self._evaluate(change.row)
        if change.new_key is not None and after is not ABSENT:
            self._state[change.new_key] = after
        return before, after

    def process(self, changes: Sequence[RowChange]) -> list[RowChange]:
        """Intermediate part: the changes of this part's (unfiltered-by-next) output rows."""
        out: list[RowChange] = []
        for change in changes:
            before, after = self._step(change)
            had, has = isinstance(before, dict), isinstance(after, dict)
            if had and has and change.old_key == change.new_key and same_row(before, after):
                continue
            if had or has:
                out.append(
                    RowChange(
                        change.old_key if had else None,
                        change.new_key if has else None,
                        after if has else None,
                    )
                )
        return out

    def diffs(self, changes: Sequence[RowChange]) -> list[Diff]:
        """Last part: ADD / UPDATE / DELETE diffs (UPDATE only if the projection changed)."""
        out: list[Diff] = []
        for change in changes:
            before, after = self._step(change)
            had, has = isinstance(before, dict), isinstance(after, dict)
            if had and has:
                if not same_row(before, after):
                    out.append({"type": "UPDATE", "before": before, "after": after})
            elif had:
                out.append({"type": "DELETE", "data": before})
            elif has:
                out.append({"type": "ADD", "data": after})
        return out

    def results(self) -> list[dict[str, Any]]:
        return [dict(row) for row in self._state.values() if isinstance(row, dict)]


# --------------------------------------------------------------------------- aggregation


def _output_value(value: Any, errors: EvaluationErrors) -> Any:
    try:
        return to_output(value)
    except EVALUATION_FAILURES as error:
        errors.record(error)
        return None


@dataclass(frozen=True, slots=True)
class _AggregateCall:
    name: str
    variable: str
    argument: Evaluator | None
    factory: Callable[[], Accumulator]
    expression: ast.FunctionCall


@dataclass(frozen=True, slots=True)
class _Contribution:
    """What one input row gave its group: kept so it can be taken back exactly."""

    group: Hashable
    values: tuple[Any, ...]
    arguments: tuple[Any, ...]
    row: Row


@dataclass(slots=True)
class _Group:
    """One group's accumulators. ``values`` and ``row`` come from the latest row added to it:
    a group of a graph element is keyed by the element's id, so when the element's properties
    change the group stays and its grouping value must show the element as it is now."""

    values: tuple[Any, ...]
    accumulators: list[Accumulator]
    row: Row
    rows: int = 0
    output: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _Touch:
    """A group's state when a change first touched it (for the collapsed diff), and whether a
    new row (one the part had not seen) entered it during the change."""

    before: dict[str, Any] | None
    present: bool
    created: bool
    entered: bool = False


class AggregateRewriter:
    """Replaces each aggregate call in an item by a private variable (``" agg3"``).

    The rewritten item is then an ordinary expression over the row plus those variables, so
    ``i.amount - sum(p.amount)`` needs no special evaluator.
    """

    def __init__(self) -> None:
        self.calls: list[tuple[str, ast.FunctionCall]] = []

    def rewrite(self, expr: Any) -> Any:
        if isinstance(expr, ast.FunctionCall) and expr.name in ast.AGGREGATE_FUNCTIONS:
            variable = f"{AGGREGATE_PREFIX}{len(self.calls)}"
            self.calls.append((variable, expr))
            return ast.Variable(variable)
        if isinstance(expr, tuple):
            return tuple(self.rewrite(item) for item in expr)
        if dataclasses.is_dataclass(expr) and not isinstance(expr, type):
            changes = {
                f.name: self.rewrite(getattr(expr, f.name)) for f in dataclasses.fields(expr)
            }
            return dataclasses.replace(expr, **changes)
        return expr


class AggregatingPart:
    """A WITH / RETURN with aggregates: rows grouped by the non-aggregate items.

    Emptied groups stay, at identity values. Aggregation diffs of one group within one
    :meth:`diffs` call collapse to (first before, last after). A last part emits
    ``{"type": "aggregation", ...}`` diffs; an earlier part passes on the rows of its
    non-empty groups, keyed by group.
    """

    def __init__(
        self,
        projection: ast.Projection,
        where: ast.Expr | None,
        parameters: Mapping[str, Any],
        last: bool,
        errors: EvaluationErrors,
    ) -> None:
        self._errors = errors
        self._filter = _compile_filter(where, parameters)
        self._last = last
        rewriter = AggregateRewriter()
        self._keys: list[tuple[str, Evaluator]] = []
        self._outputs: list[tuple[str, Evaluator]] = []
        for item in projection.items:
            if contains_aggregate(item.expression):
                rewritten = rewriter.rewrite(item.expression)
                self._outputs.append((item.name, compile_expression(rewritten, parameters)))
            else:
                self._keys.append((item.name, compile_expression(item.expression, parameters)))
        self._calls = [_compile_call(v, call, parameters) for v, call in rewriter.calls]
        self._key_names = [name for name, _ in self._keys]
        self._key_evaluators = tuple(evaluate for _, evaluate in self._keys)
        self._arguments = tuple(call.argument or _count_all for call in self._calls)
        self._checks = tuple(_argument_check(call.name) for call in self._calls)
        self._recipe = _output_recipe(projection, self._key_names, self._outputs, self._calls)
        self._needs_scope = any(kind == _EXPRESSION for _, kind, _ in self._recipe)
        self._state: dict[Key, Any] = {}
        self._groups: dict[Hashable, _Group] = {}

    # ------------------------------------------------------------------ evaluation

    def _contribution(self, row: Row | None) -> Any:
        if row is None:
            return ABSENT
        if self._filter is not None and not self._filter(row):
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
        return _Contribution(group, values, arguments, row)

    def _output(self, group: _Group) -> dict[str, Any]:
        """The group's row, in item order: grouping values, aggregate results, and items
        computed from them (evaluated over the group's last row plus the results)."""
        results = [accumulator.result() for accumulator in group.accumulators]
        scope: dict[str, Any] = {}
        if self._needs_scope:
            scope = dict(group.row)
            for call, result in zip(self._calls, results, strict=True):
                scope[call.variable] = result
        ordered: dict[str, Any] = {}
        for name, kind, source in self._recipe:
            if kind == _GROUPING:
                ordered[name] = group.values[source]
            elif kind == _AGGREGATE:
                ordered[name] = results[source]
            else:
                ordered[name] = self._computed(source, scope)
        if self._last:
            for name, value in ordered.items():
                if type(value) not in _PLAIN:
                    ordered[name] = _output_value(value, self._errors)
        return ordered

    def _computed(self, evaluate: Evaluator, scope: Row) -> Any:
        try:
            return evaluate(scope)
        except RowDropped:
            return None
        except EVALUATION_FAILURES as error:
            self._errors.record(error)
            return None

    # ------------------------------------------------------------------ group updates

    def _touch(
        self, touched: dict[Hashable, _Touch], item: _Contribution, crossing: bool
    ) -> _Group:
        group = self._groups.get(item.group)
        created = group is None
        if group is None:
            accumulators = [call.factory() for call in self._calls]
            group = _Group(item.values, accumulators, item.row)
            group.output = self._empty_output(group, item.arguments)
            self._groups[item.group] = group
        if item.group not in touched:
            before = None if crossing else group.output
            touched[item.group] = _Touch(before, group.rows > 0, created)
        return group

    def _empty_output(self, group: _Group, arguments: tuple[Any, ...]) -> dict[str, Any]:
        """A new group's row before its first row: the identity values. An accumulator that
        will take a duration first takes and gives back that row's arguments, so its identity
        is of that kind (Drasi's: a new group's ``sum`` of durations was PT0S, not 0.0)."""
        if any(type(value) is temporal.Duration for value in arguments):
            for accumulator, value in zip(group.accumulators, arguments, strict=True):
                accumulator.add(None, value)
                accumulator.remove(None, value)
        return self._output(group)

    def _apply(self, touched: dict[Hashable, _Touch], change: RowChange) -> None:
        before = ABSENT if change.old_key is None else self._state.pop(change.old_key, ABSENT)
        after = self._contribution(change.row)
        if isinstance(before, _Contribution):
            group = self._touch(touched, before, crossing=False)
            for accumulator, value in zip(group.accumulators, before.arguments, strict=True):
                accumulator.remove(change.old_key, value)
            group.rows -= 1
            group.row = before.row
        if isinstance(after, _Contribution):
            group = self._touch(touched, after, crossing=before is FILTERED)
            if before is ABSENT:
                touched[after.group].entered = True
            for accumulator, value in zip(group.accumulators, after.arguments, strict=True):
                accumulator.add(change.new_key, value)
            group.rows += 1
            group.row = after.row
            group.values = after.values
        if change.new_key is not None and after is not ABSENT:
            self._state[change.new_key] = after

    def _run(self, changes: Sequence[RowChange]) -> dict[Hashable, _Touch]:
        touched: dict[Hashable, _Touch] = {}
        for change in changes:
            self._apply(touched, change)
        for key in touched:
            group = self._groups[key]
            group.output = self._output(group)
        return touched

    def diffs(self, changes: Sequence[RowChange]) -> list[Diff]:
        """Last part: one aggregation diff per group that is new, changed, crossed in, or that a
        new row entered. As Drasi, a new row is reported even when the group's row stays the
        same (``max`` of a smaller value): only updates and removals that change nothing are
        silent."""
        out: list[Diff] = []
        for key, touch in self._run(changes).items():
            after = self._groups[key].output
            if (
                touch.created
                or touch.entered
                or touch.before is None
                or not same_row(touch.before, after)
            ):
                out.append({"type": "aggregation", "before": touch.before, "after": dict(after)})
        return out

    def process(self, changes: Sequence[RowChange]) -> list[RowChange]:
        """Intermediate part: changes of the non-empty groups' rows, keyed by group."""
        out: list[RowChange] = []
        for key, touch in self._run(changes).items():
            group = self._groups[key]
            has = group.rows > 0
            row_key: Key = (key,)
            unchanged = touch.before is not None and same_row(touch.before, group.output)
            if touch.present and has and unchanged:
                continue
            if touch.present or has:
                out.append(
                    RowChange(
                        row_key if touch.present else None,
                        row_key if has else None,
                        group.output if has else None,
                    )
                )
        return out

    def results(self) -> list[dict[str, Any]]:
        return [dict(group.output) for group in self._groups.values()]


_GROUPING, _AGGREGATE, _EXPRESSION = 0, 1, 2
"""How :meth:`AggregatingPart._output` fills an item: a grouping value (by position), an
aggregate result as is (by call number), or an expression over the row and the results."""


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
    variable: str, call: ast.FunctionCall, parameters: Mapping[str, Any]
) -> _AggregateCall:
    argument = compile_expression(call.args[0], parameters) if call.args else None
    factory = accumulator_factory(call.name, call.distinct)
    return _AggregateCall(call.name, variable, argument, factory, call)
