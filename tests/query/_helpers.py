"""Helpers shared by the query-language tests: evaluate a Cypher expression on a row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drasi_ray.query import ast
from drasi_ray.query.expressions import compile_expression
from drasi_ray.query.parser import parse_expression


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
