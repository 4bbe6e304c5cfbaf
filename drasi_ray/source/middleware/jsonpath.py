"""JSONPath as Drasi's middleware evaluates it (``jsonpath-rust`` 0.5), on python-jsonpath.

One difference from standard JSONPath matters to Drasi's configs: a filter applied to the root
(``$[?(@.kind == 'telemetry')]``) tests the root object itself, selecting it when it matches
(jsonpath-rust 0.5 filters an object as a one-item list); standard JSONPath would test the
object's member values. :class:`JsonPath` keeps Drasi's reading.
"""

from __future__ import annotations

from typing import Any

import jsonpath

from drasi_ray.model.errors import ConfigError

__all__ = ["JsonPath"]


class JsonPath:
    """A compiled JSONPath expression; a syntax error is a ConfigError naming ``where``."""

    __slots__ = ("_compiled", "_root_filter", "expression")

    def __init__(self, expression: str, where: str) -> None:
        if not expression:
            raise ConfigError(f"{where}: empty JSONPath")
        self.expression = expression
        self._root_filter = expression.replace(" ", "").startswith("$[?")
        try:
            self._compiled = jsonpath.compile(expression)
        except jsonpath.JSONPathError as exc:
            reason = str(exc).splitlines()[0]
            raise ConfigError(f"{where}: invalid JSONPath {expression!r}: {reason}") from exc

    def find(self, value: Any) -> list[Any]:
        """Every value the expression selects, in document order."""
        target = [value] if self._root_filter and isinstance(value, dict) else value
        return list(self._compiled.findall(target))

    def __repr__(self) -> str:
        return f"JsonPath({self.expression!r})"
