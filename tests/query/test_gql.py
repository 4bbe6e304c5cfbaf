"""parse_gql: GQL builds the parts Drasi builds, which are the parts of a Cypher query of the
same meaning; and the errors it raises, with line and column."""

from __future__ import annotations

import pytest

from drasi_ray.model.errors import QuerySyntaxError, UnsupportedQueryError
from drasi_ray.model.query_specs import QueryLanguage
from drasi_ray.query import ast
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.query.functions import FUNCTIONS as REGISTRY
from drasi_ray.query.future_functions import lookup as stateful
from drasi_ray.query.gql import CAST_TARGETS, FUNCTIONS, parse_gql
from drasi_ray.query.languages import parse
from drasi_ray.query.parser import parse_query
from tests.query.test_engine import Graph


def _parts(text: str) -> tuple[ast.QueryPart, ...]:
    return parse_gql(text).parts


# GQL text -> the Cypher text of the same parts.
SAME_PARTS = [
    ("MATCH (n:N) WHERE n.x > 1 RETURN n.name AS name", None),
    ("match (n:N|M {k: 1}) return n.x", None),
    ("MATCH (a)-[r:R WHERE r.w > 0]->(b), (c)<-(b) RETURN a.x AS x, r.w AS w", None),
    ("MATCH (a:A) OPTIONAL MATCH (a)-[:R]->(b) WHERE b.x > 1 RETURN a.x AS a, b.x AS b", None),
    ("MATCH (a) WHERE a.x > 0 MATCH (a)-[:R]->(b) WHERE b.x > 1 RETURN a.x AS a", None),
    (
        "MATCH (n:N) RETURN CASE WHEN n.x > 1 THEN 'hi' ELSE 'lo' END AS c, "
        "[v IN n.l WHERE v > 1 | v * 2] AS l, reduce(s = 0, v IN n.l | s + v) AS t",
        None,
    ),
    (
        "MATCH (n:N) RETURN upper(n.s) AS u, element_id(n) AS id, "
        "zoned_datetime('2024-01-01T00:00:00Z') AS z, local_time('10:00') AS t, "
        "duration_between(date('2024-01-01'), date('2024-02-01')) AS d",
        "MATCH (n:N) RETURN upper(n.s) AS u, elementId(n) AS id, "
        "datetime('2024-01-01T00:00:00Z') AS z, localtime('10:00') AS t, "
        "duration.between(date('2024-01-01'), date('2024-02-01')) AS d",
    ),
    (
        "MATCH (n:N) RETURN CAST(n.x AS STRING) AS s, cast(n.x AS int) AS i, "
        "CAST(n.x, 'FLOAT') AS f, CAST(n.b AS BOOL) AS b",
        "MATCH (n:N) RETURN toString(n.x) AS s, toInteger(n.x) AS i, toFloat(n.x) AS f, "
        "toBoolean(n.b) AS b",
    ),
    (
        "MATCH (n:N) LET y = n.x + 1 RETURN n.name AS name, y",
        "MATCH (n:N) WITH n, n.x + 1 AS y RETURN n.name AS name, y",
    ),
    (
        "MATCH (n:N)-[r:R]->(m) LET y = n.x, z = m.x RETURN y, z",
        "MATCH (n:N)-[r:R]->(m) WITH n, m, n.x AS y, m.x AS z RETURN y, z",
    ),
    (
        "MATCH (n:N) LET y = n.x LET y = y * 2 RETURN y",
        "MATCH (n:N) WITH n, n.x AS y WITH n, y * 2 AS y RETURN y",
    ),
    (
        "MATCH (n:N) FILTER n.x > 1 RETURN n.name AS name",
        "MATCH (n:N) WITH n WHERE n.x > 1 WITH n RETURN n.name AS name",
    ),
    (
        "MATCH (n:N) LET y = n.x FILTER y > 1 FILTER y < 9 RETURN y",
        "MATCH (n:N) WITH n, n.x AS y WHERE y > 1 WITH n, y WHERE y < 9 WITH n, y RETURN y",
    ),
    (
        "MATCH (n:N) YIELD n, n.x AS y RETURN y",
        "MATCH (n:N) WITH n, n.x AS y RETURN y",
    ),
    (
        "MATCH (n:N) LET c = count(n) RETURN c",
        "MATCH (n:N) WITH n, count(n) AS c RETURN c",
    ),
    (
        "MATCH (n:N) RETURN n.y AS y, count(n) AS c GROUP BY y",
        "MATCH (n:N) RETURN n.y AS y, count(n) AS c",
    ),
    (
        "MATCH (n:N) RETURN n.y, floor(n.x), count(n) AS c GROUP BY floor(n.x), n.y",
        "MATCH (n:N) RETURN n.y, floor(n.x), count(n) AS c",
    ),
    ("MATCH (n:N) RETURN count(n) AS c GROUP BY ()", "MATCH (n:N) RETURN count(n) AS c"),
    (
        "MATCH (n:N) RETURN count(n) AS c, sum(n.x) AS s GROUP BY n.y",
        "MATCH (n:N) WITH n.y AS `group by key 1`, count(n) AS c, sum(n.x) AS s RETURN c, s",
    ),
    (
        "MATCH (n:N) RETURN n.y AS y, count(n) AS c GROUP BY n.z, y",
        "MATCH (n:N) WITH n.z AS `group by key 1`, n.y AS y, count(n) AS c RETURN y, c",
    ),
    (
        "MATCH (n:N) RETURN n.y AS y GROUP BY y, n.z",
        "MATCH (n:N) WITH n.y AS y, n.z AS `group by key 2` RETURN y",
    ),
    (
        "MATCH (n:N) RETURN n.y AS y, n.x AS x NEXT FILTER x > 1 RETURN y",
        "MATCH (n:N) WITH n.y AS y, n.x AS x WHERE x > 1 WITH y, x RETURN y",
    ),
    (
        "MATCH (n:N) RETURN n.y AS y, n.x AS x NEXT RETURN y, sum(x) AS s GROUP BY y",
        "MATCH (n:N) WITH n.y AS y, n.x AS x RETURN y, sum(x) AS s",
    ),
    (
        "MATCH (n:N) RETURN n AS m NEXT LET z = m.x RETURN z",
        "MATCH (n:N) WITH n AS m WITH m, m.x AS z RETURN z",
    ),
]


@pytest.mark.parametrize(("gql", "cypher"), SAME_PARTS)
def test_gql_builds_the_parts_of_its_cypher_twin(gql: str, cypher: str | None) -> None:
    assert _parts(gql) == parse_query(cypher or gql).parts


def test_the_query_keeps_its_text() -> None:
    text = "MATCH (n:N) RETURN n.x AS x"
    assert parse_gql(text).text == text
    assert parse(text, QueryLanguage.GQL) == parse_gql(text)
    assert parse(text) == parse_query(text)


def test_unaliased_columns_are_named_as_drasi_names_them() -> None:
    query = parse_gql("MATCH (n:N) RETURN n.name, n, upper(n.s), element_id(n), CAST(n.x AS INT)")
    assert [item.name for item in query.returns.items] == [
        "name",
        "n",
        "upper",
        "element_id",
        "cast",
    ]


def test_every_gql_function_is_a_function_of_the_registry() -> None:
    for gql_name, name in FUNCTIONS.items():
        known = name in REGISTRY or stateful(name) is not None or name in ast.AGGREGATE_FUNCTIONS
        assert known, gql_name
    assert set(CAST_TARGETS.values()) <= set(REGISTRY)


def test_function_names_are_case_insensitive() -> None:
    assert (
        _parts("MATCH (n) RETURN UPPER(n.s) AS u, Count(n) AS c")
        == parse_query("MATCH (n) RETURN upper(n.s) AS u, count(n) AS c").parts
    )


def test_a_gql_query_runs_on_the_engine() -> None:
    graph = Graph(
        "MATCH (p:Person) LET adult = p.age >= 18 FILTER adult "
        "RETURN p.city AS city, count(p) AS n GROUP BY city",
        language=QueryLanguage.GQL,
    )
    graph.node("1", "Person", age=20, city="Oslo")
    graph.node("2", "Person", age=12, city="Oslo")
    assert graph.query.results() == [{"city": "Oslo", "n": 1}]


def test_the_engine_refuses_gql_text_read_as_cypher_and_back() -> None:
    with pytest.raises(QuerySyntaxError):
        ContinuousQuery("q", "MATCH (n) FILTER n.x > 1 RETURN n.x AS x")
    with pytest.raises(QuerySyntaxError):
        ContinuousQuery("q", "MATCH (n) WITH n RETURN n.x AS x", language=QueryLanguage.GQL)


@pytest.mark.parametrize(
    ("text", "error", "line", "column", "fragment"),
    [
        ("MATCH (n) RETURN n ORDER BY n", UnsupportedQueryError, 1, 20, "ORDER BY"),
        ("MATCH (n) RETURN n.x AS x\nOFFSET 1", UnsupportedQueryError, 2, 1, "OFFSET"),
        ("MATCH (n) RETURN n LIMIT 1", UnsupportedQueryError, 1, 20, "LIMIT"),
        ("MATCH (n IS N) RETURN n", UnsupportedQueryError, 1, 10, "write (n:Label)"),
        ("MATCH (n)\nWITH n RETURN n", UnsupportedQueryError, 2, 1, "LET, YIELD"),
        ("MATCH (n) RETURN count(*) AS c", UnsupportedQueryError, 1, 18, "count(*)"),
        ("MATCH (n) RETURN DISTINCT n.x", UnsupportedQueryError, 1, 18, "DISTINCT"),
        ("MATCH (n) INSERT (m)", UnsupportedQueryError, 1, 11, "INSERT"),
        ("MATCH (n) RETURN", QuerySyntaxError, 1, 17, "unexpected end of query"),
        ("MATCH (n) FILTER RETURN n", QuerySyntaxError, 1, 25, "unexpected 'n'"),
        ("MATCH (n) RETURN toUpper(n.s)", QuerySyntaxError, 1, 18, "GQL writes upper"),
        ("MATCH (n) RETURN datetime()", QuerySyntaxError, 1, 18, "zoned_datetime"),
        ("MATCH (n) RETURN toString(n)", QuerySyntaxError, 1, 18, "CAST(x AS STRING)"),
        ("MATCH (n) RETURN collect(n.x)", QuerySyntaxError, 1, 18, "unknown GQL function"),
        ("MATCH (n) RETURN CAST(n.x AS DATE)", QuerySyntaxError, 1, 18, "CAST to DATE"),
        ("MATCH (n) RETURN cast(n.x, n.t)", QuerySyntaxError, 1, 18, "as a text"),
        ("MATCH (n) RETURN upper(n.s, 1)", QuerySyntaxError, 1, 18, "upper() takes 1"),
        (
            "MATCH (a)-[r:R]->(b) LET x = 1\nRETURN r.w AS w",
            QuerySyntaxError,
            2,
            8,
            "keeps the node variables only",
        ),
        ("MATCH (n) LET a = n.x, b = a + 1 RETURN b", QuerySyntaxError, 1, 28, "'a' is not"),
        ("MATCH (n) YIELD n.x RETURN x", QuerySyntaxError, 1, 17, "give YIELD column 'x'"),
        ("MATCH (n) YIELD m RETURN m", QuerySyntaxError, 1, 17, "'m' is not defined"),
        ("MATCH (n) YIELD n.x AS x RETURN n", QuerySyntaxError, 1, 33, "'n' is not defined"),
        ("MATCH (n) RETURN n.x NEXT RETURN x", QuerySyntaxError, 1, 18, "a NEXT reads it"),
        ("MATCH (n) RETURN n.x AS x, n.x AS x", QuerySyntaxError, 1, 28, "used twice"),
        (
            "MATCH (n) RETURN n.y AS y, count(n) AS c GROUP BY n.y",
            QuerySyntaxError,
            1,
            18,
            "column 'y' must be aggregated or a GROUP BY key",
        ),
        (
            "MATCH (n) RETURN n.y, count(n) AS c GROUP BY ()",
            QuerySyntaxError,
            1,
            18,
            "GROUP BY key",
        ),
        (
            "MATCH (n) RETURN count(n) GROUP BY n.y",
            QuerySyntaxError,
            1,
            18,
            "give RETURN column 'count' a name",
        ),
        ("FILTER 1 > 0 RETURN 1 AS x", QuerySyntaxError, 1, 1, "needs a MATCH"),
    ],
)
def test_errors_name_line_and_column(
    text: str, error: type[QuerySyntaxError], line: int, column: int, fragment: str
) -> None:
    with pytest.raises(error) as raised:
        parse_gql(text)
    assert (raised.value.line, raised.value.column) == (line, column)
    assert fragment in raised.value.message
