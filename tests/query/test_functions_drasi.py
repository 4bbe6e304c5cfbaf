"""Scalar functions where Drasi's own implementation (drasi-core
``core/src/evaluation/functions/**``) gives a value that a plain openCypher or Python reading
would not. Each case names the drasi-core file it follows."""

from __future__ import annotations

from typing import Any

import pytest

from drasi_ray.model.changes import ZERO_VERSION, ElementDelta, node
from drasi_ray.model.errors import QueryEvaluationError
from drasi_ray.query.engine import ContinuousQuery
from tests.query._helpers import evaluate, same_typed


def _returned(expression: str, properties: dict[str, Any]) -> Any:
    """The value a continuous query returns for ``expression`` over one new node."""
    query = ContinuousQuery("q", f"MATCH (n:A) RETURN {expression} AS v")
    diffs = query.apply(ElementDelta(None, node("a1", ["A"], properties), ZERO_VERSION, 0))
    assert query.take_evaluation_errors() == []
    assert [diff["type"] for diff in diffs] == ["ADD"]
    return diffs[0]["data"]["v"]


# --------------------------------------------------------------------------- text/text.rs


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # An empty search string leaves the text alone (Python's str.replace would put the
        # replacement between every character).
        ("replace('abc', '', 'x')", "abc"),
        ("replace('', '', 'x')", ""),
        ("replace('a.b', '.', '')", "ab"),
    ],
)
def test_replace(text: str, expected: Any) -> None:
    assert same_typed(evaluate(text), expected)


def test_replace_of_a_property_through_a_query() -> None:
    assert _returned("replace(n.name, n.search, '-')", {"name": "abc", "search": ""}) == "abc"


def test_replace_with_an_empty_search_still_checks_the_replacement() -> None:
    with pytest.raises(QueryEvaluationError, match="replace"):
        evaluate("replace('abc', '', 5)")


@pytest.mark.parametrize(
    ("function", "expected"),
    [("trim", "\x1c a \x1f"), ("ltrim", "\x1c a \x1f\u3000"), ("rtrim", "\xa0\x1c a \x1f")],
)
def test_trim_removes_unicode_white_space_only(function: str, expected: str) -> None:
    # Rust's trim stops at the information separators U+001C..U+001F, which Python's
    # str.strip() counts as space; both remove U+00A0 and U+3000.
    text = "\xa0\x1c a \x1f\u3000"
    assert _returned(f"{function}(n.text)", {"text": text}) == expected


# --------------------------------------------------------------------------- numeric_round.rs


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A tie goes up, toward positive infinity: -2.5 gives -2.0 (Neo4j's rule too).
        ("round(2.5)", 3.0),
        ("round(-2.5)", -2.0),
        ("round(-2.6)", -3.0),
        ("round(-0.7)", -1.0),
        ("round(0.49999999999999994)", 0.0),
        ("round(3)", 3.0),
        # With a precision the value is scaled by 10^p in binary floating point, as Drasi
        # does: 1.005 * 100 is 100.49999999999999, so no tie.
        ("round(3.141592653589793, 3)", 3.142),
        ("round(-1.5, 0)", -1.0),
        ("round(-1.5555, 3)", -1.555),
        ("round(1.005, 2)", 1.0),
        ("round(2.675, 2)", 2.68),
        ("round(1234.5, -2)", 1200.0),
        # An Integer has no digit below its units: with a precision it comes back as it is.
        ("round(3, 1)", 3),
        ("round(-7, 0)", -7),
        ("round(1.5, null)", None),
    ],
)
def test_round(text: str, expected: Any) -> None:
    assert same_typed(evaluate(text), expected)


def test_round_through_a_query() -> None:
    assert same_typed(_returned("round(n.x)", {"x": -4.5}), -4.0)
    assert same_typed(_returned("round(n.x, 2)", {"x": 2}), 2)


@pytest.mark.parametrize(
    ("value", "places", "mode", "expected"),
    [
        (1.249, 1, "UP", 1.3),  # UP and DOWN: away from and toward zero
        (-1.251, 1, "UP", -1.3),
        (-1.35, 1, "UP", -1.4),
        (1.249, 1, "DOWN", 1.2),
        (-1.251, 1, "DOWN", -1.2),
        (1.249, 1, "CEILING", 1.3),
        (-1.251, 1, "CEILING", -1.2),
        (1.249, 1, "FLOOR", 1.2),
        (-1.251, 1, "FLOOR", -1.3),
        (1.249, 1, "HALF_UP", 1.2),  # HALF_UP: a tie away from zero
        (1.25, 1, "HALF_UP", 1.3),
        (-1.35, 1, "HALF_UP", -1.4),
        (1.25, 1, "HALF_DOWN", 1.2),  # HALF_DOWN: a tie toward zero
        (-1.35, 1, "HALF_DOWN", -1.3),
        (-1.251, 1, "HALF_DOWN", -1.3),
        (1.25, 1, "HALF_EVEN", 1.2),  # HALF_EVEN: a tie to the even neighbour
        (1.222335, 5, "HALF_EVEN", 1.22234),
        (-1.35, 1, "HALF_EVEN", -1.4),
        (-1.23455, 4, "HALF_EVEN", -1.2346),
        (2.5, 0, "half_even", 2.0),  # the mode in any case
    ],
)
def test_round_with_a_mode(value: float, places: int, mode: str, expected: float) -> None:
    assert same_typed(evaluate(f"round({value}, {places}, '{mode}')"), expected)


@pytest.mark.parametrize("text", ["round(1.5, 0, null)", "round(null, 0, 'UP')"])
def test_round_with_a_null_mode_or_value_is_null(text: str) -> None:
    assert evaluate(text) is None


@pytest.mark.parametrize("text", ["round(1.5, 0, 'NEAREST')", "round(1.5, 0, 1)"])
def test_round_with_an_unknown_mode_is_an_error(text: str) -> None:
    with pytest.raises(QueryEvaluationError, match="round"):
        evaluate(text)


def test_round_with_a_mode_through_a_query() -> None:
    assert same_typed(_returned("round(n.x, 1, 'CEILING')", {"x": 1.21}), 1.3)


# --------------------------------------------------------------------------- list/tail.rs


@pytest.mark.parametrize(
    ("text", "expected"), [("tail([])", None), ("tail([1])", []), ("tail([1, 2])", [2])]
)
def test_tail(text: str, expected: Any) -> None:
    # The tail of an empty list is null, not an empty list.
    assert same_typed(evaluate(text), expected)


def test_tail_of_an_empty_property_through_a_query() -> None:
    assert _returned("tail(n.items)", {"items": []}) is None


# --------------------------------------------------------- list/distinct.rs, index_of.rs, insert.rs


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Drasi registers coll.distinct, coll.indexOf and coll.insert with its Cypher
        # functions (expressions/tests/list_functions.rs: test_distinct, test_index_of,
        # test_insert).
        ("coll.distinct([1, 2, 2, 3, 1])", [1, 2, 3]),
        (
            "coll.distinct([1, true, true, null, 'a', false, true, 1, null])",
            [1, True, None, "a", False],
        ),
        ("coll.distinct([])", []),
        ("coll.distinct(null)", None),
        ("coll.indexOf(['a', 'b', 'c'], 'b')", 1),
        ("coll.indexOf(['a', 'b', 'c', 'c'], 'c')", 2),
        ("coll.indexOf([1, 'b', false], 4.3)", -1),
        ("coll.indexOf([], 'a')", -1),
        ("coll.indexOf(null, 'a')", None),
        ("coll.indexOf([1], null)", None),
        ("coll.insert([1, 2, 3], 1, 99)", [1, 99, 2, 3]),
        ("coll.insert([1, 2], 0, 0)", [0, 1, 2]),
        ("coll.insert([1, 2], 2, 3)", [1, 2, 3]),
        ("coll.insert([], 0, 'first')", ["first"]),
        ("coll.insert(null, 1, 'v')", None),
        ("coll.insert([1], null, 'v')", None),
        ("coll.insert([1], 0, null)", [None, 1]),
    ],
)
def test_coll_functions(text: str, expected: Any) -> None:
    assert same_typed(evaluate(text), expected)


@pytest.mark.parametrize(
    "text",
    [
        "coll.distinct(42)",
        "coll.indexOf(42, 'a')",
        "coll.insert([1], -1, 'v')",
        "coll.insert([1], 5, 'v')",
        "coll.insert([1], 0.5, 'v')",
        "coll.insert(42, 0, 'v')",
    ],
)
def test_coll_functions_reject_bad_arguments(text: str) -> None:
    with pytest.raises(QueryEvaluationError, match="coll"):
        evaluate(text)


def test_coll_functions_through_a_query() -> None:
    assert _returned("coll.indexOf(n.tags, 'b')", {"tags": ["a", "b"]}) == 1
    assert _returned("coll.distinct(n.tags)", {"tags": ["a", "a"]}) == ["a"]


# --------------------------------------------------------------------------- cypher_scalar/


def test_coalesce_of_nothing_is_null() -> None:
    # Drasi's coalesce takes any number of arguments, none included.
    assert _returned("coalesce()", {}) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Drasi registers char_length and character_length (cypher_scalar/char_length.rs,
        # expressions/tests/cypher_scalar.rs: evaluate_char_length_with_string).
        ("char_length('drasi')", 5),
        ("char_length('ReactiveGraph1')", 14),
        ("character_length('drasi')", 5),
        ("CHAR_LENGTH('')", 0),
        ("char_length(null)", None),
        # Characters, not UTF-8 bytes (Drasi counts bytes; see char_length in functions.py).
        ("char_length('héllo')", 5),
    ],
)
def test_char_length(text: str, expected: Any) -> None:
    assert same_typed(evaluate(text), expected)


@pytest.mark.parametrize("text", ["char_length(42)", "character_length(['a'])"])
def test_char_length_of_a_non_string_is_an_error(text: str) -> None:
    with pytest.raises(QueryEvaluationError, match="char"):
        evaluate(text)


def test_char_length_through_a_query() -> None:
    assert _returned("char_length(n.name)", {"name": "abc"}) == 3


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The ...OrNull conversions Drasi registers (cypher_scalar/to_integer.rs, to_float.rs,
        # to_boolean.rs and their tests): as toInteger / toFloat / toBoolean, but a value of a
        # type they do not convert gives null instead of an error.
        ("toIntegerOrNull(1)", 1),
        ("toIntegerOrNull(3.7)", 3),
        ("toIntegerOrNull(-4.5)", -5),
        ("toIntegerOrNull('3.14')", 3),
        ("toIntegerOrNull('true')", None),
        ("toIntegerOrNull(true)", 1),
        ("toIntegerOrNull([])", None),
        ("toIntegerOrNull({a: 1})", None),
        ("toIntegerOrNull(date('2024-01-02'))", None),
        ("toIntegerOrNull(null)", None),
        ("toFloatOrNull('11.5')", 11.5),
        ("toFloatOrNull('-11')", -11.0),
        ("toFloatOrNull('abc')", None),
        ("toFloatOrNull(2)", 2.0),
        ("toFloatOrNull(true)", None),
        ("toFloatOrNull([1])", None),
        ("toBooleanOrNull(1.0)", None),
        ("toBooleanOrNull(0)", False),
        ("toBooleanOrNull(7)", True),
        ("toBooleanOrNull('false')", False),
        ("toBooleanOrNull('True')", True),
        ("toBooleanOrNull('yes')", None),
        ("toBooleanOrNull(true)", True),
        ("toBooleanOrNull(['true'])", None),
    ],
)
def test_conversions_or_null(text: str, expected: Any) -> None:
    assert same_typed(evaluate(text), expected)


def test_a_conversion_or_null_through_a_query() -> None:
    assert _returned("toIntegerOrNull(n.x)", {"x": [1]}) is None
    assert _returned("toFloatOrNull(n.x)", {"x": "2.5"}) == 2.5


@pytest.mark.parametrize("text", ["size({a: 1})", "size(42)", "size(true)"])
def test_size_of_anything_but_a_string_or_list_is_an_error(text: str) -> None:
    # cypher_scalar/size.rs takes a List, a String or null; a Map is an invalid argument
    # (isEmpty does take a Map).
    with pytest.raises(QueryEvaluationError, match="size"):
        evaluate(text)


# --------------------------------------------------------------------------- drasi/stdevp.rs


@pytest.mark.parametrize(
    "text",
    [
        "drasi.stdevp([0, 1, 3.1415, -12, 9.0])",
        # null and anything but a number in the list are left out
        "drasi.stdevp([0, 1, 3.1415, -12, 9.0, null])",
        "drasi.stdevp([0, 'a', 1, true, 3.1415, [2], -12, 9.0])",
    ],
)
def test_stdevp(text: str) -> None:
    # drasi/tests/stdevp_tests.rs: the population standard deviation, 6.8645235493805.
    assert evaluate(text) == pytest.approx(6.8645235493805, abs=1e-8)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("drasi.stdevp(null)", None),
        ("drasi.stdevp([4])", 0.0),
        ("drasi.stdevp([2, 4])", 1.0),
        ("drasi.stdevp([])", None),
        ("drasi.stdevp([null, 'a'])", None),
    ],
)
def test_stdevp_edges(text: str, expected: Any) -> None:
    assert same_typed(evaluate(text), expected)


def test_stdevp_of_a_non_list_is_an_error() -> None:
    with pytest.raises(QueryEvaluationError, match="stdevp"):
        evaluate("drasi.stdevp(5)")


def test_stdevp_through_a_query() -> None:
    assert _returned("drasi.stdevp(n.xs)", {"xs": [1, 3]}) == 1.0
