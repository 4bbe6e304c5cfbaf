"""A from-scratch, brute-force evaluator of a query over a whole graph: the test oracle.

It shares nothing with the engine but the parser and the expression compiler: patterns are
matched by trying every assignment of elements to variables, groups are aggregated by
recomputing over all their rows. Slow, obviously right, and only for small graphs.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from drasi_ray.model.changes import Element
from drasi_ray.query import ast
from drasi_ray.query.expressions import compile_expression, compile_predicate, contains_aggregate
from drasi_ray.query.failures import RowDropped
from drasi_ray.query.parser import parse_query
from drasi_ray.query.values import equals, hashable_key, is_number, to_output

Row = dict[str, Any]


def evaluate(text: str, graph: Mapping[str, Element]) -> list[Row]:
    """The result rows of query ``text`` over ``graph`` (element id -> element)."""
    query = parse_query(text)
    rows = _match(query.parts[0].matches, graph)
    for number, part in enumerate(query.parts):
        last = number == len(query.parts) - 1
        rows = _project(part.projection, rows)
        if part.projection.where is not None:
            rows = [row for row in rows if _passes(part.projection.where, row)]
        if last:
            rows = [{k: to_output(v) for k, v in row.items()} for row in rows]
    return rows


def _passes(expr: ast.Expr, row: Mapping[str, Any]) -> bool:
    try:
        return compile_predicate(expr, {})(row) is True
    except RowDropped:
        return False


# --------------------------------------------------------------------------- matching


def _match(clauses: Sequence[ast.MatchClause], graph: Mapping[str, Element]) -> list[Row]:
    rows: list[Row] = [{}]
    for clause in clauses:
        extended: list[Row] = []
        for row in rows:
            found = list(_bindings(clause, row, graph))
            if clause.optional and not found:
                found = [{**row, **dict.fromkeys(_clause_names(clause, row))}]
            extended.extend(found)
        rows = extended
    # Every WHERE filters the whole row, an OPTIONAL MATCH's too (Drasi's grammar).
    wheres = [c.where for c in clauses if c.where is not None]
    return [row for row in rows if all(_passes(w, row) for w in wheres)]


def _slots(clause: ast.MatchClause) -> list[tuple[str, bool]]:
    """(variable name, is_node) for every pattern position; anonymous ones get a name."""
    slots: list[tuple[str, bool]] = []
    for p, path in enumerate(clause.paths):
        for n, node in enumerate(path.nodes):
            slots.append((node.variable or f"_n{p}_{n}", True))
        for r, relation in enumerate(path.relations):
            slots.append((relation.variable or f"_r{p}_{r}", False))
    return slots


def _clause_names(clause: ast.MatchClause, row: Row) -> list[str]:
    return [name for name, _ in _slots(clause) if name not in row and not name.startswith("_")]


def _bindings(clause: ast.MatchClause, row: Row, graph: Mapping[str, Element]) -> Iterator[Row]:
    names: dict[str, bool] = {}
    for name, is_node in _slots(clause):
        names.setdefault(name, is_node)
    free = [name for name in names if name not in row]
    choices = [[e for e in graph.values() if e.is_node is names[name]] for name in free]
    for combination in itertools.product(*choices):
        binding = {**row, **dict(zip(free, combination, strict=True))}
        if _fits(clause, binding):
            yield {k: v for k, v in binding.items() if not k.startswith("_")}


def _fits(clause: ast.MatchClause, binding: Row) -> bool:
    """Whether ``binding`` matches every path of ``clause``. One relation may bind several
    relation variables (Drasi's: no relationship uniqueness)."""
    for p, path in enumerate(clause.paths):
        nodes = [binding[node.variable or f"_n{p}_{n}"] for n, node in enumerate(path.nodes)]
        for node, element in zip(path.nodes, nodes, strict=True):
            if not _element_fits(node, element, binding):
                return False
        for r, relation in enumerate(path.relations):
            element = binding[relation.variable or f"_r{p}_{r}"]
            if not _element_fits(relation, element, binding):
                return False
            if not _connects(relation.direction, element, nodes[r], nodes[r + 1]):
                return False
    return True


def _element_fits(
    pattern: ast.NodePattern | ast.RelationPattern, element: Element | None, binding: Row
) -> bool:
    if element is None:
        return False
    if pattern.labels and not any(label in element.labels for label in pattern.labels):
        return False
    if pattern.properties is not None:
        for key, expr in pattern.properties.items:
            expected = compile_expression(expr, {})(binding)
            if not equals(element.properties.get(key), expected):
                return False
    return pattern.where is None or _passes(pattern.where, binding)


def _connects(direction: ast.Direction, relation: Element, left: Element, right: Element) -> bool:
    forward = relation.start_id == left.id and relation.end_id == right.id
    backward = relation.start_id == right.id and relation.end_id == left.id
    if direction is ast.Direction.OUT:
        return forward
    if direction is ast.Direction.IN:
        return backward
    return forward or backward


# --------------------------------------------------------------------------- projection


def _project(projection: ast.Projection, rows: list[Row]) -> list[Row]:
    items = projection.items
    if not any(contains_aggregate(i.expression) for i in items):
        out = []
        for row in rows:
            with contextlib.suppress(RowDropped):
                out.append({i.name: compile_expression(i.expression, {})(row) for i in items})
        return out
    keys = [i for i in items if not contains_aggregate(i.expression)]
    groups: dict[Any, list[Row]] = {}
    for row in rows:
        values = tuple(compile_expression(i.expression, {})(row) for i in keys)
        groups.setdefault(tuple(map(hashable_key, values)), []).append(row)
    out = []
    for members in groups.values():
        result = {i.name: compile_expression(i.expression, {})(members[0]) for i in keys}
        for item in items:
            if contains_aggregate(item.expression):
                assert isinstance(item.expression, ast.FunctionCall)
                result[item.name] = _aggregate(item.expression, members)
        out.append({i.name: result[i.name] for i in items})
    return out


def _aggregate(call: ast.FunctionCall, rows: list[Row]) -> Any:
    argument = compile_expression(call.args[0], {})
    values = [v for v in (argument(row) for row in rows) if v is not None]
    if call.distinct:
        unique: dict[Any, Any] = {}
        for value in values:
            unique.setdefault(hashable_key(value), value)
        values = list(unique.values())
    if call.name == "count":
        return len(values)
    if call.name == "sum":
        return float(sum(values))
    if call.name == "avg":
        return float(sum(values)) / len(values) if values else 0.0
    if call.name in ("min", "max"):
        if not values:
            return None
        pick = min(values) if call.name == "min" else max(values)
        return float(pick) if is_number(pick) else pick
    if call.name == "collect":
        return values
    raise AssertionError(call.name)


def identity(call_name: str) -> Any:
    return {"count": 0, "sum": 0.0, "avg": 0.0, "min": None, "max": None, "collect": []}[call_name]
