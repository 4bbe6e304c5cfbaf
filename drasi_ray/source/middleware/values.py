"""Helpers shared by the middleware kinds: Drasi's names for value types."""

from __future__ import annotations

from typing import Any


def type_name(value: Any) -> str:
    """The ``ElementValue`` variant name Drasi's messages use for ``value``."""
    if value is None:
        return "Null"
    if isinstance(value, bool):
        return "Bool"
    if isinstance(value, int):
        return "Integer"
    if isinstance(value, float):
        return "Float"
    if isinstance(value, str):
        return "String"
    if isinstance(value, (list, tuple)):
        return "List"
    if isinstance(value, dict):
        return "Object"
    return type(value).__name__
