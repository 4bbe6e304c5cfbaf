"""What Drasi's Cypher has: its functions and its clauses, as data for docs/conformance.md.

The function names are those drasi-core registers (``functions-cypher``'s default set, and the
future and past functions core registers itself; ../shared/DRASI-REFERENCE.md §1.4), by the
category the reference gives them. tests/differential/test_conformance_doc.py checks this list
against drasi-lib: every function here must be known to it (past functions only with an
archive index: a RocksDB index store with ``enable_archive``).

Each language feature has a sample query, run through both engines when the document is made
(Drasi's and drasi_ray's columns are what they did with it), and a detector that says whether
a catalogue query uses the feature (the differential-tested column).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from drasi_ray.query import ast
from drasi_ray.query.expressions import contains_aggregate, walk

ARCHIVE_ONLY = "needs an archive index"


@dataclass(frozen=True, slots=True)
class DrasiFunction:
    name: str
    category: str
    note: str = ""


def _functions(category: str, names: str, note: str = "") -> tuple[DrasiFunction, ...]:
    return tuple(DrasiFunction(name, category, note) for name in names.split())


def _temporal(kind: str) -> str:
    return " ".join([kind] + [f"{kind}.{clock}" for clock in DRASI_CLOCKS])


DRASI_CLOCKS = ("statement", "transaction", "realtime", "truncate")

DRASI_FUNCTIONS: tuple[DrasiFunction, ...] = (
    *_functions(
        "text",
        "toUpper toLower trim ltrim rtrim reverse left right replace split substring toString "
        "toStringOrNull randomUUID",
    ),
    *_functions("numeric", "abs ceil floor rand round sign"),
    *_functions("trigonometric", "cos degrees pi radians sin tan"),
    *_functions(
        "scalar",
        "char_length character_length size toInteger toIntegerOrNull toFloat toFloatOrNull "
        "toBoolean toBooleanOrNull coalesce nullIf isEmpty head last timestamp",
    ),
    *_functions("list", "reduce tail range coll.distinct coll.indexOf coll.insert"),
    *_functions("metadata", "elementId drasi.changeDateTime"),
    *_functions("Drasi list", "drasi.listMax drasi.listMin drasi.stdevp"),
    *_functions("context", "retainHistory"),
    *_functions("aggregate", "count sum avg min max collect drasi.linearGradient drasi.last"),
    *_functions(
        "temporal",
        " ".join(_temporal(kind) for kind in ("date", "localtime", "localdatetime", "time"))
        + " "
        + _temporal("datetime"),
    ),
    *_functions(
        "duration", "duration duration.between duration.inMonths duration.inDays duration.inSeconds"
    ),
    *_functions(
        "future",
        "drasi.awaiting drasi.future drasi.trueUntil drasi.trueFor drasi.trueLater "
        "drasi.trueNowOrLater drasi.previousValue drasi.previousDistinctValue "
        "drasi.slidingWindow",
    ),
    *_functions("past", "drasi.getVersionByTimestamp drasi.getVersionsByTimeRange", ARCHIVE_ONLY),
)
"""Every function Drasi registers, by category."""


# --------------------------------------------------------------------------- clauses

Detector = Callable[[ast.Query], bool]


@dataclass(frozen=True, slots=True)
class Feature:
    """A language feature: its name, a query that uses it, and a detector of its use."""

    name: str
    sample: str
    used_by: Detector
    parameters: tuple[tuple[str, object], ...] = ()
    """Parameter values drasi_ray is given with the sample (Drasi has none)."""


def _clauses(query: ast.Query) -> list[ast.MatchClause]:
    return [clause for part in query.parts for clause in part.matches]


def _paths(query: ast.Query) -> list[ast.PathPattern]:
    return [path for clause in _clauses(query) for path in clause.paths]


def _relations(query: ast.Query) -> list[ast.RelationPattern]:
    return [relation for path in _paths(query) for relation in path.relations]


def _nodes(query: ast.Query) -> list[ast.NodePattern]:
    return [node for path in _paths(query) for node in path.nodes]


def _expressions(query: ast.Query) -> list[ast.Expr]:
    found: list[ast.Expr] = []
    for part in query.parts:
        for clause in part.matches:
            if clause.where is not None:
                found.append(clause.where)
        found.extend(item.expression for item in part.projection.items)
        if part.projection.where is not None:
            found.append(part.projection.where)
    return [node for expr in found for node in walk(expr)]


def _has(kind: type) -> Detector:
    return lambda query: any(isinstance(node, kind) for node in _expressions(query))


def _binary(*ops: ast.BinaryOp) -> Detector:
    return lambda query: any(
        isinstance(node, ast.Binary) and node.op in ops for node in _expressions(query)
    )


def _aggregating_with(query: ast.Query) -> bool:
    return any(
        contains_aggregate(item.expression)
        for part in query.parts[:-1]
        for item in part.projection.items
    )


def _chained_optional(query: ast.Query) -> bool:
    optional = [clause for clause in _clauses(query) if clause.optional]
    return len(optional) > 1


_OPS = ast.BinaryOp

FEATURES: tuple[Feature, ...] = (
    Feature("MATCH with a labelled node", "MATCH (a:A) RETURN a.x AS x", lambda q: True),
    Feature(
        "label alternatives `(n:A|B)`",
        "MATCH (a:A|B) RETURN a.x AS x",
        lambda q: any(len(n.labels) > 1 for n in _nodes(q)),
    ),
    Feature(
        "node without a label",
        "MATCH (a) RETURN a.x AS x",
        lambda q: any(not n.labels for n in _nodes(q)),
    ),
    Feature(
        "inline property map `(n:A {k: v})`",
        "MATCH (a:A {x: 1}) RETURN a.y AS y",
        lambda q: (
            any(n.properties is not None for n in _nodes(q))
            or any(r.properties is not None for r in _relations(q))
        ),
    ),
    Feature(
        "inline WHERE `(n:A WHERE ...)`",
        "MATCH (a:A WHERE a.x > 1) RETURN a.x AS x",
        lambda q: any(n.where is not None for n in _nodes(q)),
    ),
    Feature(
        "relation `-[r:R]->` / `<-[r:R]-`",
        "MATCH (a:A)-[r:R]->(b) RETURN r.w AS w",
        lambda q: any(r.direction is not ast.Direction.BOTH for r in _relations(q)),
    ),
    Feature(
        "undirected relation `-[r:R]-`",
        "MATCH (a:A)-[r:R]-(b) RETURN r.w AS w",
        lambda q: any(r.direction is ast.Direction.BOTH for r in _relations(q)),
    ),
    Feature(
        "relation without a label or variable `-[]->`",
        "MATCH (a:A)-[]->(b) RETURN b.x AS x",
        lambda q: any(not r.labels for r in _relations(q)),
    ),
    Feature(
        "multi-hop chain",
        "MATCH (a:A)-[:R]->(b)-[:S]->(c) RETURN c.x AS x",
        lambda q: any(len(p.relations) > 1 for p in _paths(q)),
    ),
    Feature(
        "comma-separated paths",
        "MATCH (a:A)-[:R]->(b), (c:C)-[:S]->(b) RETURN c.x AS x",
        lambda q: any(len(c.paths) > 1 for c in _clauses(q)),
    ),
    Feature(
        "several MATCH clauses",
        "MATCH (a:A)-[:R]->(b) MATCH (b)-[:S]->(c) RETURN c.x AS x",
        lambda q: sum(not c.optional for c in _clauses(q)) > 1,
    ),
    Feature(
        "variable-length relation `-[*1..3]->`",
        "MATCH (a:A)-[*1..3]->(b) RETURN b.x AS x",
        lambda q: False,
    ),
    Feature(
        "OPTIONAL MATCH",
        "MATCH (a:A) OPTIONAL MATCH (a)-[:R]->(b) RETURN b.x AS x",
        lambda q: any(c.optional for c in _clauses(q)),
    ),
    Feature(
        "chained OPTIONAL MATCH",
        "MATCH (a:A) OPTIONAL MATCH (a)-[:R]->(b) OPTIONAL MATCH (b)-[:S]->(c) RETURN c.x AS x",
        _chained_optional,
    ),
    Feature(
        "WHERE",
        "MATCH (a:A) WHERE a.x > 1 RETURN a.x AS x",
        lambda q: any(c.where is not None for c in _clauses(q)),
    ),
    Feature(
        "WITH (projection)",
        "MATCH (a:A) WITH a.x AS x RETURN x",
        lambda q: len(q.parts) > 1,
    ),
    Feature(
        "WITH ... WHERE",
        "MATCH (a:A) WITH a.x AS x WHERE x > 1 RETURN x",
        lambda q: any(p.projection.where is not None for p in q.parts[:-1]),
    ),
    Feature(
        "aggregating WITH",
        "MATCH (a:A) WITH a.g AS g, count(a) AS n RETURN g, n",
        _aggregating_with,
    ),
    Feature("MATCH after WITH", "MATCH (a:A) WITH a MATCH (b:B) RETURN b.x AS x", lambda q: False),
    Feature("RETURN ... AS", "MATCH (a:A) RETURN a.x AS x", lambda q: True),
    Feature("CASE", "MATCH (a:A) RETURN CASE WHEN a.x > 1 THEN 1 ELSE 0 END AS c", _has(ast.Case)),
    Feature(
        "list comprehension",
        "MATCH (a:A) RETURN [v IN a.l WHERE v > 1 | v * 2] AS l",
        _has(ast.ListComprehension),
    ),
    Feature("reduce", "MATCH (a:A) RETURN reduce(t = 0, v IN a.l | t + v) AS t", _has(ast.Reduce)),
    Feature(
        "list and map literals, indexing",
        "MATCH (a:A) RETURN [a.x, 1][0] AS f, {k: a.x}['k'] AS k",
        _has(ast.Index),
    ),
    Feature("list slice", "MATCH (a:A) RETURN a.l[0..2] AS s", _has(ast.Slice)),
    Feature("IN", "MATCH (a:A) WHERE a.x IN [1, 2] RETURN a.x AS x", _binary(_OPS.IN)),
    Feature(
        "STARTS WITH / ENDS WITH / CONTAINS",
        "MATCH (a:A) WHERE a.s STARTS WITH 'x' RETURN a.s AS s",
        _binary(_OPS.STARTS_WITH, _OPS.ENDS_WITH, _OPS.CONTAINS),
    ),
    Feature(
        "IS NULL / IS NOT NULL", "MATCH (a:A) WHERE a.x IS NULL RETURN a.y AS y", _has(ast.IsNull)
    ),
    Feature(
        "arithmetic `+ - * / % ^`",
        "MATCH (a:A) RETURN a.x + 1 AS p, a.x % 2 AS m, a.x ^ 2 AS e",
        _binary(_OPS.ADD, _OPS.SUB, _OPS.MUL, _OPS.DIV, _OPS.MOD, _OPS.POW),
    ),
    Feature(
        "`=` / `<>` / `<` ...",
        "MATCH (a:A) WHERE a.x <> 1 RETURN a.x AS x",
        _binary(_OPS.EQ, _OPS.NE, _OPS.LT, _OPS.LE, _OPS.GT, _OPS.GE),
    ),
    Feature(
        "AND / OR / NOT",
        "MATCH (a:A) WHERE NOT a.f OR a.x > 1 RETURN a.x AS x",
        _binary(_OPS.AND, _OPS.OR),
    ),
    Feature(
        "parameters `$name`",
        "MATCH (a:A) WHERE a.x > $min RETURN a.x AS x",
        _has(ast.Parameter),
        (("min", 0),),
    ),
    Feature("ORDER BY", "MATCH (a:A) RETURN a.x AS x ORDER BY x", lambda q: False),
    Feature("LIMIT", "MATCH (a:A) RETURN a.x AS x LIMIT 1", lambda q: False),
    Feature("DISTINCT", "MATCH (a:A) RETURN DISTINCT a.x AS x", lambda q: False),
    Feature("UNWIND", "UNWIND [1, 2] AS x MATCH (a:A) RETURN x", lambda q: False),
    Feature("count(*)", "MATCH (a:A) RETURN count(*) AS n", lambda q: False),
    Feature(
        "aggregate(DISTINCT x)",
        "MATCH (a:A) RETURN count(DISTINCT a.x) AS n",
        lambda q: any(
            isinstance(node, ast.FunctionCall) and node.distinct for node in _expressions(q)
        ),
    ),
    Feature(
        "regular expression `=~`", "MATCH (a:A) WHERE a.s =~ 'x.*' RETURN a.s AS s", lambda q: False
    ),
)
"""The language features docs/conformance.md lists, in its order."""
