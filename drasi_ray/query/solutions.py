"""The maintained result of a query's MATCH clauses: rows of bound variables, kept up to date.

:class:`MatchSolutions` turns "element X changed" into row changes of the MATCH stage,
without rescanning the graph:

- rows that contained X before are found in a reverse index (element id -> row keys);
- rows that contain X now are solved from X outwards (:meth:`Pattern.solve_from`) — unless
  only X's properties changed and no pattern predicate reads properties: then they are the
  rows it was in, re-read from the index (the common case, a sensor reading, costs no search);
- with OPTIONAL MATCH, a change can also flip another row between "no match" (the null row)
  and "matched": the required rows an optional extension through X attaches to are found
  from the extension's shared variables, and every affected required row is re-extended.
  The OPTIONAL MATCH clauses extend a row in turn, so one may join on the variables of an
  earlier one; where such a variable is null, the later clause gives its null extension.

A row's identity (:data:`Key`) is the tuple of the element ids its variables bind (None for a
null optional variable), so a property change of a bound element keeps the row's identity and
becomes an update downstream. Only rows that hold the changed element change (as Drasi solves
only from it), and OPTIONAL MATCH rows change as Drasi reports them:

- an element *inserted* into an OPTIONAL MATCH clause turns each new match into an update
  from the row's null row (the clause's variables, and those of the clauses joined on them,
  null), even when the null row already gave way to an earlier match;
- an element *deleted* from one turns each lost match into an update to the null row, even
  when other matches remain (that null row is then *phantom*: reported, not a result row);
- an element *updated* into or out of one adds or removes its matches; the null row that this
  replaces or brings back changes *silently* (Drasi does not report it).

The WHERE clauses are not applied here: ANDed, they are the filter of the first query part,
so rows that fail it still exist (Drasi's "row starts passing WHERE"). That includes a WHERE
written after an OPTIONAL MATCH: as in Drasi, whose grammar takes a part's WHEREs only after all
its MATCH clauses, it filters the whole row (``OPTIONAL MATCH (a)-[:R]->(b) WHERE b.x = 1``
drops the row whose ``b`` is null), where openCypher would make it a condition of the match.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from drasi_ray.model.changes import Element
from drasi_ray.model.errors import UnsupportedQueryError
from drasi_ray.query import ast
from drasi_ray.query.expressions import referenced_variables
from drasi_ray.query.indexes import GraphIndex
from drasi_ray.query.matching import (
    Key,
    Pattern,
    PatternBuilder,
    Row,
    Variable,
)


class ChangeKind(enum.Enum):
    """What happened to the changed element (Drasi treats an insert and an update of
    OPTIONAL MATCH rows differently)."""

    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"


class RowChange(NamedTuple):
    """One MATCH row changed.

    ``old_key`` is the identity the row had before (None: it did not exist), ``new_key`` the
    identity it has now (None: it is gone) and ``row`` its new content (None when gone). A
    plain update has ``old_key == new_key``; different keys mean the row was replaced in place
    (an OPTIONAL MATCH null row and a match, see :class:`MatchSolutions`), and ``before`` is
    then the replaced row when it is a null row. ``phantom``: the new row is not a result row
    (Drasi reports a lost match as becoming the null row even when other matches remain);
    ``silent``: the row changes without Drasi reporting it. A named tuple: one is made per row
    per change, and tuples are the cheapest immutable records to build.
    """

    old_key: Key | None
    new_key: Key | None
    row: Row | None
    before: Row | None = None
    phantom: bool = False
    silent: bool = False


class _Optional:
    """One OPTIONAL MATCH clause, compiled against the variables bound before it (those of
    the required clauses and of the OPTIONAL MATCH clauses written earlier)."""

    def __init__(self, pattern: Pattern, bound: Sequence[str]) -> None:
        self.pattern = pattern
        self.shared = [i for i, name in enumerate(pattern.names) if name in bound]
        self.new = [i for i, name in enumerate(pattern.names) if name not in bound]
        self.new_names = [pattern.names[i] for i in self.new]
        self.null_key: Key = (None,) * len(self.new)
        self.null_row = dict.fromkeys(self.new_names)
        self.checks = pattern.late_checks

    def extensions(self, index: GraphIndex, row: Row) -> list[tuple[Key, Row]]:
        """The matches of this clause for row ``row``, or the one null extension (also when a
        variable it joins on is null: an earlier OPTIONAL MATCH found nothing)."""
        initial = {i: row[self.pattern.names[i]] for i in self.shared}
        if any(element is None for element in initial.values()):
            return [(self.null_key, self.null_row)]
        found: list[tuple[Key, Row]] = []
        for key, solved in self.pattern.solve(index, initial):
            extension = {name: solved[name] for name in self.new_names}
            full = {**row, **extension}
            if all(check(full) for check in self.checks):
                found.append((tuple(key[i] for i in self.new), extension))
        return found or [(self.null_key, self.null_row)]


class MatchSolutions:
    """Incrementally maintained rows of the MATCH / OPTIONAL MATCH clauses of a query part.

    Contract: call :meth:`changes` once per changed element, *after* the graph index holds the
    element's new state; it returns the row changes that element caused, each row key at most
    once.
    """

    def __init__(self, clauses: Sequence[ast.MatchClause], parameters: Mapping[str, Any]) -> None:
        _check_clause_order(clauses)
        counter = [0]
        builder = PatternBuilder(parameters, counter)
        for clause in clauses:
            if not clause.optional:
                builder.add_clause(clause.paths)
        self.required = builder.build()
        self.where = ast.conjunction(
            [*builder.hoisted, *(c.where for c in clauses if c.where is not None)]
        )
        self.optionals: list[_Optional] = []
        bound = list(self.required.names)
        for clause in clauses:
            if clause.optional:
                optional = self._compile_optional(clause, parameters, counter, bound)
                self.optionals.append(optional)
                bound.extend(optional.new_names)
        # Where each variable's element id sits in a full row's key.
        self._key_position = {name: position for position, name in enumerate(bound)}
        self._names = tuple(bound)
        self._width = len(self.required)
        self._clause_blanks = _clause_blanks(self.optionals, self._width)
        self._by_element: dict[str, set[Key]] = {}
        self._by_required: dict[Key, list[Key]] = {}
        # Rows depend only on the graph's shape (ids, labels, endpoints) unless a pattern
        # predicate reads properties: then a property change cannot add or remove a row.
        self._shape_only = not self.optionals and not self.required.guarded
        # A lone node variable (``MATCH (r:Room)``): its row is the element itself, so a
        # property change needs no reverse-index lookup either.
        self._lone = self._shape_only and len(self.required) == 1

    @staticmethod
    def _compile_optional(
        clause: ast.MatchClause,
        parameters: Mapping[str, Any],
        counter: list[int],
        bound: Sequence[str],
    ) -> _Optional:
        builder = PatternBuilder(parameters, counter)
        builder.add_clause(clause.paths)
        if builder.hoisted:
            raise UnsupportedQueryError(
                "a stateful function in a pattern of an OPTIONAL MATCH is not supported", 1, 1
            )
        return _Optional(builder.build(), bound)

    # ------------------------------------------------------------------ label needs

    def label_filter(self, nodes: bool) -> frozenset[str] | None:
        """Labels of the node (or relation) variables of every clause; None = all."""
        needed: set[str] = set()
        for pattern in (self.required, *(o.pattern for o in self.optionals)):
            labels = pattern.label_filter(nodes)
            if labels is None:
                return None
            needed |= labels
        return frozenset(needed)

    def named_relation_labels(self) -> frozenset[str]:
        """Every label written on a relation variable of any clause."""
        named: set[str] = set()
        for pattern in (self.required, *(o.pattern for o in self.optionals)):
            for variable in pattern.variables:
                if not variable.is_node:
                    for labels in variable.label_sets:
                        named.update(labels)
        return frozenset(named)

    @property
    def lone_variable(self) -> Variable | None:
        """The variable of a MATCH that is one node and nothing else, without predicates in
        the pattern (``MATCH (s:Sensor)``; a WHERE is applied by the parts): a change of only
        its element's properties changes exactly the element's one row, in place. None
        otherwise."""
        return self.required.variables[0] if self._lone else None

    @property
    def variable_names(self) -> tuple[str, ...]:
        names = list(self.required.names)
        for optional in self.optionals:
            names.extend(optional.new_names)
        return tuple(names)

    # ------------------------------------------------------------------ changes

    def changes(
        self,
        index: GraphIndex,
        changed_id: str,
        after: Element | None,
        same_shape: bool = False,
        kind: ChangeKind = ChangeKind.UPDATE,
    ) -> list[RowChange]:
        """Row changes caused by element ``changed_id`` now being ``after`` (None: absent or
        no longer wanted by the index). ``same_shape``: only its properties changed (see
        :meth:`GraphIndex.replace`); when no pattern predicate reads properties, its rows are
        then exactly the rows it was in, re-read from the index instead of solved again.
        ``kind`` says whether the element was inserted, updated or deleted, which decides how
        OPTIONAL MATCH rows change (see the module docstring)."""
        if same_shape and self._shape_only:
            if self._lone:
                return self._lone_row(after)
            return self._reread(index, changed_id)
        if not self.optionals:
            return self._required_changes(index, changed_id, after)
        return self._optional_changes(index, changed_id, after, kind)

    def _lone_row(self, after: Element | None) -> list[RowChange]:
        """The update of the one row of a single-variable pattern (same shape as before, so
        the row existed before exactly when it exists now)."""
        variable = self.required.variables[0]
        if after is None or not variable.accepts(after):
            return []
        key = (after.id,)
        return [RowChange(key, key, {variable.name: after})]

    def _reread(self, index: GraphIndex, changed_id: str) -> list[RowChange]:
        """An update of every row that holds ``changed_id``, with its elements as indexed."""
        keys = self._by_element.get(changed_id)
        if not keys:
            return []
        names = self.required.names
        element = index.element
        result: list[RowChange] = []
        for key in keys:
            row = {name: element(element_id) for name, element_id in zip(names, key, strict=True)}
            result.append(RowChange(key, key, row))
        return result

    def _solve_anchored(self, index: GraphIndex, after: Element | None) -> dict[Key, Row]:
        if after is None:
            return {}
        required = self.required
        positions = required.anchors(after)
        if len(positions) == 1:
            return dict(required.solve_from(index, positions[0], after))
        found: dict[Key, Row] = {}
        for position in positions:
            found.update(required.solve_from(index, position, after))
        return found

    def _required_changes(
        self, index: GraphIndex, changed_id: str, after: Element | None
    ) -> list[RowChange]:
        registered = self._by_element.get(changed_id)
        old = () if registered is None else tuple(registered)
        new = self._solve_anchored(index, after)
        result: list[RowChange] = []
        kept = 0
        for key in old:
            row = new.get(key)
            if row is None:
                self._unregister(key)
                result.append(RowChange(key, None, None))
            else:
                kept += 1
                result.append(RowChange(key, key, row))
        if kept == len(new):
            return result  # every row found was there before: nothing to register
        for key, row in new.items():
            if registered is None or key not in registered:
                self._register(key)
                result.append(RowChange(None, key, row))
        return result

    # ------------------------------------------------------------------ bootstrap

    def bulk_load(self, index: GraphIndex, batch: int) -> Iterator[list[RowChange]]:
        """Every row of a freshly loaded index, as additions in batches of ``batch``.

        Contract: no row was registered before (an empty query) and ``index`` holds the whole
        graph. Each required row is found exactly once, by solving from the elements its first
        variable binds, instead of once per element as it completes (which is what applying
        the elements one by one costs), then extended by the OPTIONAL MATCH clauses.
        """
        assert not self._by_element
        required = self.required
        first = required.variables[0]
        rows: list[RowChange] = []
        for element in list(index.elements()):
            if not first.accepts(element):
                continue
            for key, row in required.solve_from(index, 0, element):
                full = self._full_rows(index, key, row) if self.optionals else {key: row}
                for full_key, full_row in full.items():
                    self._register(full_key)
                    rows.append(RowChange(None, full_key, full_row))
                if self.optionals:
                    self._by_required[key] = list(full)
            if len(rows) >= batch:
                yield rows
                rows = []
        if rows:
            yield rows

    def rows_of(self, index: GraphIndex, element_id: str) -> list[RowChange]:
        """An unchanged update of every row that holds ``element_id``, its elements as indexed
        (a scheduled re-evaluation of that element's rows)."""
        names = self.variable_names
        element = index.element
        result: list[RowChange] = []
        keys = self._by_element.get(element_id, ())
        for key in sorted(keys, key=lambda k: tuple("" if part is None else part for part in k)):
            row = {
                name: None if element_id_ is None else element(element_id_)
                for name, element_id_ in zip(names, key, strict=True)
            }
            result.append(RowChange(key, key, row))
        return result

    def _optional_changes(
        self, index: GraphIndex, changed_id: str, after: Element | None, kind: ChangeKind
    ) -> list[RowChange]:
        width = self._width
        touched = {key[:width] for key in self._by_element.get(changed_id, ())}
        valid = self._solve_anchored(index, after)
        for required_key in touched:
            if changed_id not in required_key and required_key not in valid:
                row = self._required_row(index, required_key)
                if row is not None:
                    valid[required_key] = row
        for required_key, row in self._attached_rows(index, after).items():
            valid.setdefault(required_key, row)
        result: list[RowChange] = []
        for required_key in touched | valid.keys():
            new = self._full_rows(index, required_key, valid.get(required_key))
            result.extend(self._diff_required(index, required_key, new, changed_id, kind))
        return result

    def _required_row(self, index: GraphIndex, key: Key) -> Row | None:
        """Re-read required row ``key`` from the index (None if it no longer solves)."""
        initial: dict[int, Element] = {}
        for position, element_id in enumerate(key):
            assert element_id is not None
            element = index.element(element_id)
            if element is None:
                return None
            initial[position] = element
        for _key, row in self.required.solve(index, initial):
            return row
        return None

    def _attached_rows(self, index: GraphIndex, after: Element | None) -> dict[Key, Row]:
        """Required rows that an optional extension through ``after`` attaches to."""
        found: dict[Key, Row] = {}
        if after is None:
            return found
        for optional in self.optionals:
            names = optional.pattern.names
            for position in optional.pattern.anchors(after):
                if position not in optional.new:
                    continue
                for _key, row in optional.pattern.solve(index, {position: after}):
                    joined = {names[i]: row[names[i]] for i in optional.shared}
                    found.update(self._rows_joining(index, joined))
        return found

    def _rows_joining(self, index: GraphIndex, joined: Mapping[str, Element]) -> dict[Key, Row]:
        """Required rows whose full rows bind each variable of ``joined`` to its element.

        When all of them are required variables, the rows are solved from those elements.
        A variable of an earlier OPTIONAL MATCH is found in the rows as they are: had the
        changed element altered that clause's match, the rows would be found from that clause.
        """
        required = self.required
        if all(name in required.position for name in joined):
            shared = {required.position[name]: element for name, element in joined.items()}
            return dict(required.solve(index, shared))
        wanted = [(self._key_position[name], element.id) for name, element in joined.items()]
        found: dict[Key, Row] = {}
        for key in self._by_element.get(wanted[0][1], ()):
            if all(key[position] == element_id for position, element_id in wanted):
                required_key = key[: self._width]
                row = self._required_row(index, required_key)
                if row is not None:
                    found[required_key] = row
        return found

    def _full_rows(self, index: GraphIndex, required_key: Key, row: Row | None) -> dict[Key, Row]:
        """Every full row of one required row: each OPTIONAL MATCH in turn extends every row
        so far with its matches (or its null extension)."""
        if row is None:
            return {}
        partial: list[tuple[Key, Row]] = [(required_key, row)]
        for optional in self.optionals:
            partial = [
                (key + extension_key, {**full, **extension})
                for key, full in partial
                for extension_key, extension in optional.extensions(index, full)
            ]
        return dict(partial)

    def _diff_required(
        self,
        index: GraphIndex,
        required_key: Key,
        new: dict[Key, Row],
        changed_id: str,
        kind: ChangeKind,
    ) -> list[RowChange]:
        """The changes of one required row's full rows (see the module docstring): rows that
        hold the changed element and stay are updates; rows that come or go are paired with
        their null rows as Drasi reports them."""
        old = self._by_required.get(required_key, [])
        old_set = set(old)
        removed = [key for key in old if key not in new]
        added = [key for key in new if key not in old_set]
        result = [RowChange(key, key, new[key]) for key in old if key in new and changed_id in key]
        pairs = _Pairing(removed, added)
        if kind is ChangeKind.INSERT:
            self._pair_inserted(pairs, new, changed_id, result)
        elif kind is ChangeKind.DELETE:
            self._pair_deleted(index, pairs, new, changed_id, result)
        else:
            self._pair_updated(pairs, new, changed_id, result)
        result.extend(RowChange(k, None, None) for k in removed if k not in pairs.taken_removed)
        result.extend(RowChange(None, k, new[k]) for k in added if k not in pairs.taken_added)
        for key in removed:
            self._unregister(key)
        for key in added:
            self._register(key)
        if new:
            self._by_required[required_key] = list(new)
        else:
            self._by_required.pop(required_key, None)
        return result

    def _pair_inserted(
        self, pairs: _Pairing, new: dict[Key, Row], changed_id: str, result: list[RowChange]
    ) -> None:
        """Each new match through the inserted element is an update from its null row."""
        for key in pairs.added:
            blank = self._blank_positions(key, changed_id)
            if blank is None:
                continue
            null_key, null_row = _nulled(key, new[key], blank, self._names)
            result.append(RowChange(null_key, key, new[key], before=null_row))
            pairs.take(null_key, key)

    def _pair_deleted(
        self,
        index: GraphIndex,
        pairs: _Pairing,
        new: dict[Key, Row],
        changed_id: str,
        result: list[RowChange],
    ) -> None:
        """Each match lost with the deleted element is an update to its null row."""
        for key in pairs.removed:
            blank = self._blank_positions(key, changed_id)
            if blank is None:
                continue
            null_key, null_row = _nulled(key, self._row_of(index, key), blank, self._names)
            phantom = null_key not in new
            result.append(RowChange(key, null_key, null_row, phantom=phantom))
            pairs.take(key, null_key)

    def _pair_updated(
        self, pairs: _Pairing, new: dict[Key, Row], changed_id: str, result: list[RowChange]
    ) -> None:
        """Matches an update adds or removes are reported; the null row they replace or bring
        back changes silently."""
        for key in pairs.added:
            blank = self._blank_positions(key, changed_id)
            if blank is not None:
                null_key, _ = _nulled(key, new[key], blank, self._names)
                if null_key in pairs.removed_set and null_key not in pairs.taken_removed:
                    result.append(RowChange(null_key, None, None, silent=True))
                    pairs.taken_removed.add(null_key)
        for key in pairs.removed:
            blank = self._blank_positions(key, changed_id)
            if blank is not None:
                null_key, _ = _nulled(key, None, blank, self._names)
                if null_key in pairs.added_set and null_key not in pairs.taken_added:
                    result.append(RowChange(None, null_key, new[null_key], silent=True))
                    pairs.taken_added.add(null_key)

    def _blank_positions(self, key: Key, changed_id: str) -> frozenset[int] | None:
        """The key positions nulled in ``key``'s null row for a change of ``changed_id``: the
        variables of the first OPTIONAL MATCH clause that binds it, and of the clauses joined
        on them; None when a required variable binds it (no null row then)."""
        if changed_id in key[: self._width]:
            return None
        for positions, blank in self._clause_blanks:
            if any(key[position] == changed_id for position in positions):
                return blank
        return None

    def _row_of(self, index: GraphIndex, key: Key) -> Row:
        """The row of ``key`` read from the index (an element no longer there reads null)."""
        return {
            name: None if element_id is None else index.element(element_id)
            for name, element_id in zip(self._names, key, strict=True)
        }

    # ------------------------------------------------------------------ reverse index

    def _register(self, key: Key) -> None:
        by_element = self._by_element
        for element_id in key:  # an id bound twice is added twice: sets make that a no-op
            if element_id is not None:
                keys = by_element.get(element_id)
                if keys is None:
                    by_element[element_id] = {key}
                else:
                    keys.add(key)

    def _unregister(self, key: Key) -> None:
        for element_id in key:
            if element_id is None:
                continue
            keys = self._by_element.get(element_id)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_element[element_id]


class _Pairing:
    """The removed and added full rows of one required row, and which of them a pairing took."""

    __slots__ = ("added", "added_set", "removed", "removed_set", "taken_added", "taken_removed")

    def __init__(self, removed: list[Key], added: list[Key]) -> None:
        self.removed, self.added = removed, added
        self.removed_set, self.added_set = set(removed), set(added)
        self.taken_removed: set[Key] = set()
        self.taken_added: set[Key] = set()

    def take(self, old: Key, new: Key) -> None:
        if old in self.removed_set:
            self.taken_removed.add(old)
        if new in self.added_set:
            self.taken_added.add(new)


def _clause_blanks(
    optionals: Sequence[_Optional], width: int
) -> list[tuple[tuple[int, ...], frozenset[int]]]:
    """Per OPTIONAL MATCH clause, the key positions of its own variables and the positions its
    null row nulls: its own and those of every later clause joined on them (a clause joined on
    a null variable has its null extension too)."""
    spans: list[tuple[int, ...]] = []
    offset = width
    for optional in optionals:
        spans.append(tuple(range(offset, offset + len(optional.new))))
        offset += len(optional.new)
    names = [set(optional.new_names) for optional in optionals]
    blanks: list[tuple[tuple[int, ...], frozenset[int]]] = []
    for number, span in enumerate(spans):
        nulled, covered = set(span), set(names[number])
        for later in range(number + 1, len(optionals)):
            joined = {optionals[later].pattern.names[i] for i in optionals[later].shared}
            if joined & covered:
                nulled.update(spans[later])
                covered |= names[later]
        blanks.append((span, frozenset(nulled)))
    return blanks


def _nulled(
    key: Key, row: Row | None, positions: frozenset[int], names: Sequence[str]
) -> tuple[Key, Row]:
    """``key`` and ``row`` with the variables at ``positions`` null."""
    null_key = tuple(None if i in positions else part for i, part in enumerate(key))
    null_row = {} if row is None else dict(row)
    for position in positions:
        null_row[names[position]] = None
    return null_key, null_row


def _introduced(clause: ast.MatchClause) -> set[str]:
    names: set[str] = set()
    for path in clause.paths:
        names.update(n.variable for n in path.nodes if n.variable)
        names.update(r.variable for r in path.relations if r.variable)
    return names


def _read(clause: ast.MatchClause) -> set[str]:
    names = _introduced(clause)
    exprs: list[ast.Expr | None] = []  # not clause.where: it filters the row, not the match
    for path in clause.paths:
        for node in path.nodes:
            exprs.extend((node.where, node.properties))
        for relation in path.relations:
            exprs.extend((relation.where, relation.properties))
    for expr in exprs:
        if expr is not None:
            names.update(referenced_variables(expr))
    return names


def _check_clause_order(clauses: Sequence[ast.MatchClause]) -> None:
    """Reject clause orders the incremental matcher does not support (with a clear error)."""
    if not clauses or clauses[0].optional:
        raise UnsupportedQueryError("a query must start with a (non-optional) MATCH", 1, 1)
    optional_names: set[str] = set()
    required_names: set[str] = set()
    for clause in clauses:
        if clause.optional:
            optional_names |= _introduced(clause) - required_names
        else:
            clash = _read(clause) & optional_names
            if clash:
                raise UnsupportedQueryError(
                    f"a MATCH after an OPTIONAL MATCH cannot use its variable '{sorted(clash)[0]}'",
                    1,
                    1,
                )
            required_names |= _introduced(clause)
