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

__all__ = ["I64_MAX", "I64_MIN", "ValueKind", "as_element_value", "value_kind"]

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1
"""The range of Drasi's ``ElementValue::Integer`` (an i64)."""


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


def as_element_value(value: Any) -> Any:
    """``value`` (decoded JSON) as Drasi holds it: an integer beyond the i64 range becomes a
    float, at any depth (Drasi reads JSON with serde_json, whose wider integers it takes as
    ``Float``); lists and maps keep their shape (rebuilt: the result is the caller's). A
    ``bool`` stays a ``bool``."""
    kind = type(value)
    if kind is int:
        return value if I64_MIN <= value <= I64_MAX else float(value)
    if kind is list:
        return [as_element_value(item) for item in value]
    if kind is dict:
        return {key: as_element_value(item) for key, item in value.items()}
    return value
