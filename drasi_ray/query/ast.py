"""Typed, immutable AST of drasi_ray's Cypher subset (docs/semantics.md §3).

The parser (:mod:`drasi_ray.query.parser`) produces these nodes; the expression compiler
(:mod:`drasi_ray.query.expressions`) and the incremental engine (:mod:`drasi_ray.query.engine`)
consume them. Nothing here evaluates anything.

Conventions:
- Every node is a frozen, slotted dataclass; sequences are tuples.
- Function names are stored lower-cased with their namespace (``"tolower"``,
  ``"drasi.changedatetime"``); Cypher function names are case-insensitive.
- Binary operators are stored by the canonical spelling in :class:`BinaryOp`.
- Column names of projections are resolved by the parser (alias, else property key, else
  identifier, else function name), so the engine never re-derives them.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias


@dataclass(frozen=True, slots=True)
class Position:
    """1-based line and column of a node in the query text (for error messages)."""

    line: int
    column: int


# --------------------------------------------------------------------------- expressions


@dataclass(frozen=True, slots=True)
class Literal:
    """int, float, str, bool or None."""

    value: Any


@dataclass(frozen=True, slots=True)
class Parameter:
    """``$name``: bound from the query's parameters when it is registered."""

    name: str


@dataclass(frozen=True, slots=True)
class Variable:
    name: str


@dataclass(frozen=True, slots=True)
class PropertyAccess:
    """``subject.key``; chains nest: ``n.a.b`` is PropertyAccess(PropertyAccess(n, a), b)."""

    subject: Expr
    key: str


@dataclass(frozen=True, slots=True)
class Index:
    """``subject[index]`` on a list (int index, negative from the end) or a map (string key)."""

    subject: Expr
    index: Expr


@dataclass(frozen=True, slots=True)
class Slice:
    """``subject[start..end]`` on a list; either bound may be omitted."""

    subject: Expr
    start: Expr | None
    end: Expr | None


@dataclass(frozen=True, slots=True)
class ListLiteral:
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class MapLiteral:
    items: tuple[tuple[str, Expr], ...]


class UnaryOp(str, enum.Enum):
    NOT = "NOT"
    NEGATE = "-"
    PLUS = "+"


@dataclass(frozen=True, slots=True)
class Unary:
    op: UnaryOp
    operand: Expr


class BinaryOp(str, enum.Enum):
    AND = "AND"
    OR = "OR"
    XOR = "XOR"
    EQ = "="
    NE = "<>"  # `!=` parses to this too
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"
    MOD = "%"
    POW = "^"
    IN = "IN"
    STARTS_WITH = "STARTS WITH"
    ENDS_WITH = "ENDS WITH"
    CONTAINS = "CONTAINS"


@dataclass(frozen=True, slots=True)
class Binary:
    op: BinaryOp
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class IsNull:
    """``operand IS NULL`` (``negated=False``) or ``operand IS NOT NULL`` (``negated=True``)."""

    operand: Expr
    negated: bool


@dataclass(frozen=True, slots=True)
class FunctionCall:
    """A scalar or aggregate function call. ``name`` is lower-cased, with namespace."""

    name: str
    args: tuple[Expr, ...]
    distinct: bool = False


@dataclass(frozen=True, slots=True)
class CaseWhen:
    when: Expr
    then: Expr


@dataclass(frozen=True, slots=True)
class Case:
    """``CASE [subject] WHEN .. THEN .. [ELSE ..] END``; ``subject`` None = searched form."""

    subject: Expr | None
    whens: tuple[CaseWhen, ...]
    default: Expr | None


@dataclass(frozen=True, slots=True)
class ListComprehension:
    """``[variable IN source WHERE predicate | projection]`` (predicate/projection optional)."""

    variable: str
    source: Expr
    predicate: Expr | None
    projection: Expr | None


@dataclass(frozen=True, slots=True)
class Reduce:
    """``reduce(accumulator = init, variable IN source | expression)``."""

    accumulator: str
    init: Expr
    variable: str
    source: Expr
    expression: Expr


Expr: TypeAlias = (
    Literal
    | Parameter
    | Variable
    | PropertyAccess
    | Index
    | Slice
    | ListLiteral
    | MapLiteral
    | Unary
    | Binary
    | IsNull
    | FunctionCall
    | Case
    | ListComprehension
    | Reduce
)

AGGREGATE_FUNCTIONS = frozenset(
    {"count", "sum", "avg", "min", "max", "collect", "drasi.lineargradient", "drasi.last"}
)
"""Names of the aggregate functions (lower-case). A projection using one is aggregating."""


# --------------------------------------------------------------------------- patterns


class Direction(str, enum.Enum):
    """Direction of a relation pattern as written, read left to right.

    OUT ``(a)-[r]->(b)``: a is the relation's start, b its end.
    IN ``(a)<-[r]-(b)``: b is the start, a the end.
    BOTH ``(a)-[r]-(b)``: either way round.
    """

    OUT = "->"
    IN = "<-"
    BOTH = "-"


@dataclass(frozen=True, slots=True)
class NodePattern:
    """``(variable:A|B {k: v} WHERE ...)``; every part optional. ``labels`` are alternatives."""

    variable: str | None
    labels: tuple[str, ...] = ()
    properties: MapLiteral | None = None
    where: Expr | None = None


@dataclass(frozen=True, slots=True)
class RelationPattern:
    """``-[variable:T|U {k: v} WHERE ...]->``; ``labels`` are alternatives."""

    variable: str | None
    labels: tuple[str, ...] = ()
    direction: Direction = Direction.OUT
    properties: MapLiteral | None = None
    where: Expr | None = None


@dataclass(frozen=True, slots=True)
class PathPattern:
    """A chain ``node (relation node)*``: ``len(nodes) == len(relations) + 1``.

    ``relations[i]`` connects ``nodes[i]`` and ``nodes[i + 1]``.
    """

    nodes: tuple[NodePattern, ...]
    relations: tuple[RelationPattern, ...] = ()


@dataclass(frozen=True, slots=True)
class MatchClause:
    """``[OPTIONAL] MATCH path, path, ... [WHERE predicate]``."""

    paths: tuple[PathPattern, ...]
    optional: bool = False
    where: Expr | None = None


# --------------------------------------------------------------------------- projections


@dataclass(frozen=True, slots=True)
class ProjectionItem:
    """One column: ``expression [AS alias]``; ``name`` is the resolved column name."""

    expression: Expr
    name: str


@dataclass(frozen=True, slots=True)
class Projection:
    """A WITH or RETURN list. ``where`` is the WHERE after a WITH (None for RETURN)."""

    items: tuple[ProjectionItem, ...]
    where: Expr | None = None


@dataclass(frozen=True, slots=True)
class QueryPart:
    """The clauses up to and including one WITH (or the final RETURN).

    ``matches`` are the MATCH / OPTIONAL MATCH clauses of this part (only the first part of
    most queries has any); ``projection`` is its WITH or RETURN.
    """

    matches: tuple[MatchClause, ...]
    projection: Projection


@dataclass(frozen=True, slots=True)
class Query:
    """A whole continuous query: one or more parts, the last ending in RETURN."""

    parts: tuple[QueryPart, ...]
    text: str = ""

    @property
    def returns(self) -> Projection:
        return self.parts[-1].projection


def conjunction(exprs: Sequence[Expr]) -> Expr | None:
    """``e1 AND e2 AND ...`` (left-nested) or None when there is nothing to check."""
    result: Expr | None = None
    for expr in exprs:
        result = expr if result is None else Binary(BinaryOp.AND, result, expr)
    return result
