"""Scalar functions: each one through a compiled expression, with openCypher's null rule."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

from drasi_ray.model.changes import node, relation
from drasi_ray.model.errors import QueryEvaluationError
from drasi_ray.query import ast, functions
from drasi_ray.query.parser import parse_query
from tests.query._helpers import evaluate, same_typed

ROOM = node("room-1", ["Room", "Space"], {"temp": 72, "name": "Lab"}, effective_from=1_000)
LINK = relation("link-1", ["CONNECTED_TO"], "d1", "d2", {"w": 2})
ROW = {"r": ROOM, "c": LINK, "nothing": None}


CASES: list[tuple[str, Any]] = [
    # text
    ("toUpper('abc')", "ABC"),
    ("toLower('AbC')", "abc"),
    ("trim('  a b  ')", "a b"),
    ("ltrim('  a ')", "a "),
    ("rtrim('  a ')", "  a"),
    ("reverse('abc')", "cba"),
    ("reverse([1, 2, 3])", [3, 2, 1]),
    ("left('hello', 2)", "he"),
    ("left('hi', 10)", "hi"),
    ("right('hello', 3)", "llo"),
    ("right('hello', 0)", ""),
    ("right('hi', 10)", "hi"),
    ("replace('a-b-c', '-', '+')", "a+b+c"),
    ("split('a,b,,c', ',')", ["a", "b", "", "c"]),
    ("split('abc', '')", ["a", "b", "c"]),
    ("substring('hello', 1)", "ello"),
    ("substring('hello', 1, 3)", "ell"),
    ("substring('hello', 10)", ""),
    ("toString(1)", "1"),
    ("toString(1.0)", "1"),  # Drasi prints a Float with Rust's f64 Display
    ("toString([1, 'a'])", "[1, a]"),
    ("toString(2.5)", "2.5"),
    ("toString(true)", "true"),
    ("toString('s')", "s"),
    ("toString(date('2024-01-15'))", "2024-01-15"),
    # numeric
    ("abs(-3)", 3),
    ("abs(-3.5)", 3.5),
    ("ceil(1.2)", 2.0),
    ("ceil(2)", 2.0),
    ("floor(1.8)", 1.0),
    ("floor(-1.2)", -2.0),
    ("floor(3)", 3.0),
    ("round(2.5)", 3.0),
    ("round(-2.5)", -2.0),  # a tie goes toward positive infinity (Drasi)
    ("round(2.4)", 2.0),
    ("round(3)", 3.0),
    ("round(3.14159, 2)", 3.14),
    ("round(1.005, 2)", 1.0),  # 1.005 * 100 < 100.5 in binary floating point (Drasi)
    ("round(1e28)", 1e28),
    ("floor(1e308 * 10)", math.inf),
    ("ceil(-1e308 * 10)", -math.inf),
    ("ceil(sqrt(-1))", math.nan),
    ("round(1.5e300, -1)", 1.5e300),
    ("round(12345.6, 30)", 12345.6),
    ("round(1e300, -400)", 0.0),
    ("sign(-2)", -1),
    ("sign(0.0)", 0),
    ("sign(5)", 1),
    ("sqrt(16)", 4.0),
    ("sqrt(-1)", math.nan),
    ("log(1)", 0.0),
    ("exp(0)", 1.0),
    ("log10(100)", 2.0),
    ("pi()", math.pi),
    ("e()", math.e),
    # scalar
    ("size([1, 2, 3])", 3),
    ("size('abcd')", 4),
    ("size([])", 0),
    ("coalesce(null, null, 2, 3)", 2),
    ("coalesce(null)", None),
    ("head([1, 2])", 1),
    ("head([])", None),
    ("last([1, 2])", 2),
    ("last([])", None),
    ("toInteger('42')", 42),
    ("toInteger('4.9')", 4),
    ("toInteger(-4.9)", -5),  # Drasi floors
    ("toInteger('x')", None),
    ("toInteger(true)", 1),
    ("toInteger(7)", 7),
    ("toFloat('1.5')", 1.5),
    ("toFloat(2)", 2.0),
    ("toFloat('nope')", None),
    ("toBoolean('TRUE')", True),
    ("toBoolean(' false ')", None),  # Drasi does not trim
    ("toBoolean('yes')", None),
    ("toBoolean(0)", False),
    ("toBoolean(true)", True),
    ("nullIf(1, 1.0)", None),
    ("nullIf(1, 2)", 1),
    ("nullIf(null, null)", None),
    ("isEmpty([])", True),
    ("isEmpty('')", True),
    ("isEmpty({})", True),
    ("isEmpty([0])", False),
    ("isEmpty('a')", False),
    # lists
    ("range(1, 4)", [1, 2, 3, 4]),
    ("range(0, 10, 3)", [0, 3, 6, 9]),
    ("range(5, 1, -2)", [5, 3, 1]),
    ("range(1, 0)", []),
    ("tail([1, 2, 3])", [2, 3]),
    ("tail([])", None),  # Drasi
    # graph
    ("elementId(r)", "room-1"),
    ("elementId(c)", "link-1"),
    ("labels(r)", ["Room", "Space"]),
    ("keys(r)", ["temp", "name"]),
    ("keys({a: 1, b: 2})", ["a", "b"]),
    ("properties(c)", {"w": 2}),
    ("type(c)", "CONNECTED_TO"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_function(text: str, expected: Any) -> None:
    assert same_typed(evaluate(text, ROW), expected)


NULL_IN_NULL_OUT = [
    "toUpper(nothing)",
    "toLower(nothing)",
    "trim(nothing)",
    "ltrim(nothing)",
    "rtrim(nothing)",
    "reverse(nothing)",
    "left(nothing, 1)",
    "left('a', nothing)",
    "right(nothing, 1)",
    "replace(nothing, 'a', 'b')",
    "replace('a', nothing, 'b')",
    "replace('a', 'a', nothing)",
    "split(nothing, ',')",
    "split('a', nothing)",
    "substring(nothing, 1)",
    "substring('abc', nothing)",
    "toString(nothing)",
    "abs(nothing)",
    "ceil(nothing)",
    "floor(nothing)",
    "round(nothing)",
    "sign(nothing)",
    "sqrt(nothing)",
    "size(nothing)",
    "head(nothing)",
    "last(nothing)",
    "toInteger(nothing)",
    "toFloat(nothing)",
    "toBoolean(nothing)",
    "isEmpty(nothing)",
    "tail(nothing)",
    "elementId(nothing)",
    "labels(nothing)",
    "keys(nothing)",
    "properties(nothing)",
    "type(nothing)",
    "drasi.changeDateTime(nothing)",
    "date(nothing)",
    "datetime(nothing)",
    "localdatetime(nothing)",
    "localtime(nothing)",
    "time(nothing)",
    "duration(nothing)",
    "duration.between(nothing, date())",
    "datetime.fromEpochMillis(nothing)",
]


@pytest.mark.parametrize("text", NULL_IN_NULL_OUT)
def test_null_in_null_out(text: str) -> None:
    assert evaluate(text, ROW) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("toUpper(1)", r"toUpper\(\) expects a String, got Integer"),
        ("left('abc', -1)", "must not be negative"),
        ("left('abc', 1.5)", "expects an Integer"),
        ("substring('abc', -1)", "must not be negative"),
        ("abs('x')", "expects a number"),
        ("round(1.5, 'x')", "expects an Integer"),
        ("size(5)", "expects a String or a List"),
        ("head('abc')", "expects a List"),
        ("range(1, 5, 0)", "step must not be zero"),
        ("range(1, 'x')", "expects an Integer"),
        ("elementId('room-1')", "expects a node or relationship"),
        ("labels({a: 1})", "expects a node or relationship"),
        ("type(r)", "expects a relationship"),
        ("toInteger([1])", "expects a String, number or Boolean"),
        ("isEmpty(1)", "expects a String, List or Map"),
        ("toString({a: 1})", "cannot convert Map"),
    ],
)
def test_wrong_argument_types_are_evaluation_errors(text: str, message: str) -> None:
    with pytest.raises(QueryEvaluationError, match=message):
        evaluate(text, ROW)


def test_change_date_time_is_the_elements_effective_from() -> None:
    value = evaluate("drasi.changeDateTime(r)", ROW)
    assert value.isoformat() == "1970-01-01T00:00:01+00:00"
    assert evaluate("drasi.changeDateTime(r).epochMillis", ROW) == 1_000


def test_rand_is_a_float_in_the_unit_interval() -> None:
    values = {evaluate("rand()") for _ in range(20)}
    assert all(isinstance(value, float) and 0.0 <= value < 1.0 for value in values)
    assert len(values) > 1


def test_timestamp_is_now_in_milliseconds() -> None:
    before = time.time_ns() // 1_000_000
    value = evaluate("timestamp()")
    assert isinstance(value, int)
    assert before <= value <= time.time_ns() // 1_000_000


def test_function_names_are_case_insensitive() -> None:
    assert evaluate("TOUPPER('a') + toupper('b') + ToUpper('c')") == "ABC"
    assert evaluate("DRASI.CHANGEDATETIME(r).epochMillis", ROW) == 1_000


# --------------------------------------------------------------------------- the registry


def test_every_function_of_the_spec_is_registered() -> None:
    required = {
        "toupper", "tolower", "trim", "ltrim", "rtrim", "reverse", "left", "right",
        "replace", "split", "substring", "tostring", "abs", "ceil", "floor", "round",
        "sign", "rand", "size", "coalesce", "head", "last", "tointeger", "tofloat",
        "toboolean", "nullif", "isempty", "timestamp", "range", "tail", "elementid",
        "drasi.changedatetime", "date", "datetime", "duration",
    }  # fmt: skip
    assert required <= set(functions.FUNCTIONS)


def test_aggregates_are_known_but_not_scalar_functions() -> None:
    assert functions.AGGREGATES == ast.AGGREGATE_FUNCTIONS
    assert not functions.AGGREGATES & set(functions.FUNCTIONS)
    assert all(functions.is_aggregate(name.upper()) for name in functions.AGGREGATES)


@pytest.mark.parametrize("name", sorted(functions.FUNCTIONS))
def test_registry_keys_are_lower_case_and_parse(name: str) -> None:
    spec = functions.FUNCTIONS[name]
    assert spec.name == name == name.lower()
    args = ", ".join(["null"] * spec.min_args)
    call = parse_query(f"RETURN {name}({args}) AS v").returns.items[0].expression
    assert call == ast.FunctionCall(name, (ast.Literal(None),) * spec.min_args)


@pytest.mark.parametrize(
    ("spec", "count", "accepted", "text"),
    [
        (functions.FunctionSpec("f", abs, 1, 1), 1, True, "1 argument"),
        (functions.FunctionSpec("f", abs, 2, 2), 1, False, "2 arguments"),
        (functions.FunctionSpec("f", abs, 1, 3), 4, False, "1 to 3 arguments"),
        (functions.FunctionSpec("f", abs, 1, None), 9, True, "at least 1 arguments"),
    ],
)
def test_function_spec_arity(
    spec: functions.FunctionSpec, count: int, accepted: bool, text: str
) -> None:
    assert spec.accepts(count) is accepted
    assert spec.arity_text() == text
