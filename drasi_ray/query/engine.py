"""The incremental continuous-query engine: graph deltas in, result diffs out.

:class:`ContinuousQuery` holds one registered query. For each element delta it

1. updates its own :class:`~drasi_ray.query.indexes.GraphIndex` (only the labels it needs);
2. asks :class:`~drasi_ray.query.solutions.MatchSolutions` which MATCH rows the change
   removed, added or altered — solved outwards from the changed element, never by a rescan;
3. runs each row change through the query parts on its own (:mod:`drasi_ray.query.parts`),
   as Drasi runs each solution: each WITH part filters, projects or aggregates it and hands
   its own row changes to the next;
4. collects the last part's diffs as Drasi does at the end of a change
   (:class:`~drasi_ray.query.contexts.Collector`) and returns them in docs/semantics.md §4 form.

The *row lane* takes the commonest change of the commonest query, a properties-only update of
the one node of ``MATCH (s:Sensor) WHERE .. RETURN ..`` (no pattern predicate, one part that
projects without aggregates, stateful functions or the clock): the element's one row changes in
place, and :meth:`~drasi_ray.query.parts.ProjectingPart.update_row` settles it by the same
rules as steps 3 and 4 without their contexts (tests/query/test_engine_fast_paths.py holds the
two to the same diffs and result order).

Cost per change is proportional to the rows the change touches, plus O(log n) per touched
aggregate value; no work depends on the size of the graph or of the result.

The diffs are Drasi's (drasi-lib, checked by tests/differential), where Drasi does not crash
and is not plainly wrong (docs/conformance.md lists where we part). Decisions worth knowing:

- A row is identified by the ids of the elements its MATCH variables bind, so a property
  change of a bound element is an UPDATE; a relation whose endpoints change is DELETE + ADD.
- OPTIONAL MATCH rows change as Drasi reports them (:mod:`drasi_ray.query.solutions`): a new
  match from an inserted element is an UPDATE from the null row, also for a second match; a
  match lost with a deleted element is an UPDATE to the null row, also when other matches
  remain (the query's result set, :meth:`ContinuousQuery.results`, holds the rows there are).
  A WHERE after an OPTIONAL MATCH filters the whole row, as Drasi's grammar has it.
- Aggregating last part: a new row is always reported, even when the group's row stays the
  same; a row that existed but failed the part's WHERE and now passes gives ``before: null``;
  a group that empties in an aggregating WITH leaves it (its row is DELETEd downstream).
- One relation may bind several relation variables (Drasi's: no openCypher relationship
  uniqueness), so a self-loop matches ``(a)-[:R]->(b)-[:R]->(c)``.
- An OPTIONAL MATCH may join on the variables of an earlier one (a null there gives a null
  extension, as in Drasi and openCypher). MATCH after a WITH (Drasi silently ignores the MATCH
  clauses of later parts), a leading OPTIONAL MATCH, and a MATCH that uses a variable of an
  OPTIONAL MATCH before it are rejected with UnsupportedQueryError.
- A row whose evaluation raises a type error is treated as not passing and reported through
  :meth:`ContinuousQuery.take_evaluation_errors`; a row whose evaluation divides by zero is
  dropped while it does (Drasi skips its changes: docs/conformance.md).

Time and Drasi's future functions (:mod:`drasi_ray.query.future_functions`): a change is
evaluated at its own time (``effective_from``: both clocks of the
:class:`~drasi_ray.query.evaluation.QueryClock`), never at the wall clock, so results depend only
on the changes. A future function that cannot answer yet schedules a re-evaluation in the
query's future queue; the owner of the query asks :meth:`ContinuousQuery.next_due_ms` and calls
:meth:`ContinuousQuery.fire_due` with its clock's time (an injected clock in tests). A due
entry re-evaluates the rows of its anchor element with transaction time = the scheduling
change's time and realtime = the due time, through every part even where nothing changed
(Drasi's future re-processing); an entry whose element is gone, or changed at or after its due
time, does nothing. The function state (:attr:`ContinuousQuery.state`) is plain data the owner
persists; see :meth:`ContinuousQuery.bootstrap` for how a query with state rebuilds.

Element history (:mod:`drasi_ray.model.history`): a query that calls Drasi's past functions
(:mod:`drasi_ray.query.past`) keeps the versions of the elements it sees, recorded here before
each change is evaluated, and reached by the functions through the evaluation context; other
queries keep none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeAlias

from drasi_ray.model.changes import ZERO_VERSION, Element, ElementDelta
from drasi_ray.model.errors import UnsupportedQueryError
from drasi_ray.model.history import ElementHistory, HistoryLimits
from drasi_ray.model.query_specs import QueryJoin, QueryLanguage
from drasi_ray.query import ast
from drasi_ray.query.contexts import ADDING, REMOVING, UPDATING, Collector, Context, Diff, Key
from drasi_ray.query.evaluation import EvaluationContext, EvaluationMode, QueryClock
from drasi_ray.query.expressions import contains_aggregate, walk
from drasi_ray.query.futures import FutureEntry
from drasi_ray.query.indexes import GraphIndex, LabelFilter
from drasi_ray.query.joins import JoinIndex, active_joins
from drasi_ray.query.languages import parse
from drasi_ray.query.matching import ANONYMOUS_PREFIX as ANONYMOUS
from drasi_ray.query.matching import Variable
from drasi_ray.query.parts import AggregatingPart, EvaluationErrors, ProjectingPart
from drasi_ray.query.past import PAST_FUNCTIONS
from drasi_ray.query.row_ids import row_id
from drasi_ray.query.solutions import ChangeKind, MatchSolutions, RowChange
from drasi_ray.query.stateful import FunctionState

Part: TypeAlias = ProjectingPart | AggregatingPart

BOOTSTRAP_BATCH = 10_000
"""Rows handed to the query parts at a time while bootstrapping (bounds the extra memory)."""

_INSERT, _UPDATE, _DELETE = ChangeKind.INSERT, ChangeKind.UPDATE, ChangeKind.DELETE
"""As module globals for :meth:`ContinuousQuery.apply` (see :data:`~drasi_ray.query.contexts.
ADDING`)."""


class ContinuousQuery:
    """One continuous query, maintained incrementally.

    Raises :class:`~drasi_ray.model.errors.QuerySyntaxError` (or its subclass
    :class:`~drasi_ray.model.errors.UnsupportedQueryError`) at construction if ``text`` is not a
    supported query in ``language`` (Cypher or GQL). ``node_labels`` / ``relation_labels``
    say which elements the query can use (None = every node / relation); deltas of other
    elements are ignored cheaply, so the caller may route only matching deltas or all of them.

    ``joins`` are the query's synthetic relations (:mod:`drasi_ray.query.joins`); as in Drasi,
    a join takes effect only where a pattern names its id as a relation label, and then the
    nodes of its keys' labels are among those the query needs.

    ``state`` is the function state to continue from (a rebuild after a restart, see
    :meth:`bootstrap`); by default a fresh one.
    """

    def __init__(
        self,
        query_id: str,
        text: str,
        parameters: Mapping[str, Any] | None = None,
        joins: Sequence[QueryJoin] = (),
        state: FunctionState | None = None,
        history: HistoryLimits | None = None,
        language: QueryLanguage = QueryLanguage.CYPHER,
    ) -> None:
        self.query_id = query_id
        self.query = parse(text, language)
        params: Mapping[str, Any] = dict(parameters or {})
        parts = self.query.parts
        _check_supported(self.query)
        self.state = state or FunctionState()
        self._context = EvaluationContext(self.state, QueryClock.at(0))
        self._solutions = MatchSolutions(parts[0].matches, params)
        self.node_labels: frozenset[str] | None = self._solutions.label_filter(nodes=True)
        self.relation_labels: frozenset[str] | None = self._solutions.label_filter(nodes=False)
        used = active_joins(joins, self._solutions.named_relation_labels())
        join_index = JoinIndex(used) if used else None
        if join_index is not None and self.node_labels is not None:
            self.node_labels = self.node_labels | join_index.labels
        self._index = GraphIndex(
            LabelFilter(self.node_labels), LabelFilter(self.relation_labels), join_index
        )
        self.joins = tuple(joins)
        self._parts: list[Part] = []
        self._errors = EvaluationErrors()
        where = self._solutions.where
        for number, part in enumerate(parts):
            last = number == len(parts) - 1
            self._parts.append(
                _make_part(part.projection, where, params, last, self._errors, self._context)
            )
            where = part.projection.where
        for previous, following in zip(self._parts, self._parts[1:], strict=False):
            if isinstance(previous, AggregatingPart):
                following.follow(previous.grouping)
        self.history: ElementHistory | None = (
            ElementHistory(history) if _calls(self.query, PAST_FUNCTIONS) else None
        )
        self._context.history = self.history
        self.column_names: tuple[str, ...] = tuple(i.name for i in self.query.returns.items)
        names = self._solutions.variable_names
        self._named = tuple(i for i, name in enumerate(names) if not name.startswith(ANONYMOUS))
        self._anonymous = len(self._named) < len(names)
        self.row_changes = 0
        """MATCH row changes evaluated so far (one per row a change added, removed or altered):
        the query's work, and how many rows one change reached."""
        self.is_aggregating: bool = isinstance(self._parts[-1], AggregatingPart)
        self.stateful: bool = bool(self._context.calls)
        """Whether the query calls Drasi's stateful functions (then it has a future queue and
        function state worth persisting)."""
        self._clocked = self.stateful or self._context.reads_clock
        self._touched: set[Key | None] | None = None
        self._lane = self._row_lane()

    def apply(self, delta: ElementDelta) -> list[Diff]:
        """The diffs one applied change causes (empty if the query does not see it).

        The element's previous state is the one in this query's index, so ``delta.before`` is
        read only for the id of a delete (no ``after``); :class:`~drasi_ray.model.wire.
        DeltaPacket` relies on this and ships ``before`` for deletes only.
        """
        if self._clocked:
            self._at_change(delta)
        after = delta.after
        index = self._index
        if after is None:
            before = delta.before
            assert before is not None, "a delta has a before or an after"
            element_id = before.id
        else:
            element_id = after.id
            if not index.wants(after):
                after = None
        current = index.element(element_id)
        if current is None and after is None:
            return []
        if self._clocked and current is not None:
            realtime = self._context.clock.realtime_ms
            self._context.before_clock = QueryClock(current.effective_from, realtime)
        if self.history is not None:
            self.history.observe(element_id, after)
        same_shape = index.replace(current, after)
        if same_shape and self._lane is not None:
            assert after is not None  # (same shape: an element before and after)
            return self._lane_update(self._lane, after)
        kind = _change_kind(delta)
        changes = self._solutions.changes(index, element_id, after, same_shape, kind)
        if self._anonymous and kind is _UPDATE:
            changes = [c for c in changes if self._visible(c, element_id)]
        return self._evaluate(changes) if changes else []

    def _row_lane(self) -> tuple[Variable, ProjectingPart] | None:
        """The lone variable and the one part of a query in which a properties-only change
        of an element updates the element's one row in place and the part settles it alone
        (:meth:`ProjectingPart.update_row`): ``MATCH (s:Sensor) WHERE .. RETURN ..``, Drasi's
        most common query, without stateful functions, clock reads or anonymous variables.
        :meth:`apply` then skips the contexts and the collector (the same diffs)."""
        variable = self._solutions.lone_variable
        part = self._parts[0]
        if (
            variable is None
            or len(self._parts) != 1
            or not isinstance(part, ProjectingPart)
            or not part.settles_rows
            or self._clocked
            or self._anonymous
        ):
            return None
        return variable, part

    def _lane_update(self, lane: tuple[Variable, ProjectingPart], after: Element) -> list[Diff]:
        variable, part = lane
        if not variable.accepts(after):
            return []
        self.row_changes += 1
        key = (after.id,)
        diffs = part.update_row(key, {variable.name: after})
        if diffs and self._touched is not None:
            self._touched.add(key)
        return diffs

    def _visible(self, change: RowChange, element_id: str) -> bool:
        """Whether Drasi sees ``change``: a row that stays, and whose only changed element is
        bound to anonymous variables (``-[:R]->``), is the same row to Drasi, whose rows hold
        the named variables only, so it reports nothing."""
        key = change.old_key
        if key is None or key != change.new_key:
            return True
        return any(key[position] == element_id for position in self._named)

    def _at_change(self, delta: ElementDelta) -> None:
        """Point the context at a change: its time on both clocks, its element as anchor."""
        context = self._context
        context.clock = context.before_clock = QueryClock.at(delta.source_time_ms)
        context.anchor_id = delta.element.id
        context.reprocessing = False

    # ------------------------------------------------------------------ the future queue

    def next_due_ms(self) -> int | None:
        """When the earliest scheduled re-evaluation is due (None: nothing is scheduled)."""
        return self.state.queue.next_due()

    def fire_due(self, now_ms: int) -> list[list[Diff]]:
        """Run every scheduled re-evaluation due at ``now_ms``, earliest first; one diff list
        per entry that changed the result (as Drasi emits one result per due entry)."""
        return [diffs for _due, diffs in self.fire_due_timed(now_ms)]

    def fire_due_timed(
        self, now_ms: int, after_each: Callable[[int], None] | None = None
    ) -> list[tuple[int, list[Diff]]]:
        """:meth:`fire_due`, each diff list with the due time of its entry; ``after_each`` is
        called with each entry's due time once it ran (also when it failed)."""
        results: list[tuple[int, list[Diff]]] = []
        queue = self.state.queue
        while (entry := queue.pop_due(now_ms)) is not None:
            try:
                diffs = self.fire(entry)
            finally:
                if after_each is not None:
                    after_each(entry.due_ms)
            if diffs:
                results.append((entry.due_ms, diffs))
        return results

    def fire(self, entry: FutureEntry) -> list[Diff]:
        """Re-evaluate the rows of ``entry``'s anchor element at its due time."""
        element = self._index.element(entry.anchor_id)
        if element is None or element.effective_from >= entry.due_ms:
            return []  # gone, or changed since: that change was evaluated at a later time
        context = self._context
        context.clock = QueryClock(entry.original_ms, entry.due_ms)
        context.before_clock = QueryClock.at(element.effective_from)
        context.anchor_id = entry.anchor_id
        context.reprocessing = True
        try:
            changes = self._solutions.rows_of(self._index, entry.anchor_id)
            return self._evaluate(changes) if changes else []
        finally:
            context.reprocessing = False

    def apply_batch(self, deltas: Sequence[ElementDelta]) -> list[list[Diff]]:
        """:meth:`apply` each delta in order; one diff list per delta."""
        return [self.apply(delta) for delta in deltas]

    def _evaluate(self, changes: Iterable[RowChange]) -> list[Diff]:
        """Run each MATCH row change through the parts; the result diffs of all of them."""
        collector = Collector()
        for change in changes:
            self.row_changes += 1
            for context in self._through_parts(_first_context(change)):
                collector.add(context)
        last = self._parts[-1]
        touched = self._touched
        for context in collector.kept():
            last.record(context)
            if touched is not None:  # the keys record() may have changed
                touched.add(context.old_key)
                touched.add(context.new_key)
        return collector.diffs()

    def _through_parts(self, first: Context) -> list[Context]:
        parts = self._parts
        if len(parts) == 1:  # one RETURN, the usual query: no list per part
            return parts[0].process(first)
        contexts = [first]
        for part in parts:
            following: list[Context] = []
            for context in contexts:
                following.extend(part.process(context))
            if not following:
                return following
            contexts = following
        return contexts

    def bootstrap(self, elements: Iterable[Element]) -> None:
        """Load an existing graph without emitting diffs (any element order works).

        A query that holds nothing yet and has no OPTIONAL MATCH takes the bulk path: every
        element goes into the index first, then each MATCH row is solved once and the rows
        run through the parts (:meth:`MatchSolutions.bulk_load`). Otherwise each element is
        applied as a change. Both give the same result rows.

        A query that calls stateful functions loads as Drasi bootstraps: each element applied
        as an insert at its own time, in time order, so the functions see the graph grow and
        schedule what they would have. But when its state has history (:attr:`state` restored
        after a restart, or handed over by the engine this one replaces), the graph is loaded
        on the bulk path in :attr:`~drasi_ray.query.evaluation.EvaluationMode.REPLAY`: each call
        returns what it last returned for its row, so the rows are the rows held before.
        """
        try:
            self._load(elements)
        finally:
            if self._touched is not None:
                self._touched.clear()  # the loaded rows are read whole (results_by_id)

    def _load(self, elements: Iterable[Element]) -> None:
        if self.stateful and self.state.restored:
            self._context.mode = EvaluationMode.REPLAY
            try:
                self._bulk_load(elements)
            finally:
                self._context.mode = EvaluationMode.APPLY
            return
        if self.stateful:
            for element in sorted(elements, key=lambda element: element.effective_from):
                delta = ElementDelta(None, element, ZERO_VERSION, element.effective_from, True)
                self.apply(delta)
            self.state.restored = True
            return
        index = self._index
        if len(index) or self._solutions.optionals:
            for element in elements:
                current = index.element(element.id)
                self.apply(ElementDelta(current, element, ZERO_VERSION, 0, current is None))
            return
        self._bulk_load(elements)

    def _bulk_load(self, elements: Iterable[Element]) -> None:
        index = self._index
        wants, history = index.wants, self.history
        for element in elements:
            if wants(element):
                index.replace(index.element(element.id), element)
                if history is not None:
                    history.observe(element.id, element)
        for changes in self._solutions.bulk_load(index, BOOTSTRAP_BATCH):
            self._evaluate(changes)

    @property
    def history_limits(self) -> HistoryLimits | None:
        """The limits of the element history this query keeps (None: it keeps none)."""
        return None if self.history is None else self.history.limits

    def load_history(self, records: Mapping[str, bytes]) -> None:
        """Take element histories kept elsewhere (the coordinator's, after a restart) before
        :meth:`bootstrap`: element id -> :meth:`ElementHistory.record_of` bytes. Ignored by a
        query that keeps no history."""
        if self.history is not None:
            self.history.load(records)

    def take_evaluation_errors(self) -> list[str]:
        """Messages of the rows refused since the last call because evaluating them raised a
        type error (e.g. ``sum`` of a string). Such a row counts as not passing the WHERE, so
        the query keeps going; the owner should log or report these."""
        return self._errors.drain()

    def results(self) -> list[dict[str, Any]]:
        """The current result rows (aggregating: the last reported row of every group ever
        seen, emptied groups at identity values). Fresh dicts: the caller may keep or mutate
        them."""
        return self._parts[-1].results()

    def results_by_id(self) -> dict[str, dict[str, Any]]:
        """:meth:`results` by row id (:mod:`drasi_ray.query.row_ids`): a name per row that
        stays while the row lives and is the same after a rebuild."""
        return {row_id(key): dict(row) for key, row in self._parts[-1].keyed_results()}

    def track_rows(self) -> None:
        """Note from now on which result rows change, for :meth:`take_row_changes` (a
        query that other queries read: query chaining)."""
        if self._touched is None:
            self._touched = set()

    def take_row_changes(self) -> dict[str, dict[str, Any] | None]:
        """The result rows that changed since the last call (or the end of the last
        bootstrap), by row id: each as it now is, None for a row that is gone. Every change of
        the result set is here, also one no diff reports (an OPTIONAL MATCH null row that
        comes back silently). Empty unless :meth:`track_rows` was called."""
        touched = self._touched
        if not touched:
            return {}
        touched.discard(None)  # no row is keyed None: a context's missing side
        last = self._parts[-1]
        changes = {}
        for key in touched:
            row = last.row(key)
            changes[row_id(key)] = None if row is None else dict(row)
        touched.clear()
        return dict(sorted(changes.items()))  # in an order that is the same in every run


def _change_kind(delta: ElementDelta) -> ChangeKind:
    if delta.after is None:
        return _DELETE
    return _INSERT if delta.inserted else _UPDATE


def _first_context(change: RowChange) -> Context:
    """The first part's context of a MATCH row change."""
    old, new, row = change.old_key, change.new_key, change.row
    if old is None:
        kind = ADDING
    elif new is None:
        kind = REMOVING
    else:
        kind = UPDATING
    return Context(kind, old, new, change.before, row, phantom=change.phantom, silent=change.silent)


def _make_part(
    projection: ast.Projection,
    where: ast.Expr | None,
    parameters: Mapping[str, Any],
    last: bool,
    errors: EvaluationErrors,
    context: EvaluationContext,
) -> Part:
    if any(contains_aggregate(item.expression) for item in projection.items):
        return AggregatingPart(projection, where, parameters, last, errors, context)
    return ProjectingPart(projection, where, parameters, last, errors, context)


def _check_supported(query: ast.Query) -> None:
    """MATCH clauses are supported in the first part only (before any WITH)."""
    for part in query.parts[1:]:
        if part.matches:
            raise UnsupportedQueryError("MATCH after WITH is not supported", 1, 1)


def _calls(query: ast.Query, names: frozenset[str]) -> bool:
    """Whether ``query`` calls a function named in ``names`` anywhere."""
    return any(
        isinstance(node, ast.FunctionCall) and node.name in names
        for expression in _expressions(query)
        for node in walk(expression)
    )


def _expressions(query: ast.Query) -> Iterator[ast.Expr]:
    """Every top-level expression of ``query``: patterns' property maps and WHEREs, MATCH
    WHEREs, projected items and WITH WHEREs."""
    for part in query.parts:
        for match in part.matches:
            yield from _present(match.where)
            for path in match.paths:
                patterns: tuple[ast.NodePattern | ast.RelationPattern, ...] = (
                    *path.nodes,
                    *path.relations,
                )
                for pattern in patterns:
                    yield from _present(pattern.properties, pattern.where)
        yield from (item.expression for item in part.projection.items)
        yield from _present(part.projection.where)


def _present(*expressions: ast.Expr | None) -> Iterator[ast.Expr]:
    return (expression for expression in expressions if expression is not None)
