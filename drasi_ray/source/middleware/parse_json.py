"""``parse_json``: parse a property holding JSON text into a value (map, list, ...).

Config (Drasi's): ``target_property`` (required), ``output_property`` (default: overwrite the
target), ``on_error`` (``fail``, the default, or ``skip``: pass the change on unchanged),
``max_json_size`` (1 MiB), ``max_nesting_depth`` (20). Inserts and updates are parsed; deletes
pass through. A missing or non-string target, an oversized text, control characters other than
tab, CR and LF, text that is not JSON, or JSON nested too deep is an error.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from drasi_ray.model.value_kinds import I64_MAX, I64_MIN
from drasi_ray.source.middleware.base import (
    Change,
    ElementLookup,
    PropertyConfig,
    parse_config,
    set_property,
    type_name,
)


class ParseJsonConfig(PropertyConfig):
    output_property: str | None = Field(None, min_length=1)
    max_json_size: int = Field(1024 * 1024, ge=1)
    max_nesting_depth: int = Field(20, ge=1)


def parse_json_as_drasi(text: str) -> Any:
    """``text`` read as Drasi reads JSON (serde_json, then ``ElementValue``): an integer that
    fits an i64 is an Integer, a wider one a Float, ``-0`` is the Float ``-0.0``; a number too
    large for a double, the non-JSON ``NaN`` / ``Infinity`` and an escaped lone surrogate are
    errors (ValueError), where Python's own reader would give ``inf``, ``nan``, an unbounded
    int or a string no property value can hold."""
    value = json.loads(text, parse_int=_integer, parse_float=_double, parse_constant=_not_json)
    if "\\u" in text:  # only an escape can make a lone surrogate, which serde_json refuses
        _check_text(value)
    return value


def _check_text(value: Any) -> None:
    """ValueError if a string (or key) holds a lone surrogate, at any depth."""
    if isinstance(value, str):
        value.encode("utf-8")  # UnicodeEncodeError is a ValueError
    elif isinstance(value, list):
        for item in value:
            _check_text(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(key)
            _check_text(item)


def _integer(text: str) -> int | float:
    value = int(text)
    if value == 0 and text.startswith("-"):
        return -0.0
    return value if I64_MIN <= value <= I64_MAX else float(value)


def _double(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number out of range: {text}")
    return value


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def nesting_depth(value: Any) -> int:
    """1 for a scalar, 1 + the deepest member for a list or map (as Drasi counts)."""
    if isinstance(value, dict):
        return 1 + max((nesting_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((nesting_depth(v) for v in value), default=0)
    return 1


class ParseJson:
    """Replaces (or adds) a property with the value its JSON text stands for."""

    def __init__(self, name: str, raw: Mapping[str, Any]) -> None:
        self.name = name
        self._config = parse_config(ParseJsonConfig, name, "parse_json", raw)

    def process(self, change: Change, index: ElementLookup) -> list[Change]:
        return set_property(self.name, self._config, change, self._parse)

    def _parse(self, properties: Mapping[str, Any]) -> Any:
        config = self._config
        target = config.target_property
        if target not in properties:
            raise ValueError(
                f"[Error: MissingProperty] Target property '{target}' not found in element. "
                "Cannot parse JSON."
            )
        text = properties[target]
        if not isinstance(text, str):
            raise ValueError(
                f"[Error: InvalidType] Target property '{target}' is not a String "
                f"(Type: {type_name(text)}). Cannot parse JSON."
            )
        if len(text.encode()) > config.max_json_size:
            raise ValueError(
                f"[Error: SizeExceeded] JSON string in property '{target}' exceeds maximum "
                f"allowed size ({len(text.encode())} > {config.max_json_size} bytes)"
            )
        if any((ord(c) < 32 and c not in "\n\r\t") or 127 <= ord(c) < 160 for c in text):
            raise ValueError(
                "[Error: InvalidInput] JSON string contains invalid control characters"
            )
        try:
            parsed = parse_json_as_drasi(text)
        except ValueError as exc:
            raise ValueError(
                f"[Error: ParseError] Failed to parse JSON string in property '{target}': {exc}"
            ) from exc
        depth = nesting_depth(parsed)
        if depth > config.max_nesting_depth:
            raise ValueError(
                f"[Error: DeepNesting] JSON nesting depth ({depth}) exceeds maximum allowed "
                f"depth ({config.max_nesting_depth})"
            )
        return parsed
