"""The queries the differential test runs through both engines.

Every query here is one Drasi accepts and runs on the generated graphs (tests/differential/
generator.py: labels A, B, C, relations R and S, properties name, x, y, flag, s, l, m, ts on
nodes and w, kind on relations). Together they cover the language drasi_ray supports and
Drasi accepts: each function both have, every aggregate, WHERE forms, CASE, list
comprehension and reduce, WITH chains (projecting, filtering, aggregating), OPTIONAL MATCH,
multi-hop and multi-path patterns. docs/conformance.md marks a function or clause
differential-tested when a query here uses it (``tests/differential/test_conformance_doc.py``).

A query stays out of this list when Drasi refuses it or cannot run it (tests/differential/
test_refusals.py) or when drasi_ray deliberately differs (tests/differential/
test_deviations.py): there is nothing to compare, or the difference is known. For the same
reason the queries keep clear of what Drasi gets wrong on the generated graphs: an OPTIONAL
MATCH end node has no label (Drasi matches a relation to a node of another label with that
node null), avg, min and max never see a null (Drasi fails, or reports null), a division
never divides by zero, a list read by index or by reduce exists and is not empty.
Ids are stable: reports and docs name them.
"""

from __future__ import annotations

from tests.oracle.model import QuerySpec

_QUERIES: tuple[tuple[str, str], ...] = (
    # ------------------------------------------------------------------ one node, WHERE
    ("node_properties", "MATCH (a:A) RETURN a.name AS name, a.x AS x, a.flag AS flag, a.l AS l"),
    (
        "nested_values",
        "MATCH (c:C) WHERE c.l IS NOT NULL "
        "RETURN c.m AS m, c.m.k AS k, c.m.tags AS tags, c.l[0] AS first",
    ),
    ("where_greater", "MATCH (a:A) WHERE a.x > 2 RETURN a.name AS name, a.x AS x"),
    (
        "where_and_or",
        "MATCH (a:A) WHERE (a.x >= 1 AND a.flag = true) OR a.name = 'b1' "
        "RETURN a.name AS name, a.x AS x",
    ),
    ("where_not", "MATCH (a:A) WHERE NOT a.flag RETURN a.name AS name, a.flag AS flag"),
    ("where_is_null", "MATCH (b:B) WHERE b.x IS NULL RETURN b.name AS name, b.y AS y"),
    (
        "where_is_not_null",
        "MATCH (b:B) WHERE b.name IS NOT NULL AND b.y IS NOT NULL RETURN b.name AS name, b.y AS y",
    ),
    ("where_in_list", "MATCH (a:A) WHERE a.name IN ['b1', 'b3'] RETURN a.name AS name, a.x AS x"),
    (
        "where_in_property",
        "MATCH (n:B) WHERE 2 IN n.l RETURN n.name AS name, n.l AS l",
    ),
    (
        "where_string_operators",
        "MATCH (n:C) WHERE n.name STARTS WITH 'Dr' OR n.s ENDS WITH 'a' OR n.s CONTAINS 'am' "
        "RETURN n.name AS name, n.s AS s",
    ),
    ("where_not_equal", "MATCH (a:A) WHERE a.name <> 'b1' RETURN a.name AS name"),
    ("where_several", "MATCH (a:A) WHERE a.x > 0 WHERE a.y > 0 RETURN a.name AS name"),
    ("inline_map", "MATCH (a:A {name: 'b1'}) RETURN a.x AS x, a.flag AS flag"),
    ("inline_where", "MATCH (a:A WHERE a.x > 1) RETURN a.name AS name, a.x AS x"),
    ("label_alternatives", "MATCH (n:A|C) RETURN elementId(n) AS id, n.name AS name"),
    ("any_node", "MATCH (n) WHERE n.x > 3 RETURN elementId(n) AS id, n.x AS x"),
    ("lower_case_keywords", "match (a:A) where a.y >= 2 return a.name as name, a.y as y"),
    ("backticks_comment", "MATCH (a:B) // a comment\nRETURN a.name AS `the name`, a.s AS `s`"),
    ("unaliased_columns", "MATCH (a:A) RETURN a.name, a.x, elementId(a)"),
    # ------------------------------------------------------------------ expressions
    (
        "arithmetic",
        "MATCH (a:A) RETURN a.name AS name, a.x + a.y AS total, a.x - a.y AS difference, "
        "a.x * a.y AS product, a.x % 3 AS remainder",
    ),
    (
        "power",
        "MATCH (a:B) WHERE a.y >= 0 RETURN a.name AS name, a.y ^ 2 AS square, 2 ^ a.y AS power",
    ),
    (
        "division",
        "MATCH (a:A) RETURN a.name AS name, a.x / coalesce(nullIf(a.y, 0), 4) AS quotient",
    ),
    ("comparison_values", "MATCH (a:A) RETURN a.name AS name, a.x > 2 AS big, a.x <= a.y AS le"),
    ("concatenation", "MATCH (a:C) RETURN a.name + '-' + a.s AS label, a.s + a.y AS mixed"),
    (
        "case_searched",
        "MATCH (a:A) RETURN a.name AS name, CASE WHEN a.x > 2 THEN 'high' "
        "WHEN a.x > 0 THEN 'low' ELSE 'none' END AS level",
    ),
    (
        "case_simple",
        "MATCH (b:B) RETURN b.name AS name, "
        "CASE b.flag WHEN true THEN 1 WHEN false THEN 0 ELSE -1 END AS f",
    ),
    ("case_no_else", "MATCH (b:C) RETURN CASE WHEN b.y > 1 THEN b.name END AS name"),
    (
        "list_comprehension",
        "MATCH (a:A) WHERE a.l IS NOT NULL "
        "RETURN a.name AS name, [v IN a.l WHERE v > 1 | v * 2] AS doubled, "
        "[v IN a.l WHERE v IS NOT NULL] AS present, [v IN a.l | v + 1] AS plus",
    ),
    (
        "reduce",
        "MATCH (a:A) WHERE a.l IS NOT NULL "
        "RETURN a.name AS name, reduce(acc = 0, v IN a.l | acc + v * 2) AS t",
    ),
    (
        "literals",
        "MATCH (a:C) RETURN [a.x, a.name, null, true] AS pair, {n: a.name, x: a.x} AS obj, "
        "-3 AS negative, 2.5 AS real, 'text' AS text",
    ),
    (
        "indexing",
        "MATCH (a:B) WHERE size(a.l) > 0 RETURN a.l[0] AS first, a.l[-1] AS lastOne, a.m['k'] AS k",
    ),
    (
        "slices",
        "MATCH (a:B) WHERE size(a.l) > 1 RETURN a.l[0..1] AS head, a.l[1..] AS rest",
    ),
    # ------------------------------------------------------------------ functions
    (
        "text_functions",
        "MATCH (a:A) RETURN a.s AS s, toUpper(a.s) AS upper, toLower(a.s) AS lower, "
        "trim(a.s) AS trimmed, ltrim(a.s) AS lt, rtrim(a.s) AS rt, reverse(a.s) AS rev",
    ),
    (
        "text_functions_2",
        "MATCH (a:B) RETURN a.s AS s, left(a.s, 2) AS l2, right(a.s, 2) AS r2, "
        "replace(a.s, 'a', 'o') AS replaced, split(a.s, ',') AS parts, toString(a.x) AS xs",
    ),
    (
        "substring",
        "MATCH (a:C) WHERE size(a.s) > 3 RETURN a.s AS s, substring(a.s, 1, 2) AS sub, "
        "substring(a.s, 2) AS rest",
    ),
    (
        "numeric_functions",
        "MATCH (a:A) RETURN a.x AS x, abs(a.x) AS abs, ceil(a.x) AS ceil, floor(a.x) AS floor, "
        "round(a.x) AS round, sign(a.x) AS sign",
    ),
    (
        "scalar_functions",
        "MATCH (a:B) RETURN a.l AS l, size(a.l) AS n, size(a.s) AS len, char_length(a.s) AS cl, "
        "character_length(a.name) AS nl, head(a.l) AS head, last(a.l) AS last, "
        "isEmpty(a.l) AS empty",
    ),
    (
        "null_functions",
        "MATCH (a:A) RETURN coalesce(a.x, a.y, -1) AS c, nullIf(a.x, 2) AS n, a.name AS name",
    ),
    (
        "conversions",
        "MATCH (a:C) RETURN a.x AS x, toInteger(a.x) AS i, toFloat(a.x) AS f, "
        "toString(a.flag) AS fs, toIntegerOrNull(a.s) AS io, toFloatOrNull(a.name) AS fo, "
        "toBooleanOrNull(a.s) AS bo, toBoolean(a.flag) AS b",
    ),
    (
        "list_functions",
        "MATCH (a:A) RETURN a.l AS l, tail(a.l) AS tail, range(0, 3) AS r, "
        "coll.distinct(a.l) AS d, coll.indexOf(a.l, 2) AS i, coll.insert(a.l, 0, 9) AS ins",
    ),
    ("element_id", "MATCH (a:A)-[r:R]->(b) RETURN elementId(a) AS a, elementId(r) AS r"),
    (
        "change_date_time",
        "MATCH (a:B) RETURN a.name AS name, drasi.changeDateTime(a) AS changed",
    ),
    (
        "stdevp",
        "MATCH (a:C) WITH a, [v IN a.l WHERE v IS NOT NULL] AS l WHERE size(l) > 0 "
        "RETURN l, drasi.stdevp(l) AS sd",
    ),
    ("pi", "MATCH (a:A) WHERE a.y > 0 RETURN a.name AS name, pi() * a.y AS circle"),
    (
        "trigonometry",
        "MATCH (a:A) RETURN a.name AS name, a.x AS x, cos(a.x) AS c, sin(a.x) AS s, "
        "tan(a.x) AS t, degrees(a.x) AS d, radians(a.x) AS r",
    ),
    (
        "list_max_min",
        "MATCH (a:B) WHERE size(a.l) > 0 "
        "RETURN a.l AS l, drasi.listMax(a.l) AS hi, drasi.listMin(a.l) AS lo",
    ),
    (
        "to_string_or_null",
        "MATCH (a:C) RETURN a.name AS name, toStringOrNull(a.x) AS x, toStringOrNull(a.s) AS s, "
        "toStringOrNull(a.l) AS l, toStringOrNull(a.m) AS m",
    ),
    (
        "transaction_clock",
        "MATCH (a:A) RETURN a.name AS name, datetime.transaction() AS at, "
        "date.transaction() AS day, localtime.transaction('Europe/Paris') AS paris",
    ),
    (
        "truncate",
        "MATCH (a:A) RETURN a.name AS name, "
        "date.truncate('month', datetime({epochSeconds: a.ts})) AS month, "
        "datetime.truncate('hour', datetime({epochSeconds: a.ts}), {minute: 30}) AS half, "
        "localdatetime.truncate('week', datetime({epochSeconds: a.ts})) AS week",
    ),
    (
        "datetime_epoch",
        "MATCH (a:A) RETURN a.name AS name, datetime({epochSeconds: a.ts}) AS at, "
        "datetime({epochSeconds: a.ts}).year AS year, "
        "datetime({epochSeconds: a.ts}).ordinalDay AS day",
    ),
    (
        "temporal_literals",
        "MATCH (a:C) RETURN a.name AS name, date('2024-01-02') AS d, "
        "localdatetime('2024-01-02T10:00:00') AS ldt, localtime('10:00:00.500') AS lt, "
        "date('2024-03-01').month AS month",
    ),
    (
        "durations",
        "MATCH (a:A)-[:R]->(b) RETURN elementId(a) AS a, elementId(b) AS b, "
        "duration.inDays(datetime({epochSeconds: a.ts}), datetime({epochSeconds: b.ts})).days "
        "AS days, duration({days: 2}) AS two",
    ),
    (
        "temporal_functions",
        "MATCH (a:C) RETURN time('10:00:00+01:00') AS t, "
        "duration.between(date('2024-01-01'), date('2024-03-01')) AS between, "
        "duration.inMonths(date('2024-01-01'), date('2024-03-15')).months AS months, "
        "duration.inSeconds(datetime({epochSeconds: a.ts}), "
        "datetime({epochSeconds: a.ts + 90})).seconds AS seconds",
    ),
    # ------------------------------------------------------------------ patterns
    ("one_hop", "MATCH (a:A)-[r:R]->(b:B) RETURN a.name AS a, r.w AS w, b.name AS b"),
    ("one_hop_left", "MATCH (a:A)<-[r:R]-(b) RETURN elementId(a) AS a, elementId(b) AS b"),
    (
        "undirected",
        "MATCH (a:A)-[r:S]-(c:C) RETURN elementId(a) AS a, elementId(c) AS c, r.kind AS kind",
    ),
    ("anonymous_relation", "MATCH (a:B)-[]->(b) RETURN elementId(a) AS a, elementId(b) AS b"),
    (
        "relation_inline_map",
        "MATCH (a)-[r:R {kind: 'fast'}]->(b:A) RETURN elementId(a) AS a, r.w AS w",
    ),
    (
        "two_hops",
        "MATCH (a:A)-[:R]->(b)-[:S]->(c) RETURN elementId(a) AS a, elementId(b) AS b, "
        "elementId(c) AS c",
    ),
    (
        "three_hops",
        "MATCH (a)-[:R]->(b)-[:R]->(c)-[:R]->(d) RETURN elementId(a) AS a, elementId(d) AS d, "
        "c.name AS c",
    ),
    (
        "two_paths",
        "MATCH (a:A)-[:R]->(b), (c:C)-[:S]->(b) RETURN elementId(a) AS a, elementId(b) AS b, "
        "elementId(c) AS c",
    ),
    (
        "two_match_clauses",
        "MATCH (a:A)-[:R]->(b) MATCH (b)-[:R]->(c:B) WHERE elementId(a) <> elementId(c) "
        "RETURN elementId(a) AS a, elementId(c) AS c, b.name AS via",
    ),
    (
        "join_on_property",
        "MATCH (a:A)-[r:S]->(b) WHERE a.name = b.name RETURN elementId(a) AS a, a.name AS name",
    ),
    # ------------------------------------------------------------------ aggregates
    ("count_by_flag", "MATCH (a:A) RETURN a.flag AS flag, count(a) AS n"),
    (
        "sum_avg_by_name",
        "MATCH (a:A) RETURN a.name AS name, sum(a.x) AS total, avg(coalesce(a.x, 0)) AS mean",
    ),
    (
        "min_max",
        "MATCH (n:B) WHERE n.x IS NOT NULL RETURN min(n.x) AS lo, max(n.x) AS hi",
    ),
    (
        "min_max_grouped",
        "MATCH (n:C) WHERE n.y IS NOT NULL RETURN n.flag AS flag, min(n.y) AS lo, max(n.y) AS hi",
    ),
    ("collect_names", "MATCH (a:A) RETURN a.flag AS flag, collect(a.name) AS names"),
    ("collect_values", "MATCH (n:B) RETURN collect(n.l) AS lists, collect(n.m) AS maps"),
    ("count_values", "MATCH (n:C) RETURN count(n.x) AS xs, count(n) AS nodes, sum(n.y) AS ys"),
    (
        "relation_aggregates",
        "MATCH (a:A)-[r:R]->(b) "
        "RETURN elementId(a) AS a, count(r) AS out, sum(r.w) AS weight, "
        "avg(coalesce(r.w, 1)) AS mean",
    ),
    ("aggregate_no_group", "MATCH (a)-[r:S]->(b) RETURN count(r) AS n, collect(r.kind) AS kinds"),
    (
        "aggregate_expression",
        "MATCH (a:A) WHERE a.x IS NOT NULL "
        "RETURN a.flag AS flag, max(a.x) - min(a.x) AS spread, count(a) * 2 AS twice",
    ),
    ("max_change_time", "MATCH (a:B) RETURN max(drasi.changeDateTime(a)) AS latest"),
    (
        "retain_history",
        "MATCH (a:A) RETURN a.flag AS flag, retainHistory(count(a)) AS versions, "
        "retainHistory(sum(a.y)) AS ys",
    ),
    ("group_by_target", "MATCH (a:A)-[:R]->(b) RETURN b.name AS name, count(a) AS n"),
    (
        "group_by_element_id",
        "MATCH (a)-[:R]->(b:B) RETURN elementId(b) AS id, collect(a.name) AS names",
    ),
    ("group_by_number", "MATCH (a:A) RETURN a.y AS y, count(a) AS n"),
    ("group_by_list", "MATCH (a:C) RETURN a.l AS l, count(a) AS n"),
    # ------------------------------------------------------------------ WITH
    (
        "with_projection",
        "MATCH (a:A) WITH a.name AS name, a.x * 2 AS x2 WHERE x2 > 2 RETURN name, x2",
    ),
    ("with_element", "MATCH (a:A) WITH a WHERE a.x > 1 RETURN a.name AS name"),
    (
        "with_chain",
        "MATCH (a:A) WITH a, a.x AS x WITH a, x + 1 AS y WHERE y > 2 RETURN a.name AS name, y",
    ),
    (
        "aggregating_with",
        "MATCH (a:A) WITH a.flag AS f, avg(coalesce(a.x, 0.5)) AS ax RETURN f, ax",
    ),
    (
        "aggregating_with_where",
        "MATCH (a:A) WITH a.flag AS f, count(a) AS n WHERE n > 1 RETURN f, n",
    ),
    (
        "aggregate_of_aggregate",
        "MATCH (a:A) WITH a.s AS s, count(a) AS n RETURN sum(n) AS total, count(s) AS groups",
    ),
    (
        "comfort_style",
        "MATCH (r:A)-[:R]->(f:B) WITH f, floor(50 + coalesce(r.x, 1)) AS level "
        "RETURN elementId(f) AS id, avg(level) AS comfort",
    ),
    (
        "two_level_aggregation",
        "MATCH (a:A)-[:R]->(b)-[:S]->(c) WITH c, b, avg(coalesce(a.x, 1)) AS bx "
        "WITH c, max(bx) AS top RETURN elementId(c) AS id, top",
    ),
    (
        "with_then_collect",
        "MATCH (a)-[:R]->(b:B) WITH b, a.x AS x RETURN b.name AS name, collect(x) AS xs",
    ),
    (
        "with_group_filter",
        "MATCH (a:A)-[:R]->(b) WITH elementId(b) AS id, count(a) AS n, sum(a.x) AS total "
        "WHERE n >= 1 RETURN id, n, total",
    ),
    # ------------------------------------------------------------------ OPTIONAL MATCH
    (
        "optional_match",
        "MATCH (a:A) OPTIONAL MATCH (a)-[:R]->(b) RETURN elementId(a) AS a, b.name AS b",
    ),
    (
        "optional_aggregating",
        "MATCH (i:A) OPTIONAL MATCH (i)-[:R]->(p) RETURN elementId(i) AS id, i.x AS x, "
        "count(p) AS n, sum(coalesce(p.x, 0)) AS paid",
    ),
    (
        "optional_where",
        "MATCH (a:B) OPTIONAL MATCH (a)-[r:S]->(c) WHERE r.w > 1 "
        "RETURN elementId(a) AS a, r.w AS w",
    ),
)

CATALOGUE: tuple[QuerySpec, ...] = tuple(QuerySpec(query_id, text) for query_id, text in _QUERIES)
"""Every catalogue query, in a fixed order."""
