"""What Drasi's GQL has: its functions and its constructs, as data for docs/conformance.md.

The function names are those drasi-core's GQL function set registers (``functions-gql``), by
its categories, and the future and past functions core registers for every language.
tests/differential/test_conformance_doc.py checks this list against drasi-lib (every function
here known to it with ``language="gql"``) and against drasi_ray's GQL front end
(:data:`drasi_ray.query.gql.FUNCTIONS`).

Each construct has a sample GQL query, run through both engines when the document is made,
and a pattern: a GQL catalogue query (tests/differential/catalogue_gql.py) whose text matches
it uses the construct (the differential-tested column).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from drasi_ray.query.gql import parse_gql
from tests.differential.drasi_registry import ARCHIVE_ONLY, DrasiFunction


def _functions(category: str, names: str, note: str = "") -> tuple[DrasiFunction, ...]:
    return tuple(DrasiFunction(name, category, note) for name in names.split())


DRASI_GQL_FUNCTIONS: tuple[DrasiFunction, ...] = (
    *_functions("text", "upper lower trim ltrim rtrim reverse left right replace split substring"),
    *_functions("numeric", "abs ceil floor round"),
    *_functions("trigonometric", "cos degrees pi radians sin tan"),
    *_functions("scalar", "char_length size coalesce nullIf last cast"),
    *_functions("list", "reduce"),
    *_functions("metadata", "element_id drasi.changeDateTime"),
    *_functions("Drasi list", "drasi.listMax drasi.listMin drasi.stdevp"),
    *_functions("context", "retainHistory"),
    *_functions("aggregate", "sum avg count min max drasi.linearGradient drasi.last"),
    *_functions("temporal", "date zoned_time local_time zoned_datetime local_datetime"),
    *_functions(
        "duration", "duration_between duration.inMonths duration.inDays duration.inSeconds duration"
    ),
    *_functions(
        "future",
        "drasi.awaiting drasi.future drasi.trueUntil drasi.trueFor drasi.trueLater "
        "drasi.trueNowOrLater drasi.previousValue drasi.previousDistinctValue "
        "drasi.slidingWindow",
    ),
    *_functions("past", "drasi.getVersionByTimestamp drasi.getVersionsByTimeRange", ARCHIVE_ONLY),
)
"""Every function Drasi's GQL knows, by category."""


Detector = Callable[[str], bool]
"""Whether a GQL query's text uses a construct."""


def _matching(pattern: str) -> Detector:
    return lambda text: re.search(pattern, text, re.I) is not None


def _never(text: str) -> bool:
    return False


def _hidden_group_key(text: str) -> bool:
    """A GROUP BY key the RETURN does not show (it gets a part of its own, its column a name
    no query can write)."""
    if not re.search(r"GROUP BY", text, re.I):
        return False
    parts = parse_gql(text).parts
    return any(item.name.startswith("group by key") for p in parts for item in p.projection.items)


@dataclass(frozen=True, slots=True)
class GqlFeature:
    """A GQL construct: its name, a GQL query that uses it, and a detector of its use in a
    catalogue query's text."""

    name: str
    sample: str
    used_by: Detector = _never
    parameters: tuple[tuple[str, object], ...] = ()
    """Parameter values drasi_ray is given with the sample (Drasi has none)."""


GQL_FEATURES: tuple[GqlFeature, ...] = (
    GqlFeature(
        "MATCH ... WHERE", "MATCH (a:A) WHERE a.x > 1 RETURN a.x AS x", _matching(r"\bWHERE\b")
    ),
    GqlFeature(
        "several MATCH clauses, each with its WHERE",
        "MATCH (a:A) WHERE a.x > 0 MATCH (a)-[:R]->(b) WHERE b.x > 1 RETURN b.x AS x",
        _matching(r"MATCH .*WHERE .*MATCH .*WHERE "),
    ),
    GqlFeature(
        "relations and multi-hop chains",
        "MATCH (a:A)-[:R]->(b)<-[:S]-(c) RETURN c.x AS x",
        _matching(r"\]->\(\w*\)-\["),
    ),
    GqlFeature(
        "comma-separated paths",
        "MATCH (a:A)-[:R]->(b), (c:C)-[:S]->(b) RETURN c.x AS x",
        _matching(r"\), \("),
    ),
    GqlFeature(
        "OPTIONAL MATCH",
        "MATCH (a:A) OPTIONAL MATCH (a)-[:R]->(b) RETURN b.x AS x",
        _matching(r"\bOPTIONAL MATCH\b"),
    ),
    GqlFeature(
        "label alternatives `(n:A|B)`", "MATCH (a:A|B) RETURN a.x AS x", _matching(r"\(\w+:\w+\|")
    ),
    GqlFeature("label expression `(n IS A)`", "MATCH (a IS A) RETURN a.x AS x"),
    GqlFeature(
        "inline property map and WHERE `(n:A {k: v})`, `(n:A WHERE ...)`",
        "MATCH (a:A {x: 1})-[r:R WHERE r.w > 0]->(b) RETURN b.x AS x",
        _matching(r"\(\w+:\w+ (\{|WHERE)"),
    ),
    GqlFeature("LET", "MATCH (a:A) LET y = a.x + 1 RETURN y", _matching(r"\bLET\b")),
    GqlFeature(
        "LET of an aggregate",
        "MATCH (a:A) LET n = count(a) RETURN a.x AS x, n",
        _matching(r"\bLET \w+ = (count|sum|avg|min|max)\("),
    ),
    GqlFeature("FILTER", "MATCH (a:A) FILTER a.x > 1 RETURN a.x AS x", _matching(r"\bFILTER\b")),
    GqlFeature("YIELD", "MATCH (a:A) YIELD a, a.x AS x RETURN x", _matching(r"\bYIELD\b")),
    GqlFeature(
        "RETURN ... GROUP BY (every key returned)",
        "MATCH (a:A) RETURN a.g AS g, count(a) AS n GROUP BY g",
        _matching(r"GROUP BY (?!\()"),
    ),
    GqlFeature(
        "GROUP BY a key not returned",
        "MATCH (a:A) RETURN count(a) AS n GROUP BY a.g",
        _hidden_group_key,
    ),
    GqlFeature(
        "GROUP BY ()", "MATCH (a:A) RETURN count(a) AS n GROUP BY ()", _matching(r"GROUP BY \(\)")
    ),
    GqlFeature(
        "NEXT", "MATCH (a:A) RETURN a.x AS x NEXT FILTER x > 0 RETURN x", _matching(r"\bNEXT\b")
    ),
    GqlFeature(
        "CASE",
        "MATCH (a:A) RETURN CASE WHEN a.x > 1 THEN 1 ELSE 0 END AS c",
        _matching(r"\bCASE\b"),
    ),
    GqlFeature(
        "CAST(x AS type)",
        "MATCH (a:A) RETURN CAST(a.x AS STRING) AS s",
        _matching(r"\bCAST\(\S+ AS"),
    ),
    GqlFeature(
        "list comprehension, reduce",
        "MATCH (a:A) RETURN [v IN a.l WHERE v > 1 | v] AS l, reduce(t = 0, v IN a.l | t + v) AS t",
        _matching(r"\[\w+ IN "),
    ),
    GqlFeature(
        "list and map literals, indexing, slices",
        "MATCH (a:A) RETURN [a.x, 1][0] AS f, {k: a.x}['k'] AS k, a.l[0..1] AS s",
        _matching(r"\[0\.\.1\]"),
    ),
    GqlFeature(
        "STARTS WITH / ENDS WITH / CONTAINS, IN, IS NULL",
        "MATCH (a:A) WHERE a.s STARTS WITH 'x' AND a.x IN [1, 2] AND a.z IS NULL RETURN a.s AS s",
        _matching(r"\bSTARTS WITH\b"),
    ),
    GqlFeature(
        "arithmetic `+ - * / % ^`",
        "MATCH (a:A) RETURN a.x + 1 AS p, a.x / 2 AS d, a.x % 2 AS m, a.x ^ 2 AS e",
        _matching(r" % "),
    ),
    GqlFeature(
        "parameters `$name`",
        "MATCH (a:A) WHERE a.x > $min RETURN a.x AS x",
        _never,
        (("min", 0),),
    ),
    GqlFeature("ORDER BY", "MATCH (a:A) RETURN a.x AS x ORDER BY x"),
    GqlFeature("LIMIT / OFFSET", "MATCH (a:A) RETURN a.x AS x LIMIT 1"),
    GqlFeature("RETURN DISTINCT", "MATCH (a:A) RETURN DISTINCT a.x AS x"),
    GqlFeature("count(*)", "MATCH (a:A) RETURN count(*) AS n"),
    GqlFeature("aggregate(DISTINCT x)", "MATCH (a:A) RETURN count(DISTINCT a.x) AS n"),
    GqlFeature("Cypher's WITH", "MATCH (a:A) WITH a RETURN a.x AS x"),
    GqlFeature("XOR", "MATCH (a:A) WHERE a.x = 1 XOR a.y = 1 RETURN a.x AS x"),
    GqlFeature("keywords in mixed case (`Match`)", "Match (a:A) Return a.x AS x"),
    GqlFeature("double-quoted string", 'MATCH (a:A) RETURN "x" AS s'),
    GqlFeature("minus before an expression (`-a.x`)", "MATCH (a:A) RETURN -a.x AS m"),
)
"""The GQL constructs docs/conformance.md lists, in its order."""
