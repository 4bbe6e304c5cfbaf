"""The kinds of property value a graph element holds, told apart once.

An element's property values are JSON values (decoded at the stream boundary) or what a
middleware or the query engine made of them: ``None``, booleans, integers, floats, strings,
lists (or tuples) and maps. :func:`value_kind` says which, and each kind carries its names in
the two vocabularies messages use: Cypher's (the query engine's errors) and Drasi's
``ElementValue`` variants (the middleware's errors, as Drasi words them). A ``bool`` is never
an integer here, as in Cypher and Drasi.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

__all__ = ["ValueKind", "value_kind"]


class ValueKind(enum.Enum):
    """A kind of value, with its Cypher name and its Drasi ``ElementValue`` variant name."""

    NULL = ("Null", "Null")
    BOOLEAN = ("Boolean", "Bool")
    INTEGER = ("Integer", "Integer")
    FLOAT = ("Float", "Float")
    STRING = ("String", "String")
    LIST = ("List", "List")
    MAP = ("Map", "Object")

    def __init__(self, cypher_name: str, element_value_name: str) -> None:
        self.cypher_name = cypher_name
        self.element_value_name = element_value_name


def value_kind(value: Any) -> ValueKind | None:
    """The kind of ``value``; None for a value of none of them (an element, a temporal value,
    anything else the caller names itself)."""
    if value is None:
        return ValueKind.NULL
    if isinstance(value, bool):
        return ValueKind.BOOLEAN
    if isinstance(value, int):
        return ValueKind.INTEGER
    if isinstance(value, float):
        return ValueKind.FLOAT
    if isinstance(value, str):
        return ValueKind.STRING
    if isinstance(value, (list, tuple)):
        return ValueKind.LIST
    if isinstance(value, Mapping):
        return ValueKind.MAP
    return None
