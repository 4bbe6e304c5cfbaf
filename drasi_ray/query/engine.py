"""The incremental continuous-query engine: graph deltas in, result diffs out.

:class:`ContinuousQuery` holds one registered query. For each element delta it

1. updates its own :class:`~drasi_ray.query.indexes.GraphIndex` (only the labels it needs);
2. asks :class:`~drasi_ray.query.solutions.MatchSolutions` which MATCH rows the change
   removed, added or altered — solved outwards from the changed element, never by a rescan;
3. runs those row changes through the query parts (:mod:`drasi_ray.query.parts`): each WITH
   part filters, projects or aggregates and hands its own row changes to the next;
4. returns the last part's diffs in SEMANTICS.md §4 form.

Cost per change is proportional to the rows the change touches, plus O(log n) per touched
aggregate value; no work depends on the size of the graph or of the result.

Decisions where SEMANTICS.md leaves room (each covered by tests/query/test_engine.py):

- A row is identified by the ids of the elements its MATCH variables bind, so a property
  change of a bound element is an UPDATE; a relation whose endpoints change is DELETE + ADD.
- OPTIONAL MATCH: when a required row's null row gives way to a match (or the last match
  goes), that is one UPDATE; further matches of the same row are ADDs. (Drasi also reports a
  *second* match as an update from a null row that no longer exists; we do not.) A WHERE
  after an OPTIONAL MATCH filters the whole row, as Drasi's grammar (not openCypher) has it.
- Aggregating last part: a new group, and a group a new row entered, is always reported
  (``before`` = identity values for a new group), even when ``after`` equals ``before``, as
  Drasi does; a row that existed but failed the part's WHERE and now passes gives
  ``before: null``. An aggregating WITH passes only non-empty groups to the next part (an
  emptied group leaves it, as Drasi's default-state reconciliation does).
- One relation may bind several relation variables (Drasi's: no openCypher relationship
  uniqueness), so a self-loop matches ``(a)-[:R]->(b)-[:R]->(c)``.
- An OPTIONAL MATCH may join on the variables of an earlier one (a null there gives a null
  extension, as in Drasi and openCypher). MATCH after a WITH (Drasi silently ignores the MATCH
  clauses of later parts), a leading OPTIONAL MATCH, and a MATCH that uses a variable of an
  OPTIONAL MATCH before it are rejected with UnsupportedQueryError.
- A row whose evaluation raises a type error is treated as not passing and reported through
  :meth:`ContinuousQuery.take_evaluation_errors`; it never leaves the state half-updated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from drasi_ray.model.changes import ZERO_VERSION, Element, ElementDelta
from drasi_ray.model.errors import UnsupportedQueryError
from drasi_ray.model.query_specs import QueryJoin
from drasi_ray.query import ast
from drasi_ray.query.expressions import contains_aggregate
from drasi_ray.query.indexes import GraphIndex, LabelFilter
from drasi_ray.query.joins import JoinIndex, active_joins
from drasi_ray.query.parser import parse_query
from drasi_ray.query.parts import AggregatingPart, Diff, EvaluationErrors, ProjectingPart
from drasi_ray.query.solutions import MatchSolutions, RowChange

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
        self.is_aggregating: bool = isinstance(self._parts[-1], AggregatingPart)
        self._intermediate = tuple(self._parts[:-1])
        self._last = self._parts[-1]

    def apply(self, delta: ElementDelta) -> list[Diff]:
        """The diffs one applied change causes (empty if the query does not see it).

        The element's previous state is the one in this query's index, so ``delta.before`` is
        read only for the id of a delete (no ``after``); :class:`~drasi_ray.batch.DeltaBatch`
        relies on this and ships ``before`` for deletes only.
        """
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
        same_shape = index.replace(current, after)
        changes = self._solutions.changes(index, element_id, after, same_shape)
        for part in self._intermediate:
            if not changes:
                return []
            changes = part.process(changes)
        return self._last.diffs(changes) if changes else []

    def apply_batch(self, deltas: Sequence[ElementDelta]) -> list[list[Diff]]:
        """:meth:`apply` each delta in order; one diff list per delta."""
        return [self.apply(delta) for delta in deltas]

    def bootstrap(self, elements: Iterable[Element]) -> None:
        """Load an existing graph without emitting diffs (any element order works).

        A query that holds nothing yet and has no OPTIONAL MATCH takes the bulk path: every
        element goes into the index first, then each MATCH row is solved once and the rows
        run through the parts in batches (:meth:`MatchSolutions.bulk_load`). Otherwise each
        element is applied as a change. Both give the same result rows.
        """
        index = self._index
        if len(index) or self._solutions.optionals:
            for element in elements:
                self.apply(ElementDelta(index.element(element.id), element, ZERO_VERSION, 0))
            return
        wants = index.wants
        for element in elements:
            if wants(element):
                index.replace(index.element(element.id), element)
        for changes in self._solutions.bulk_load(index, BOOTSTRAP_BATCH):
            self._feed(changes)

    def _feed(self, changes: list[RowChange]) -> None:
        """Run row changes through every part, dropping the diffs (bootstrap is silent)."""
        for part in self._intermediate:
            if not changes:
                return
            changes = part.process(changes)
        if changes:
            self._last.diffs(changes)

    def take_evaluation_errors(self) -> list[str]:
        """Messages of the rows refused since the last call because evaluating them raised a
        type error (e.g. ``sum`` of a string). Such a row counts as not passing the WHERE, so
        the query keeps going; the owner should log or report these."""
        return self._errors.drain()

    def results(self) -> list[dict[str, Any]]:
        """The current result rows (aggregating: one per group ever seen, emptied groups at
        identity values). Fresh dicts: the caller may keep or mutate them."""
        return self._parts[-1].results()


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
