"""Helpers shared by the query-language tests: evaluate a Cypher expression on a row, and
compare or show what it gave."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from drasi_ray.query import ast, temporal
from drasi_ray.query.expressions import compile_expression
from drasi_ray.query.parser import parse_expression
from drasi_ray.query.values import to_output


def expression(text: str) -> ast.Expr:
    """The AST of a single Cypher expression (free variables allowed)."""
    return parse_expression(text)


def evaluate(
    text: str,
    row: Mapping[str, Any] | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> Any:
    """Parse, compile and evaluate one expression against ``row``."""
    return compile_expression(expression(text), parameters or {})(row or {})


def same_typed(actual: Any, expected: Any) -> bool:
    """Equal and of the same type, at any depth of lists (2 and 2.0, or 1 and true, differ;
    NaN equals NaN)."""
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(map(same_typed, actual, expected))
        )
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(actual, float) and math.isnan(actual)
    return type(actual) is type(expected) and actual == expected


def as_text(text: str, row: Mapping[str, Any] | None = None) -> Any:
    """An expression's value, a temporal one as its ISO text (what ``toString`` gives, readable
    unit by unit); the text written in result rows is tested in test_output_values.py."""
    value = evaluate(text, row)
    iso = temporal.to_iso(value)
    return to_output(value) if iso is None else iso
