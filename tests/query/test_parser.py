"""parse_query: the AST it builds for each clause and operator, and the errors it raises."""

from __future__ import annotations

import pytest

from drasi_ray.model.errors import QuerySyntaxError, UnsupportedQueryError
from drasi_ray.query import ast
from drasi_ray.query.parser import parse_query
from tests.query._helpers import expression

N = ast.Variable("n")


def _prop(subject: str, key: str) -> ast.PropertyAccess:
    return ast.PropertyAccess(ast.Variable(subject), key)


def _lit(value: object) -> ast.Literal:
    return ast.Literal(value)


def _single_path(text: str) -> ast.PathPattern:
    query = parse_query(text)
    (match,) = query.parts[0].matches
    (path,) = match.paths
    return path


# --------------------------------------------------------------------------- clauses


def test_match_where_return_builds_one_part() -> None:
    query = parse_query("MATCH (n:Person) WHERE n.age > 30 RETURN n.name AS name")
    assert query == ast.Query(
        parts=(
            ast.QueryPart(
                matches=(
                    ast.MatchClause(
                        paths=(ast.PathPattern((ast.NodePattern("n", ("Person",)),)),),
                        where=ast.Binary(ast.BinaryOp.GT, _prop("n", "age"), _lit(30)),
                    ),
                ),
                projection=ast.Projection((ast.ProjectionItem(_prop("n", "name"), "name"),)),
            ),
        ),
        text="MATCH (n:Person) WHERE n.age > 30 RETURN n.name AS name",
    )


def test_each_with_starts_a_new_part() -> None:
    query = parse_query(
        "MATCH (r:Room) WITH r.temp AS t, elementId(r) AS id WHERE t > 20 "
        "WITH id, t * 2 AS double RETURN id, double"
    )
    assert len(query.parts) == 3
    first, second, last = query.parts
    assert [item.name for item in first.projection.items] == ["t", "id"]
    assert first.projection.where == ast.Binary(ast.BinaryOp.GT, ast.Variable("t"), _lit(20))
    assert second.matches == ()
    assert [item.name for item in second.projection.items] == ["id", "double"]
    assert last.projection.where is None
    assert query.returns is last.projection


def test_several_match_clauses_and_optional_match() -> None:
    query = parse_query(
        "MATCH (a:A) WHERE a.x = 1 MATCH (b:B) OPTIONAL MATCH (a)-[:R]->(b) WHERE b.y = 2 "
        "RETURN a, b"
    )
    matches = query.parts[0].matches
    assert [match.optional for match in matches] == [False, False, True]
    assert matches[0].where is not None
    assert matches[1].where is None
    assert matches[2].where == ast.Binary(ast.BinaryOp.EQ, _prop("b", "y"), _lit(2))


def test_comma_separated_paths() -> None:
    query = parse_query("MATCH (a:A), (b:B)-[:R]->(c) RETURN a")
    paths = query.parts[0].matches[0].paths
    assert len(paths) == 2
    assert [node.variable for node in paths[1].nodes] == ["b", "c"]


@pytest.mark.parametrize(
    "text",
    [
        "match (n:Foo) where n.x = 1 return n",
        "MATCH (n:Foo) WHERE n.x = 1 RETURN n",
        "Match (n:Foo) Where n.x = 1 Return n",
    ],
)
def test_keywords_are_case_insensitive(text: str) -> None:
    query = parse_query(text)
    assert query.parts[0].matches[0].where == ast.Binary(ast.BinaryOp.EQ, _prop("n", "x"), _lit(1))


def test_comments_are_ignored() -> None:
    query = parse_query(
        "// leading comment\nMATCH (n) // trailing\n/* block\ncomment */ RETURN n // end"
    )
    assert query.returns.items == (ast.ProjectionItem(N, "n"),)


def test_trailing_semicolon_is_allowed() -> None:
    assert parse_query("MATCH (n) RETURN n;").returns.items == (ast.ProjectionItem(N, "n"),)


def test_names_may_use_any_script() -> None:
    query = parse_query("MATCH (café:Straße) RETURN café.größe AS größe")
    assert query.parts[0].matches[0].paths[0].nodes[0] == ast.NodePattern("café", ("Straße",))
    assert query.returns.items[0] == ast.ProjectionItem(_prop("café", "größe"), "größe")


def test_return_without_match() -> None:
    assert parse_query("RETURN 1 AS one").returns.items == (ast.ProjectionItem(_lit(1), "one"),)


# --------------------------------------------------------------------------- patterns


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("()", ast.NodePattern(None)),
        ("(n)", ast.NodePattern("n")),
        ("(:L)", ast.NodePattern(None, ("L",))),
        ("(n:L)", ast.NodePattern("n", ("L",))),
        ("(n:A|B)", ast.NodePattern("n", ("A", "B"))),
        ("(n:A|:B)", ast.NodePattern("n", ("A", "B"))),
        ("(`my var`:`My Label`)", ast.NodePattern("my var", ("My Label",))),
        (
            "(n:L {k: 'v', m: 2})",
            ast.NodePattern("n", ("L",), ast.MapLiteral((("k", _lit("v")), ("m", _lit(2)))), None),
        ),
        (
            "(n:L WHERE n.x > 1)",
            ast.NodePattern(
                "n", ("L",), None, ast.Binary(ast.BinaryOp.GT, _prop("n", "x"), _lit(1))
            ),
        ),
    ],
)
def test_node_patterns(pattern: str, expected: ast.NodePattern) -> None:
    assert _single_path(f"MATCH {pattern} RETURN 1 AS one").nodes == (expected,)


@pytest.mark.parametrize(
    ("relation", "expected"),
    [
        ("-[r:T]->", ast.RelationPattern("r", ("T",), ast.Direction.OUT)),
        ("<-[r:T]-", ast.RelationPattern("r", ("T",), ast.Direction.IN)),
        ("-[r:T]-", ast.RelationPattern("r", ("T",), ast.Direction.BOTH)),
        ("-->", ast.RelationPattern(None, (), ast.Direction.OUT)),
        ("<--", ast.RelationPattern(None, (), ast.Direction.IN)),
        ("--", ast.RelationPattern(None, (), ast.Direction.BOTH)),
        ("-[]->", ast.RelationPattern(None, (), ast.Direction.OUT)),
        ("-[:T|U]->", ast.RelationPattern(None, ("T", "U"), ast.Direction.OUT)),
        (
            "-[r:T {w: 1}]->",
            ast.RelationPattern("r", ("T",), ast.Direction.OUT, ast.MapLiteral((("w", _lit(1)),))),
        ),
        (
            "-[r WHERE r.w > 0]-",
            ast.RelationPattern(
                "r",
                (),
                ast.Direction.BOTH,
                None,
                ast.Binary(ast.BinaryOp.GT, _prop("r", "w"), _lit(0)),
            ),
        ),
    ],
)
def test_relation_patterns(relation: str, expected: ast.RelationPattern) -> None:
    path = _single_path(f"MATCH (a){relation}(b) RETURN a")
    assert path.relations == (expected,)
    assert [node.variable for node in path.nodes] == ["a", "b"]


def test_multi_hop_chain_keeps_order() -> None:
    path = _single_path("MATCH (a:A)-[r1:R]->(b:B)<-[r2:S]-(c:C)-[:T]-(d) RETURN a")
    assert [node.variable for node in path.nodes] == ["a", "b", "c", "d"]
    assert [(rel.variable, rel.direction) for rel in path.relations] == [
        ("r1", ast.Direction.OUT),
        ("r2", ast.Direction.IN),
        (None, ast.Direction.BOTH),
    ]


# --------------------------------------------------------------------------- expressions


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("42", 42),
        ("0x1F", 31),
        ("1.5", 1.5),
        ("1.5e3", 1500.0),
        ("2E-2", 0.02),
        (".5", 0.5),
        ("-7", -7),
        ("-9223372036854775808", -(2**63)),
        ("'single'", "single"),
        ('"double"', "double"),
        ("'it\\'s'", "it's"),
        ('"say \\"hi\\""', 'say "hi"'),
        ("'a\\nb\\tc\\\\'", "a\nb\tc\\"),
        ("'\\u00e9'", "\u00e9"),
        ("'no // comment'", "no // comment"),
        ("true", True),
        ("FALSE", False),
        ("null", None),
        ("NULL", None),
    ],
)
def test_literals(text: str, value: object) -> None:
    parsed = expression(text)
    assert parsed == ast.Literal(value)
    assert type(parsed.value) is type(value)  # type: ignore[union-attr]


def test_list_and_map_literals() -> None:
    assert expression("[1, 'a', []]") == ast.ListLiteral((_lit(1), _lit("a"), ast.ListLiteral(())))
    assert expression("{a: 1, `b c`: {}, end: 2}") == ast.MapLiteral(
        (("a", _lit(1)), ("b c", ast.MapLiteral(())), ("end", _lit(2)))
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("n.a.b", ast.PropertyAccess(_prop("n", "a"), "b")),
        ("n.end", _prop("n", "end")),
        ("n.list[0]", ast.Index(_prop("n", "list"), _lit(0))),
        ("n['key']", ast.Index(N, _lit("key"))),
        ("n.list[1..3]", ast.Slice(_prop("n", "list"), _lit(1), _lit(3))),
        ("n.list[..3]", ast.Slice(_prop("n", "list"), None, _lit(3))),
        ("n.list[1..]", ast.Slice(_prop("n", "list"), _lit(1), None)),
        ("$param", ast.Parameter("param")),
        ("$param.key", ast.PropertyAccess(ast.Parameter("param"), "key")),
    ],
)
def test_access_expressions(text: str, expected: ast.Expr) -> None:
    assert expression(text) == expected


def _b(op: ast.BinaryOp, left: ast.Expr, right: ast.Expr) -> ast.Binary:
    return ast.Binary(op, left, right)


A, B, C = ast.Variable("a"), ast.Variable("b"), ast.Variable("c")
Op = ast.BinaryOp


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a OR b AND c", _b(Op.OR, A, _b(Op.AND, B, C))),
        ("a XOR b OR c", _b(Op.OR, _b(Op.XOR, A, B), C)),
        ("a AND b XOR c", _b(Op.XOR, _b(Op.AND, A, B), C)),
        ("NOT a AND b", _b(Op.AND, ast.Unary(ast.UnaryOp.NOT, A), B)),
        ("NOT a = b", ast.Unary(ast.UnaryOp.NOT, _b(Op.EQ, A, B))),
        ("a = b + c", _b(Op.EQ, A, _b(Op.ADD, B, C))),
        ("a + b * c", _b(Op.ADD, A, _b(Op.MUL, B, C))),
        ("a - b - c", _b(Op.SUB, _b(Op.SUB, A, B), C)),
        ("a / b % c", _b(Op.MOD, _b(Op.DIV, A, B), C)),
        ("a * b ^ c", _b(Op.MUL, A, _b(Op.POW, B, C))),
        ("-a ^ b", _b(Op.POW, ast.Unary(ast.UnaryOp.NEGATE, A), B)),
        ("-a.x", ast.Unary(ast.UnaryOp.NEGATE, _prop("a", "x"))),
        ("+a", ast.Unary(ast.UnaryOp.PLUS, A)),
        ("(a + b) * c", _b(Op.MUL, _b(Op.ADD, A, B), C)),
        ("a + b IN c", _b(Op.IN, _b(Op.ADD, A, B), C)),
        ("a <> b", _b(Op.NE, A, B)),
        ("a != b", _b(Op.NE, A, B)),
        ("a <= b", _b(Op.LE, A, B)),
        ("a >= b", _b(Op.GE, A, B)),
        ("a < b", _b(Op.LT, A, B)),
        ("a STARTS WITH b", _b(Op.STARTS_WITH, A, B)),
        ("a ends with b", _b(Op.ENDS_WITH, A, B)),
        ("a CONTAINS b + c", _b(Op.CONTAINS, A, _b(Op.ADD, B, C))),
        ("a IS NULL", ast.IsNull(A, negated=False)),
        ("a IS NOT NULL", ast.IsNull(A, negated=True)),
        ("a IS NULL OR b", _b(Op.OR, ast.IsNull(A, negated=False), B)),
        ("a = b IS NULL", _b(Op.EQ, A, ast.IsNull(B, negated=False))),
        ("NOT a IS NULL", ast.Unary(ast.UnaryOp.NOT, ast.IsNull(A, negated=False))),
    ],
)
def test_operator_precedence(text: str, expected: ast.Expr) -> None:
    assert expression(text) == expected


def test_case_forms() -> None:
    assert expression("CASE a WHEN 1 THEN 'one' WHEN 2 THEN 'two' ELSE 'many' END") == ast.Case(
        A,
        (ast.CaseWhen(_lit(1), _lit("one")), ast.CaseWhen(_lit(2), _lit("two"))),
        _lit("many"),
    )
    assert expression("CASE WHEN a > 1 THEN b END") == ast.Case(
        None, (ast.CaseWhen(_b(Op.GT, A, _lit(1)), B),), None
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[x IN a WHERE x > 1 | x * 2]",
            ast.ListComprehension(
                "x",
                A,
                _b(Op.GT, ast.Variable("x"), _lit(1)),
                _b(Op.MUL, ast.Variable("x"), _lit(2)),
            ),
        ),
        (
            "[x IN a WHERE x > 1]",
            ast.ListComprehension("x", A, _b(Op.GT, ast.Variable("x"), _lit(1)), None),
        ),
        ("[x IN a | x.name]", ast.ListComprehension("x", A, None, _prop("x", "name"))),
    ],
)
def test_list_comprehension(text: str, expected: ast.Expr) -> None:
    assert expression(text) == expected


def test_list_literal_with_membership_test_stays_a_list() -> None:
    assert expression("[x IN a, 2]") == ast.ListLiteral((_b(Op.IN, ast.Variable("x"), A), _lit(2)))


def test_reduce() -> None:
    assert expression("reduce(total = 0, x IN a | total + x)") == ast.Reduce(
        "total", _lit(0), "x", A, _b(Op.ADD, ast.Variable("total"), ast.Variable("x"))
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("toUpper(a)", ast.FunctionCall("toupper", (A,))),
        ("TOUPPER(a)", ast.FunctionCall("toupper", (A,))),
        ("rand()", ast.FunctionCall("rand", ())),
        ("coalesce(a, b, c)", ast.FunctionCall("coalesce", (A, B, C))),
        ("drasi.changeDateTime(a)", ast.FunctionCall("drasi.changedatetime", (A,))),
        ("duration.between(a, b)", ast.FunctionCall("duration.between", (A, B))),
        ("count(a)", ast.FunctionCall("count", (A,))),
        ("count(DISTINCT a)", ast.FunctionCall("count", (A,), distinct=True)),
        ("collect(distinct a.x)", ast.FunctionCall("collect", (_prop("a", "x"),), distinct=True)),
        ("sum(a.x * 2)", ast.FunctionCall("sum", (_b(Op.MUL, _prop("a", "x"), _lit(2)),))),
        (
            "toString(a.x).y",
            ast.PropertyAccess(ast.FunctionCall("tostring", (_prop("a", "x"),)), "y"),
        ),
    ],
)
def test_function_calls(text: str, expected: ast.Expr) -> None:
    assert expression(text) == expected


# --------------------------------------------------------------------------- column names


@pytest.mark.parametrize(
    ("items", "names"),
    [
        ("n.prop AS alias", ["alias"]),
        ("n.prop", ["prop"]),
        ("n.a.b", ["b"]),
        ("n", ["n"]),
        ("count(n)", ["count"]),
        ("COUNT(n)", ["COUNT"]),
        ("elementId(n)", ["elementId"]),
        ("drasi.changeDateTime(n)", ["drasi.changeDateTime"]),
        ("n.x + 1", ["n.x + 1"]),
        ("n.x   +\n  1", ["n.x + 1"]),
        ("n.x AS `weird name`", ["weird name"]),
        ("n.a, n.b AS c, m", ["a", "c", "m"]),
    ],
)
def test_column_names(items: str, names: list[str]) -> None:
    query = parse_query(f"MATCH (n), (m) RETURN {items}")
    assert [item.name for item in query.returns.items] == names


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("text", "error", "line", "column", "fragment"),
    [
        (
            "MATCH (n)\nRETURN n\nORDER BY n.x",
            UnsupportedQueryError,
            3,
            1,
            "ORDER BY is not supported",
        ),
        ("MATCH (n) RETURN n SKIP 1", UnsupportedQueryError, 1, 20, "SKIP is not supported"),
        ("MATCH (n) RETURN n LIMIT 10", UnsupportedQueryError, 1, 20, "LIMIT is not supported"),
        ("MATCH (n) WITH n LIMIT 1 RETURN n", UnsupportedQueryError, 1, 18, "LIMIT"),
        ("MATCH (n) RETURN DISTINCT n", UnsupportedQueryError, 1, 18, "DISTINCT is not supported"),
        ("MATCH (n) WITH distinct n.x AS x RETURN x", UnsupportedQueryError, 1, 16, "DISTINCT"),
        ("UNWIND [1, 2] AS x RETURN x", UnsupportedQueryError, 1, 1, "UNWIND is not supported"),
        ("MATCH (n) RETURN n UNION MATCH (m) RETURN m", UnsupportedQueryError, 1, 20, "UNION"),
        ("CREATE (n:Person) RETURN n", UnsupportedQueryError, 1, 1, "CREATE is not supported"),
        ("MERGE (n:Person) RETURN n", UnsupportedQueryError, 1, 1, "MERGE"),
        ("MATCH (n) SET n.x = 1 RETURN n", UnsupportedQueryError, 1, 11, "SET is not supported"),
        ("MATCH (n) DELETE n", UnsupportedQueryError, 1, 11, "DELETE is not supported"),
        ("MATCH (n) DETACH DELETE n", UnsupportedQueryError, 1, 11, "DETACH DELETE"),
        ("MATCH (n) REMOVE n.x RETURN n", UnsupportedQueryError, 1, 11, "REMOVE"),
        ("CALL db.labels()", UnsupportedQueryError, 1, 1, "CALL is not supported"),
        ("MATCH (n)\nRETURN count(*)", UnsupportedQueryError, 2, 8, "count(*) is not supported"),
        ("MATCH (a)-[*1..3]->(b) RETURN a", UnsupportedQueryError, 1, 12, "variable-length"),
        ("MATCH (a)-[r:T*]->(b) RETURN a", UnsupportedQueryError, 1, 15, "variable-length"),
        ("MATCH (a)-[r:T*2]-(b) RETURN a", UnsupportedQueryError, 1, 15, "variable-length"),
        ("MATCH (n) RETURN toUpper(DISTINCT n.x)", UnsupportedQueryError, 1, 18, "DISTINCT"),
        ("MATCH (n $p) RETURN n", UnsupportedQueryError, 1, 10, "parameter as a pattern"),
        ("MATCH (n RETURN n", QuerySyntaxError, 1, 10, "unexpected 'RETURN'"),
        ("MATCH (n) RETURN", QuerySyntaxError, 1, 17, "unexpected end of query"),
        ("MATCH (n)\n  RETURN n.x +", QuerySyntaxError, 2, 15, "unexpected end of query"),
        ("MATCH (n) WHERE n.x = 'open RETURN n", QuerySyntaxError, 1, 23, "unterminated string"),
        ('MATCH (n)\nRETURN "open', QuerySyntaxError, 2, 8, "unterminated string"),
        ("MATCH (n) RETURN n;;", QuerySyntaxError, 1, 20, "unexpected ';'"),
        ("MATCH (n) RETURN n.x @ 2", QuerySyntaxError, 1, 22, "unexpected character '@'"),
        ("MATCH (n) RETURN 'a\\qb' AS s", QuerySyntaxError, 1, 18, "invalid escape"),
        ("MATCH (n) RETURN foo(n)", QuerySyntaxError, 1, 18, "unknown function 'foo'"),
        ("MATCH (n) RETURN my.ns.fn(n)", QuerySyntaxError, 1, 18, "unknown function 'my.ns.fn'"),
        ("MATCH (n) RETURN left(n.x)", QuerySyntaxError, 1, 18, "left() takes 2 arguments, got 1"),
        ("MATCH (n) RETURN count(n, n)", QuerySyntaxError, 1, 18, "count() takes 1 argument"),
        ("MATCH (n) RETURN count(sum(n.x))", QuerySyntaxError, 1, 24, "sum() cannot be nested"),
        ("MATCH (n) RETURN max(1 + min(n.x))", QuerySyntaxError, 1, 26, "min() cannot be nested"),
        ("MATCH (n WHERE max(n.x) > 1) RETURN n", QuerySyntaxError, 1, 16, "in WHERE"),
        ("MATCH (n {x: collect(1)}) RETURN n", QuerySyntaxError, 1, 14, "in a pattern"),
        ("MATCH (n) RETURN n, n", QuerySyntaxError, 1, 18, "column name 'n' is used twice"),
        ("MATCH (n) RETURN n.x, n.x", QuerySyntaxError, 1, 18, "used twice"),
        ("MATCH (n) WITH n", QuerySyntaxError, 1, 17, "must end with RETURN"),
        (
            "MATCH (n) RETURN n MATCH (m) RETURN m",
            QuerySyntaxError,
            1,
            11,
            "RETURN must be the last",
        ),
        ("MATCH (n) RETURN {a: 1, a: 2} AS m", QuerySyntaxError, 1, 18, "duplicate key 'a'"),
        ("RETURN [1 | 2] AS l", QuerySyntaxError, 1, 8, "list comprehension must start"),
        ("RETURN reduce(s = 0, 1 | s) AS r", QuerySyntaxError, 1, 8, "reduce must start"),
        ("RETURN [1].d(2) AS r", QuerySyntaxError, 1, 8, "not a function call on a namespace"),
        ("MATCH (n) RETURN end", QuerySyntaxError, 1, 18, "'end' is a reserved word"),
        ("MATCH (where) RETURN 1 AS x", QuerySyntaxError, 1, 13, "unexpected ')'"),
        ("RETURN 9223372036854775809 AS big", QuerySyntaxError, 1, 8, "too large"),
        ("MATCH (n) RETURN m.x", QuerySyntaxError, 1, 18, "variable 'm' is not defined"),
        ("MATCH (n) WITH n.x AS x RETURN n", QuerySyntaxError, 1, 32, "variable 'n' is not"),
        ("MATCH (n) WITH n.x AS x WHERE n.y > 1 RETURN x", QuerySyntaxError, 1, 31, "'n'"),
        ("MATCH (a) WHERE b.x = 1 MATCH (b) RETURN a", QuerySyntaxError, 1, 17, "'b' is not"),
        ("MATCH (n) RETURN [x IN n.l | y] AS l", QuerySyntaxError, 1, 30, "'y' is not defined"),
        ("MATCH (n {k: m.x}) RETURN n", QuerySyntaxError, 1, 14, "'m' is not defined"),
    ],
)
def test_errors_name_line_and_column(
    text: str, error: type[QuerySyntaxError], line: int, column: int, fragment: str
) -> None:
    with pytest.raises(error) as raised:
        parse_query(text)
    assert (raised.value.line, raised.value.column) == (line, column)
    assert fragment in raised.value.message
    assert f"(line {line}, column {column})" in str(raised.value)


@pytest.mark.parametrize(
    "text",
    ["MATCH (n) RETURN n", "MATCH (n) RETURN count(n) AS c", "MATCH (n) RETURN n.x AS x"],
)
def test_supported_queries_are_not_reported_unsupported(text: str) -> None:
    parse_query(text)  # raises on failure


def test_syntax_errors_are_not_reported_as_unsupported() -> None:
    with pytest.raises(QuerySyntaxError) as raised:
        parse_query("MATCH (n) RETURN n +* 1")
    assert not isinstance(raised.value, UnsupportedQueryError)


def test_quoted_reserved_word_is_a_valid_name() -> None:
    query = parse_query("MATCH (`where`) RETURN `where`.x AS x")
    assert query.parts[0].matches[0].paths[0].nodes[0].variable == "where"


def test_names_that_start_with_keywords_are_names() -> None:
    query = parse_query(
        "MATCH (matches:Android) WHERE matches.endsAt IS NULL RETURN matches.orders AS o"
    )
    assert query.parts[0].matches[0].paths[0].nodes[0] == ast.NodePattern("matches", ("Android",))


@pytest.mark.parametrize(
    "text",
    [
        "MATCH (a) WITH a MATCH (a)-[r]->(b) WHERE r.w > a.x RETURN b",
        "MATCH (n) RETURN [x IN n.list WHERE x > 1 | x * 2] AS l",
        "MATCH (n) RETURN reduce(s = 0, x IN n.list | s + x) AS total",
        "MATCH (n:L WHERE n.x > 1)-[r WHERE r.w > n.x]->(m) RETURN m",
        "MATCH (n) WITH n, count(n) AS c WHERE c > 1 AND n.x = 1 RETURN n.x AS x, c",
        "MATCH (n) WITH n.x AS x RETURN x",
        "MATCH (a), (b) WHERE a.x = b.x RETURN a, b",
    ],
)
def test_variables_in_scope_are_accepted(text: str) -> None:
    parse_query(text)  # raises if a variable were reported undefined


def test_parse_expression_allows_free_variables() -> None:
    assert expression("a.x + b") == ast.Binary(ast.BinaryOp.ADD, _prop("a", "x"), B)


@pytest.mark.parametrize(
    ("text", "column", "fragment"),
    [
        ("1 +", 4, "unexpected end"),
        ("nope(1)", 1, "unknown function"),
        ("a b", 3, "unexpected 'b'"),
    ],
)
def test_parse_expression_errors(text: str, column: int, fragment: str) -> None:
    with pytest.raises(QuerySyntaxError) as raised:
        expression(text)
    assert (raised.value.line, raised.value.column) == (1, column)
    assert fragment in raised.value.message
