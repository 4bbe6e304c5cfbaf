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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from drasi_ray.model.changes import ZERO_VERSION, Element, ElementDelta
from drasi_ray.model.errors import UnsupportedQueryError
from drasi_ray.model.query_specs import QueryJoin
from drasi_ray.query import ast
from drasi_ray.query.contexts import Collector, Context, Diff, Kind
from drasi_ray.query.expressions import contains_aggregate
from drasi_ray.query.indexes import GraphIndex, LabelFilter
from drasi_ray.query.joins import JoinIndex, active_joins
from drasi_ray.query.parser import parse_query
from drasi_ray.query.parts import AggregatingPart, EvaluationErrors, ProjectingPart
from drasi_ray.query.solutions import ChangeKind, MatchSolutions, RowChange

Part = ProjectingPart | AggregatingPart

BOOTSTRAP_BATCH = 10_000
"""Rows handed to the query parts at a time while bootstrapping (bounds the extra memory)."""


class ContinuousQuery:
    """One continuous query, maintained incrementally.

    Raises :class:`~drasi_ray.errors.QuerySyntaxError` (or its subclass
    :class:`~drasi_ray.errors.UnsupportedQueryError`) at construction if ``text`` is not a
    supported query. ``node_labels`` / ``relation_labels`` say which elements the query can
    use (None = every node / relation); deltas of other elements are ignored cheaply, so the
    caller may route only matching deltas or all of them.

    ``joins`` are the query's synthetic relations (:mod:`drasi_ray.query.joins`); as in Drasi,
    a join takes effect only where a pattern names its id as a relation label, and then the
    nodes of its keys' labels are among those the query needs.
    """

    def __init__(
        self,
        query_id: str,
        text: str,
        parameters: Mapping[str, Any] | None = None,
        joins: Sequence[QueryJoin] = (),
    ) -> None:
        self.query_id = query_id
        self.query = parse_query(text)
        params: Mapping[str, Any] = dict(parameters or {})
        parts = self.query.parts
        _check_supported(self.query)
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
            self._parts.append(_make_part(part.projection, where, params, last, self._errors))
            where = part.projection.where
        self.column_names: tuple[str, ...] = tuple(i.name for i in self.query.returns.items)
        self.row_changes = 0
        """MATCH row changes evaluated so far (one per row a change added, removed or altered):
        the query's work, and how many rows one change reached."""
        self.is_aggregating: bool = isinstance(self._parts[-1], AggregatingPart)

    def apply(self, delta: ElementDelta) -> list[Diff]:
        """The diffs one applied change causes (empty if the query does not see it).

        The element's previous state is the one in this query's index, so ``delta.before`` is
        read only for the id of a delete (no ``after``); :class:`~drasi_ray.actors.wire.
        DeltaPacket` relies on this and ships ``before`` for deletes only.
        """
        after = delta.after
        index = self._index
        deleted = after is None
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
        kind = ChangeKind.UPDATE
        if deleted:
            kind = ChangeKind.DELETE
        elif delta.inserted:
            kind = ChangeKind.INSERT
        same_shape = index.replace(current, after)
        changes = self._solutions.changes(index, element_id, after, same_shape, kind)
        return self._evaluate(changes) if changes else []

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
        for context in collector.kept():
            last.record(context)
        return collector.diffs()

    def _through_parts(self, first: Context) -> list[Context]:
        contexts = [first]
        for part in self._parts:
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
        """
        index = self._index
        if len(index) or self._solutions.optionals:
            for element in elements:
                current = index.element(element.id)
                self.apply(ElementDelta(current, element, ZERO_VERSION, 0, current is None))
            return
        wants = index.wants
        for element in elements:
            if wants(element):
                index.replace(index.element(element.id), element)
        for changes in self._solutions.bulk_load(index, BOOTSTRAP_BATCH):
            self._evaluate(changes)

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


def _first_context(change: RowChange) -> Context:
    """The first part's context of a MATCH row change."""
    old, new, row = change.old_key, change.new_key, change.row
    if old is None:
        kind = Kind.ADDING
    elif new is None:
        kind = Kind.REMOVING
    else:
        kind = Kind.UPDATING
    return Context(kind, old, new, change.before, row, phantom=change.phantom, silent=change.silent)


def _make_part(
    projection: ast.Projection,
    where: ast.Expr | None,
    parameters: Mapping[str, Any],
    last: bool,
    errors: EvaluationErrors,
) -> Part:
    if any(contains_aggregate(item.expression) for item in projection.items):
        return AggregatingPart(projection, where, parameters, last, errors)
    return ProjectingPart(projection, where, parameters, last, errors)


def _check_supported(query: ast.Query) -> None:
    """MATCH clauses are supported in the first part only (before any WITH)."""
    for part in query.parts[1:]:
        if part.matches:
            raise UnsupportedQueryError("MATCH after WITH is not supported", 1, 1)
