"""Compiled expressions: Drasi's value semantics, operator by operator, and the helpers
the engine uses (referenced_variables, contains_aggregate, to_output, hashable_key)."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pytest

from drasi_ray.model.changes import ZERO_VERSION, ElementDelta, node, relation
from drasi_ray.model.errors import QueryError, QueryEvaluationError
from drasi_ray.query import ast
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.query.expressions import (
    compile_expression,
    compile_predicate,
    contains_aggregate,
    referenced_variables,
)
from drasi_ray.query.failures import RowDropped
from drasi_ray.query.temporal import Duration
from drasi_ray.query.values import equals, hashable_key, to_output
from tests.query._helpers import evaluate, expression, same_typed

ROOM = node("room-1", ["Room"], {"temp": 72, "name": "Lab", "tags": ["a", "b"], "meta": {"x": 1}})


# --------------------------------------------------------------------------- comparison


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("null = null", True),
        ("null <> null", False),
        ("1 = null", False),
        ("null = 1", False),
        ("1 <> null", False),  # Drasi's: values of different kinds are not unequal
        ("null <> 1", False),
        ("'a' <> 1", False),
        ("5 = 5.0", True),
        ("5 <> 5.0", False),
        ("5 != 6", True),
        ("'a' = 'a'", True),
        ("'a' = 'A'", False),
        ("1 = '1'", False),
        ("true = 1", False),
        ("true = true", True),
        ("[1, 2] = [1, 2.0]", True),
        ("[1, 2] = [2, 1]", False),
        ("[1, null] = [1, null]", True),
        ("{a: 1} = {a: 1.0}", True),
        ("{a: 1} = {b: 1}", False),
        ("1 < 2", True),
        ("2 <= 2.0", True),
        ("2.5 > 2", True),
        ("3 >= 4", False),
        ("'abc' < 'abd'", True),
        ("1 < null", False),
        ("null >= null", False),
        ("1 < 'a'", False),
        ("true < false", False),
        ("[1] < [2]", False),
        ("1 < true", False),
        ("false >= 0", False),
        ("1 <> true", False),
        ("{a: 1} <> {a: 2}", True),  # Drasi says false for any two maps (docs/conformance.md)
        ("date('2024-01-01') <> datetime('2024-01-01T00:00Z')", False),
        ("r.temp = 72.0", True),
        ("r.temp <> 72.0", False),
        ("r.temp > 71.5", True),
    ],
)
def test_comparisons(text: str, expected: bool | None) -> None:
    assert evaluate(text, {"r": ROOM}) is expected


# --------------------------------------------------------------------------- boolean logic

TRUTH = {"true": True, "false": False, "null": None}


@pytest.mark.parametrize("left", TRUTH)
@pytest.mark.parametrize("right", TRUTH)
def test_two_valued_logic_as_in_drasi(left: str, right: str) -> None:
    # Drasi reads each operand as a predicate (anything but true is false), so the boolean
    # operators never give null; openCypher's three-valued logic would.
    a, b = TRUTH[left] is True, TRUTH[right] is True
    assert evaluate(f"{left} AND {right}") is (a and b)
    assert evaluate(f"{left} OR {right}") is (a or b)
    assert evaluate(f"{left} XOR {right}") is (a != b)


@pytest.mark.parametrize(
    ("text", "expected"), [("NOT true", False), ("NOT false", True), ("NOT null", True)]
)
def test_not(text: str, expected: bool) -> None:
    assert evaluate(text) is expected


@pytest.mark.parametrize("text", ["false AND 1 / 0 = 1", "true OR 1 / 0 = 1"])
def test_and_or_evaluate_both_sides(text: str) -> None:
    # Drasi does not short-circuit AND / OR (expressions/tests/logical.rs,
    # and_not_short_circuited / or_not_short_circuited): a division by zero on the right
    # drops the row even when the left side already decides the result.
    with pytest.raises(RowDropped):
        evaluate(text)


def test_a_where_still_stops_at_its_first_failing_conjunct() -> None:
    # In a WHERE, a dropped row and a failing row are the same (the row does not pass), so
    # the predicate may stop at the first conjunct that is not true.
    predicate = compile_predicate(expression("false AND 1 / 0 = 1"), {})
    assert predicate({}) is False


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1 AND true", False), ("'x' OR false", False), ("NOT 1", True), ("true XOR 0", True)],
)
def test_boolean_operators_read_a_non_boolean_as_false(text: str, expected: bool) -> None:
    # Drasi's evaluate_predicate: a value that is not a Boolean is false.
    assert evaluate(text) is expected


# --------------------------------------------------------------------------- arithmetic


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 + 2", 3),
        ("1 + 2.0", 3.0),
        ("7 - 10", -3),
        ("3 * 4", 12),
        ("3 * 1.5", 4.5),
        ("6 / 3", 2.0),
        ("7 / 2", 3.5),
        ("-7 / 2", -3.5),
        ("7.5 / 2.5", 3.0),
        ("7 % 3", 1),
        ("-7 % 3", -1),
        ("7 % -3", 1),
        ("7.5 % 2", 1.5),
        ("2 ^ 3", 8),
        ("2 ^ -1", 0.5),
        ("-2 ^ 2", 4),
        ("2 * 3 ^ 2", 18),
        ("1 + 2 * 3 - 4 / 2", 5.0),
        ("(1 + 2) * 3", 9),
        ("10 - 2 - 3", 5),
        ("2 ^ 3 ^ 2", 64),
        ("(-8) ^ 0.5", math.nan),
        ("(-8) ^ 2", 64),
        ("-(3)", -3),
        ("+3", 3),
        ("- 2.5", -2.5),
        ("'a' + 'b'", "ab"),
        ("'n' + 1", "n1"),
        ("1.5 + 'x'", "1.5x"),
        ("[1] + [2, 3]", [1, 2, 3]),
        ("[1] + 2", [1, 2]),
        ("0 + [1]", [0, 1]),
        ("1 + null", None),
        ("null - 1", None),
        ("null * null", None),
        ("null / 0", None),
        ("1 % null", None),
        ("null ^ 2", None),
        ("-null", None),
        ("'a' + null", None),
        ("r.temp + 0.5", 72.5),
        ("r.temp - 2", 70),
        ("r.temp * 2", 144),
    ],
)
def test_arithmetic(text: str, expected: Any) -> None:
    assert same_typed(evaluate(text, {"r": ROOM}), expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Integer ^ Integer is an Integer in Drasi (expressions/tests/arithmetic.rs,
        # evaluate_exponent: 2 ^ 3 = Integer 8); any Float operand gives a Float.
        ("2 ^ 3", 8),
        ("0 ^ 0", 1),
        ("(-2) ^ 63", -(2**63)),
        ("1 ^ 100000000000", 1),
        ("(-1) ^ 100000000001", -1),
        ("2.0 ^ 3", 8.0),
        ("2 ^ 3.0", 8.0),
        # Where Drasi fails (a negative exponent, or a power beyond the i64 range, which
        # Rust's pow wraps around), the Float power is given instead.
        ("2 ^ -1", 0.5),
        ("2 ^ 63", 2.0**63),
        ("10 ^ 400", math.inf),
    ],
)
def test_power_of_integers_is_an_integer(text: str, expected: Any) -> None:
    assert same_typed(evaluate(text), expected)


@pytest.mark.parametrize(
    "text", ["1 / 0", "1.0 / 0", "1 / 0.0", "0 / 0", "1 % 0", "1.5 % 0.0", "0 ^ -1"]
)
def test_division_by_zero_drops_the_row(text: str) -> None:
    with pytest.raises(RowDropped):
        evaluate(text)


def test_division_by_zero_from_a_property_drops_the_row() -> None:
    row = {"r": node("r", ["Room"], {"count": 0, "total": 10})}
    with pytest.raises(RowDropped):
        evaluate("r.total / r.count", row)


@pytest.mark.parametrize(
    "text", ["'a' - 1", "true + 1", "1 * 'x'", "{} / 2", "'a' % 2", "2 ^ 'x'", "-'a'", "+'a'"]
)
def test_arithmetic_type_errors(text: str) -> None:
    with pytest.raises(QueryEvaluationError, match="cannot"):
        evaluate(text)


# --------------------------------------------------------------------------- predicates


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("'Drasi Tool' STARTS WITH 'Drasi'", True),
        ("'Drasi Tool' STARTS WITH 'Tool'", False),
        ("'Drasi Tool' ENDS WITH 'Tool'", True),
        ("'Drasi Query Tool' CONTAINS 'Query'", True),
        ("'abc' CONTAINS ''", True),
        ("'abc' CONTAINS 'x'", False),
        ("null STARTS WITH 'a'", None),
        ("'a' ENDS WITH null", None),
        ("1 CONTAINS 'a'", False),
        ("2 IN [1, 2, 3]", True),
        ("2.0 IN [1, 2, 3]", True),
        ("4 IN [1, 2, 3]", False),
        ("null IN [1, null]", True),
        ("1 IN null", None),
        ("[1] IN [[1], [2]]", True),
        ("null IS NULL", True),
        ("1 IS NULL", False),
        ("1 IS NOT NULL", True),
        ("null IS NOT NULL", False),
    ],
)
def test_predicates(text: str, expected: bool | None) -> None:
    assert evaluate(text) is expected


def test_in_rejects_a_non_list() -> None:
    with pytest.raises(QueryEvaluationError, match="IN expects a List"):
        evaluate("1 IN 'abc'")


# --------------------------------------------------------------------------- access


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("r.temp", 72),
        ("r.missing", None),
        ("r.tags[0]", "a"),
        ("r.tags[-1]", "b"),
        ("r.tags[5]", None),
        ("r.tags[0..1]", ["a"]),
        ("r.tags[1..]", ["b"]),
        ("r.tags[..-1]", ["a"]),
        ("r.tags[null..1]", None),
        ("r.meta.x", 1),
        ("r.meta.y", None),
        ("r['name']", "Lab"),
        ("r.meta['x']", 1),
        ("{a: {b: 2}}.a.b", 2),
        ("[1, 2, 3][1]", 2),
        ("missing.x", None),
        ("missing[0]", None),
        ("r.name + '!'", "Lab!"),
    ],
)
def test_property_and_index_access(text: str, expected: Any) -> None:
    row = {"r": ROOM, "missing": None}
    assert same_typed(evaluate(text, row), expected)


def test_relation_properties_are_read_like_nodes() -> None:
    link = relation("c1", ["CONNECTED_TO"], "d1", "d2", {"strength": 0.5})
    assert evaluate("c.strength * 2", {"c": link}) == 1.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("'abc'.x", "cannot read property"),
        ("[1]['a']", "list index"),
        ("1[0]", "cannot index"),
        # A null index is a type error in Drasi (expressions/tests/list_indexing.rs,
        # test_list_indexing_null_indexing), not null as in openCypher.
        ("[5, 1, 7][null]", "list index"),
        ("{a: 1}[null]", "cannot index"),
    ],
)
def test_access_type_errors(text: str, message: str) -> None:
    with pytest.raises(QueryEvaluationError, match=message):
        evaluate(text)


def test_a_null_index_from_a_property_refuses_the_row() -> None:
    query = ContinuousQuery("q", "MATCH (n:A) RETURN n.xs[n.i] AS x")
    delta = ElementDelta(None, node("a1", ["A"], {"xs": [1, 2]}), ZERO_VERSION, 0)
    assert query.apply(delta) == []
    assert any("list index" in message for message in query.take_evaluation_errors())


def test_unknown_variable_is_an_evaluation_error() -> None:
    with pytest.raises(QueryEvaluationError, match="variable 'nope'"):
        evaluate("nope + 1", {})


# --------------------------------------------------------------------------- CASE, lists


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("CASE WHEN 1 > 2 THEN 'a' WHEN 2 > 1 THEN 'b' ELSE 'c' END", "b"),
        ("CASE WHEN null THEN 'a' ELSE 'c' END", "c"),
        ("CASE WHEN false THEN 'a' END", None),
        ("CASE 2 WHEN 1 THEN 'one' WHEN 2.0 THEN 'two' END", "two"),
        ("CASE null WHEN null THEN 'null matches' END", "null matches"),
        ("CASE 3 WHEN 1 THEN 'one' ELSE 'other' END", "other"),
        ("CASE WHEN r.temp > 70 THEN (r.temp - 70) / 2 ELSE 0 END", 1.0),
    ],
)
def test_case(text: str, expected: Any) -> None:
    assert same_typed(evaluate(text, {"r": ROOM}), expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[x IN [1, 2, 3] WHERE x > 1 | x * 10]", [20, 30]),
        ("[x IN [1, 2, 3] WHERE x <> 2]", [1, 3]),
        ("[x IN [1, 2, 3] | x + 0.5]", [1.5, 2.5, 3.5]),
        ("[x IN [1, null, 3] WHERE x > 1]", [3]),
        ("[x IN null | x]", None),
        ("[x IN r.tags | toUpper(x)]", ["A", "B"]),
        ("[x IN [1, 2] | [y IN [10, 20] | x * y]]", [[10, 20], [20, 40]]),
        ("reduce(acc = 0, x IN [1, 2, 3] | acc + x)", 6),
        ("reduce(acc = '', s IN ['a', 'b'] | acc + s)", "ab"),
        ("reduce(acc = 1, x IN [] | acc * x)", 1),
        ("reduce(acc = 0, x IN null | acc + x)", None),
        ("reduce(acc = r.temp, x IN [1] | acc + x)", 73),
        ("[1, r.temp, [null]]", [1, 72, [None]]),
    ],
)
def test_lists_comprehensions_and_reduce(text: str, expected: Any) -> None:
    assert same_typed(evaluate(text, {"r": ROOM}), expected)


def test_comprehension_variable_shadows_row_variable_only_inside() -> None:
    assert evaluate("[x IN [1, 2] | x] + [x]", {"x": 9}) == [1, 2, 9]


def test_map_literal_evaluates_values() -> None:
    assert evaluate("{t: r.temp, n: {k: null}}", {"r": ROOM}) == {"t": 72, "n": {"k": None}}


# --------------------------------------------------------------------------- parameters, calls


def test_parameters_are_bound_at_compile_time() -> None:
    evaluator = compile_expression(expression("r.temp > $limit"), {"limit": 70})
    assert evaluator({"r": ROOM}) is True
    assert evaluate("$name + '!'", parameters={"name": "x"}) == "x!"


def test_missing_parameter_fails_at_compile_time() -> None:
    with pytest.raises(QueryError, match=r"\$limit"):
        compile_expression(expression("r.temp > $limit"), {})


def test_function_calls_evaluate_their_arguments() -> None:
    assert evaluate("toUpper(r.name) + toString(size(r.tags))", {"r": ROOM}) == "LAB2"
    assert evaluate("coalesce(r.missing, r.nothing, r.temp, 1)", {"r": ROOM}) == 72


@pytest.mark.parametrize("name", sorted(ast.AGGREGATE_FUNCTIONS))
def test_aggregates_cannot_be_compiled_as_scalars(name: str) -> None:
    with pytest.raises(QueryEvaluationError, match="engine"):
        compile_expression(ast.FunctionCall(name, (ast.Variable("n"),)), {})


def test_compiling_an_unknown_function_fails() -> None:
    with pytest.raises(QueryEvaluationError, match="unknown function"):
        compile_expression(ast.FunctionCall("nope", ()), {})


# --------------------------------------------------------------------------- predicates


@pytest.mark.parametrize(
    ("text", "passes"),
    [
        ("true", True),
        ("false", False),
        ("null", False),
        ("r.missing = 1", False),
        ("r.missing > 1", False),
        ("r.temp > 70", True),
        ("1", False),
        ("'true'", False),
    ],
)
def test_compile_predicate_passes_only_true(text: str, passes: bool) -> None:
    predicate = compile_predicate(expression(text), {})
    assert predicate({"r": ROOM}) is passes


# --------------------------------------------------------------------------- tree helpers


@pytest.mark.parametrize(
    ("text", "variables"),
    [
        ("1 + 2", set()),
        ("a.x + b", {"a", "b"}),
        ("[x IN a.list WHERE x > b | x + c]", {"a", "b", "c"}),
        ("[x IN x | x]", {"x"}),
        ("reduce(s = a, x IN b | s + x + c)", {"a", "b", "c"}),
        ("CASE d WHEN e THEN f ELSE g END", {"d", "e", "f", "g"}),
        ("drasi.changeDateTime(e)", {"e"}),
        ("count(n.x) + $p", {"n"}),
        ("{k: v}[i]", {"v", "i"}),
        ("a[b..c] IS NULL", {"a", "b", "c"}),
    ],
)
def test_referenced_variables(text: str, variables: set[str]) -> None:
    assert referenced_variables(expression(text)) == frozenset(variables)


@pytest.mark.parametrize(
    ("text", "aggregating"),
    [
        ("count(n)", True),
        ("1 + sum(n.x)", True),
        ("CASE WHEN max(n.x) > 1 THEN 1 END", True),
        ("[x IN collect(n) | x]", True),
        ("toUpper(n.x)", False),
        ("n.count", False),
        ("coalesce(n.x, 1)", False),
    ],
)
def test_contains_aggregate(text: str, aggregating: bool) -> None:
    assert contains_aggregate(expression(text)) is aggregating


# --------------------------------------------------------------------------- output, keys


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        (1, 1),
        (1.5, 1.5),
        ("s", "s"),
        (True, True),
        ([1, [2, None]], [1, [2, None]]),
        ((1, 2), [1, 2]),
        ({"a": dt.date(2024, 1, 15)}, {"a": "2024-01-15"}),
        (ROOM, {"temp": 72, "name": "Lab", "tags": ["a", "b"], "meta": {"x": 1}}),
        (dt.datetime(2024, 1, 15, 10, 30, tzinfo=dt.timezone.utc), "2024-01-15T10:30:00+00:00"),
        (Duration(14, 3, 3600, 0), "P1Y2MT262800S"),
    ],
)
def test_to_output(value: Any, expected: Any) -> None:
    assert to_output(value) == expected


def test_to_output_rejects_unknown_objects() -> None:
    with pytest.raises(QueryEvaluationError):
        to_output(object())


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (5, 5.0),
        ([1, 2], (1.0, 2)),
        ({"a": 1, "b": 2}, {"b": 2.0, "a": 1}),
        (None, None),
        (ROOM, node("room-1", ["Room"], {"temp": 99})),
        (dt.date(2024, 1, 1), dt.date(2024, 1, 1)),
    ],
)
def test_hashable_key_equal_values_share_a_key(left: Any, right: Any) -> None:
    assert equals(left, right)
    assert hashable_key(left) == hashable_key(right)
    assert hash(hashable_key(left)) == hash(hashable_key(right))


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (True, 1),
        (False, 0),
        ([1], 1),
        ([["a", 1]], {"a": 1}),
        ("1", 1),
        (ROOM, "room-1"),
        (node("x", ["A"]), relation("x", ["A"], "a", "b")),
    ],
)
def test_hashable_key_different_values_differ(left: Any, right: Any) -> None:
    assert not equals(left, right)
    assert hashable_key(left) != hashable_key(right)


def test_hashable_key_of_nan_is_stable() -> None:
    assert hashable_key(float("nan")) == hashable_key(float("nan"))
    assert hashable_key(float("nan")) != hashable_key("nan")


def test_hashable_key_groups_rows() -> None:
    groups: dict[Any, int] = {}
    for value in [1, 1.0, True, [1], (1,), None, None]:
        key = hashable_key(value)
        groups[key] = groups.get(key, 0) + 1
    assert sorted(groups.values()) == [1, 2, 2, 2]
