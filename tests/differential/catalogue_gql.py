"""The GQL queries the differential test runs through both engines (``language="gql"``).

Like the Cypher catalogue (tests/differential/catalogue.py, whose graphs and rules these
share): every query is one Drasi's GQL accepts and runs on the generated graphs, clear of what
Drasi gets wrong there. Together they cover GQL as Drasi has it: MATCH with WHERE, LET,
FILTER, YIELD, RETURN ... GROUP BY (keys shown, hidden, ``()``), NEXT, OPTIONAL MATCH, CASE,
CAST, label alternatives, and the functions of Drasi's GQL set (``upper``, ``element_id``,
``zoned_datetime``, ``duration_between``...).

Most queries have a **Cypher twin**: a Cypher query of the same meaning (often a query of the
Cypher catalogue), whose output must be the GQL query's, change for change
(tests/differential/test_gql_differential.py compares them through drasi_ray; Drasi's GQL
output is compared with drasi_ray's). A twin of ``None``: GQL has no Cypher counterpart
worth comparing (the comparison with Drasi still runs).
Ids are stable: reports and docs name them.
"""

from __future__ import annotations

from collections.abc import Mapping

from tests.differential.catalogue import CATALOGUE
from tests.oracle.model import QuerySpec

_CYPHER = {query.id: query.text for query in CATALOGUE}


def _same(query_id: str) -> tuple[str, str, str]:
    """A Cypher catalogue query that GQL writes the same way: its own twin."""
    return (query_id, _CYPHER[query_id], _CYPHER[query_id])


def _twin(query_id: str, gql: str) -> tuple[str, str, str]:
    """The GQL version of Cypher catalogue query ``query_id``."""
    return (query_id, gql, _CYPHER[query_id])


_QUERIES: tuple[tuple[str, str, str | None], ...] = (
    # ------------------------------------------------------------------ MATCH, WHERE
    _same("node_properties"),
    _same("nested_values"),
    _same("where_greater"),
    _same("where_and_or"),
    _same("where_not"),
    _same("where_is_null"),
    _same("where_in_list"),
    _same("where_in_property"),
    _same("where_string_operators"),
    _twin("where_several", "MATCH (a:A) WHERE a.x > 0 FILTER a.y > 0 RETURN a.name AS name"),
    _same("inline_map"),
    _same("inline_where"),
    _twin("label_alternatives", "MATCH (n:A|C) RETURN element_id(n) AS id, n.name AS name"),
    _same("lower_case_keywords"),
    _same("backticks_comment"),
    (
        "unaliased_columns",
        "MATCH (a:A) RETURN a.name, a.x, element_id(a), upper(a.s)",
        None,
    ),
    # ------------------------------------------------------------------ expressions
    _same("arithmetic"),
    _same("power"),
    _same("division"),
    _same("comparison_values"),
    _same("concatenation"),
    _same("case_searched"),
    _same("case_simple"),
    _same("case_no_else"),
    _same("list_comprehension"),
    _same("reduce"),
    _same("literals"),
    _same("indexing"),
    _same("slices"),
    # ------------------------------------------------------------------ functions
    _twin(
        "text_functions",
        "MATCH (a:A) RETURN a.s AS s, upper(a.s) AS upper, lower(a.s) AS lower, "
        "trim(a.s) AS trimmed, ltrim(a.s) AS lt, rtrim(a.s) AS rt, reverse(a.s) AS rev",
    ),
    _twin(
        "text_functions_2",
        "MATCH (a:B) RETURN a.s AS s, left(a.s, 2) AS l2, right(a.s, 2) AS r2, "
        "replace(a.s, 'a', 'o') AS replaced, split(a.s, ',') AS parts, "
        "CAST(a.x AS STRING) AS xs",
    ),
    _same("substring"),
    (
        "numeric_functions",
        "MATCH (a:A) RETURN a.x AS x, abs(a.x) AS abs, ceil(a.x) AS ceil, floor(a.x) AS floor, "
        "round(a.x) AS round",
        "MATCH (a:A) RETURN a.x AS x, abs(a.x) AS abs, ceil(a.x) AS ceil, floor(a.x) AS floor, "
        "round(a.x) AS round",
    ),
    (
        "scalar_functions",
        "MATCH (a:B) RETURN a.l AS l, size(a.l) AS n, size(a.s) AS len, "
        "char_length(a.s) AS cl, last(a.l) AS last",
        "MATCH (a:B) RETURN a.l AS l, size(a.l) AS n, size(a.s) AS len, "
        "char_length(a.s) AS cl, last(a.l) AS last",
    ),
    _same("null_functions"),
    (
        "casts",
        "MATCH (a:C) RETURN a.x AS x, CAST(a.x AS INTEGER) AS i, CAST(a.x AS FLOAT) AS f, "
        "CAST(a.flag AS STRING) AS fs, cast(a.flag AS BOOLEAN) AS b, cast(a.y, 'int') AS yi",
        "MATCH (a:C) RETURN a.x AS x, toInteger(a.x) AS i, toFloat(a.x) AS f, "
        "toString(a.flag) AS fs, toBoolean(a.flag) AS b, toInteger(a.y) AS yi",
    ),
    _twin(
        "element_id",
        "MATCH (a:A)-[r:R]->(b) RETURN element_id(a) AS a, element_id(r) AS r",
    ),
    _same("change_date_time"),
    _twin(
        "stdevp",
        "MATCH (a:C) LET l = [v IN a.l WHERE v IS NOT NULL] FILTER size(l) > 0 "
        "RETURN l, drasi.stdevp(l) AS sd",
    ),
    _same("pi"),
    _same("trigonometry"),
    _same("list_max_min"),
    _twin(
        "datetime_epoch",
        "MATCH (a:A) RETURN a.name AS name, zoned_datetime({epochSeconds: a.ts}) AS at, "
        "zoned_datetime({epochSeconds: a.ts}).year AS year, "
        "zoned_datetime({epochSeconds: a.ts}).ordinalDay AS day",
    ),
    _twin(
        "temporal_literals",
        "MATCH (a:C) RETURN a.name AS name, date('2024-01-02') AS d, "
        "local_datetime('2024-01-02T10:00:00') AS ldt, local_time('10:00:00.500') AS lt, "
        "date('2024-03-01').month AS month",
    ),
    _twin(
        "durations",
        "MATCH (a:A)-[:R]->(b) RETURN element_id(a) AS a, element_id(b) AS b, "
        "duration.inDays(zoned_datetime({epochSeconds: a.ts}), "
        "zoned_datetime({epochSeconds: b.ts})).days AS days, duration({days: 2}) AS two",
    ),
    _twin(
        "temporal_functions",
        "MATCH (a:C) RETURN zoned_time('10:00:00+01:00') AS t, "
        "duration_between(date('2024-01-01'), date('2024-03-01')) AS between, "
        "duration.inMonths(date('2024-01-01'), date('2024-03-15')).months AS months, "
        "duration.inSeconds(zoned_datetime({epochSeconds: a.ts}), "
        "zoned_datetime({epochSeconds: a.ts + 90})).seconds AS seconds",
    ),
    # ------------------------------------------------------------------ patterns
    _same("one_hop"),
    _twin("one_hop_left", "MATCH (a:A)<-[r:R]-(b) RETURN element_id(a) AS a, element_id(b) AS b"),
    _twin(
        "undirected",
        "MATCH (a:A)-[r:S]-(c:C) RETURN element_id(a) AS a, element_id(c) AS c, r.kind AS kind",
    ),
    _twin(
        "anonymous_relation", "MATCH (a:B)-[]->(b) RETURN element_id(a) AS a, element_id(b) AS b"
    ),
    _twin(
        "relation_inline_map",
        "MATCH (a)-[r:R {kind: 'fast'}]->(b:A) RETURN element_id(a) AS a, r.w AS w",
    ),
    _twin(
        "two_hops",
        "MATCH (a:A)-[:R]->(b)-[:S]->(c) RETURN element_id(a) AS a, element_id(b) AS b, "
        "element_id(c) AS c",
    ),
    _twin(
        "two_paths",
        "MATCH (a:A)-[:R]->(b), (c:C)-[:S]->(b) RETURN element_id(a) AS a, element_id(b) AS b, "
        "element_id(c) AS c",
    ),
    _twin(
        "two_match_clauses",
        "MATCH (a:A)-[:R]->(b) MATCH (b)-[:R]->(c:B) WHERE element_id(a) <> element_id(c) "
        "RETURN element_id(a) AS a, element_id(c) AS c, b.name AS via",
    ),
    (
        "two_match_wheres",
        "MATCH (a:A) WHERE a.x > 0 MATCH (a)-[:R]->(b) WHERE b.x > 1 "
        "RETURN element_id(a) AS a, element_id(b) AS b",
        "MATCH (a:A) WHERE a.x > 0 MATCH (a)-[:R]->(b) WHERE b.x > 1 "
        "RETURN elementId(a) AS a, elementId(b) AS b",
    ),
    # ------------------------------------------------------------------ aggregates, GROUP BY
    _same("count_by_flag"),
    (
        "group_by_shown_key",
        "MATCH (a:A) RETURN a.flag AS flag, count(a) AS n GROUP BY flag",
        _CYPHER["count_by_flag"],
    ),
    (
        "group_by_unaliased_key",
        "MATCH (a:A)-[:R]->(b) RETURN b.name, count(a) AS n GROUP BY b.name",
        "MATCH (a:A)-[:R]->(b) RETURN b.name, count(a) AS n",
    ),
    (
        "group_by_hidden_key",
        "MATCH (a:A) RETURN count(a) AS n, sum(a.y) AS ys GROUP BY a.flag",
        "MATCH (a:A) WITH a.flag AS flag, count(a) AS n, sum(a.y) AS ys RETURN n, ys",
    ),
    (
        "group_by_let_key",
        "MATCH (a:A) LET big = a.x > 2 RETURN big, count(a) AS n GROUP BY big, a.flag",
        "MATCH (a:A) WITH a, a.x > 2 AS big WITH big, a.flag AS flag, count(a) AS n RETURN big, n",
    ),
    (
        "group_by_nothing",
        "MATCH (n:C) RETURN count(n.x) AS xs, count(n) AS nodes, sum(n.y) AS ys GROUP BY ()",
        _CYPHER["count_values"],
    ),
    _same("sum_avg_by_name"),
    _same("min_max"),
    _same("min_max_grouped"),
    _twin(
        "relation_aggregates",
        "MATCH (a:A)-[r:R]->(b) "
        "RETURN element_id(a) AS a, count(r) AS out, sum(r.w) AS weight, "
        "avg(coalesce(r.w, 1)) AS mean GROUP BY a",
    ),
    _same("aggregate_expression"),
    _same("max_change_time"),
    _same("retain_history"),
    _same("group_by_number"),
    _same("group_by_list"),
    # ------------------------------------------------------------------ LET, FILTER, YIELD, NEXT
    _twin(
        "with_projection",
        "MATCH (a:A) YIELD a.name AS name, a.x * 2 AS x2 FILTER x2 > 2 RETURN name, x2",
    ),
    _twin("with_element", "MATCH (a:A) FILTER a.x > 1 RETURN a.name AS name"),
    _twin(
        "with_chain",
        "MATCH (a:A) LET x = a.x LET y = x + 1 FILTER y > 2 RETURN a.name AS name, y",
    ),
    _twin(
        "aggregating_with",
        "MATCH (a:A) RETURN a.flag AS f, avg(coalesce(a.x, 0.5)) AS ax NEXT RETURN f, ax",
    ),
    _twin(
        "aggregating_with_where",
        "MATCH (a:A) RETURN a.flag AS f, count(a) AS n GROUP BY f NEXT FILTER n > 1 RETURN f, n",
    ),
    _twin(
        "aggregate_of_aggregate",
        "MATCH (a:A) RETURN a.s AS s, count(a) AS n "
        "NEXT RETURN sum(n) AS total, count(s) AS groups",
    ),
    _twin(
        "comfort_style",
        "MATCH (r:A)-[:R]->(f:B) LET level = floor(50 + coalesce(r.x, 1)) "
        "RETURN element_id(f) AS id, avg(level) AS comfort",
    ),
    _twin(
        "two_level_aggregation",
        "MATCH (a:A)-[:R]->(b)-[:S]->(c) YIELD c, b, avg(coalesce(a.x, 1)) AS bx "
        "YIELD c, max(bx) AS top RETURN element_id(c) AS id, top",
    ),
    _twin(
        "with_group_filter",
        "MATCH (a:A)-[:R]->(b) YIELD element_id(b) AS id, count(a) AS n, sum(a.x) AS total "
        "FILTER n >= 1 RETURN id, n, total",
    ),
    (
        "let_aggregate",
        "MATCH (a:A) LET n = count(a), t = sum(a.y) RETURN a.name AS name, n, t",
        "MATCH (a:A) WITH a, count(a) AS n, sum(a.y) AS t RETURN a.name AS name, n, t",
    ),
    (
        "let_rebinds",
        "MATCH (a:A) LET x = a.x LET x = coalesce(x, 0) * 2 RETURN a.name AS name, x",
        "MATCH (a:A) RETURN a.name AS name, coalesce(a.x, 0) * 2 AS x",
    ),
    (
        "filter_then_let",
        "MATCH (a:A)-[:R]->(b) WHERE a.x IS NOT NULL FILTER b.x IS NOT NULL "
        "LET d = a.x - b.x YIELD a, d FILTER d > 0 RETURN a.name AS name, d",
        "MATCH (a:A)-[:R]->(b) WHERE a.x IS NOT NULL AND b.x IS NOT NULL "
        "WITH a, a.x - b.x AS d WHERE d > 0 RETURN a.name AS name, d",
    ),
    (
        "next_let",
        "MATCH (a:B) RETURN a.name AS name, a.y AS y NEXT LET z = y * 10 FILTER z > 0 "
        "RETURN name, z",
        "MATCH (a:B) WITH a.name AS name, a.y AS y WITH name, y * 10 AS z WHERE z > 0 "
        "RETURN name, z",
    ),
    (
        "next_group_by",
        "MATCH (a:A)-[r:R]->(b) RETURN b.name AS target, r.w AS w "
        "NEXT RETURN target, count(w) AS n, sum(w) AS total GROUP BY target",
        "MATCH (a:A)-[r:R]->(b) WITH b.name AS target, r.w AS w "
        "RETURN target, count(w) AS n, sum(w) AS total",
    ),
    # ------------------------------------------------------------------ OPTIONAL MATCH
    _twin(
        "optional_match",
        "MATCH (a:A) OPTIONAL MATCH (a)-[:R]->(b) RETURN element_id(a) AS a, b.name AS b",
    ),
    _twin(
        "optional_aggregating",
        "MATCH (i:A) OPTIONAL MATCH (i)-[:R]->(p) RETURN element_id(i) AS id, i.x AS x, "
        "count(p) AS n, sum(coalesce(p.x, 0)) AS paid",
    ),
    _twin(
        "optional_where",
        "MATCH (a:B) OPTIONAL MATCH (a)-[r:S]->(c) WHERE r.w > 1 "
        "RETURN element_id(a) AS a, r.w AS w",
    ),
)

GQL_CATALOGUE: tuple[QuerySpec, ...] = tuple(
    QuerySpec(query_id, text, language="gql") for query_id, text, _twin_text in _QUERIES
)
"""Every GQL catalogue query, in a fixed order."""

TWINS: Mapping[str, QuerySpec] = {
    query_id: QuerySpec(query_id, cypher)
    for query_id, _text, cypher in _QUERIES
    if cypher is not None
}
"""The Cypher twin of each GQL query that has one, by the GQL query's id."""
