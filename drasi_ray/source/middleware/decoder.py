"""``decoder``: decode an encoded string property (base64, base64url, hex, url, json_escape).

Config (Drasi's): ``encoding_type`` (required), ``target_property`` (required),
``output_property`` (default: overwrite the target), ``strip_quotes`` (remove every leading and
trailing ``"`` first), ``on_error`` (``fail``, the default, or ``skip``: pass the change on
unchanged), ``max_size_bytes`` (1 MiB). Inserts and updates are decoded; deletes pass through.
A missing target, a non-string target, an oversized value or a failed decode is an error.
"""

from __future__ import annotations

import base64
import binascii
import json
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import Field

from drasi_ray.model.changes import Op
from drasi_ray.source.middleware.base import (
    Change,
    ConfigModel,
    ElementLookup,
    fail,
    parse_config,
    with_properties,
)
from drasi_ray.source.middleware.values import type_name


class DecoderConfig(ConfigModel):
    encoding_type: Literal["base64", "base64url", "hex", "url", "json_escape"]
    target_property: str = Field(min_length=1)
    output_property: str | None = None
    strip_quotes: bool = False
    on_error: Literal["fail", "skip"] = "fail"
    max_size_bytes: int = Field(1024 * 1024, ge=1)


def _utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"Decoded bytes are not valid UTF-8: {exc}") from exc


def _base64(text: str) -> str:
    try:
        return _utf8(base64.b64decode(text, validate=True))
    except binascii.Error as exc:
        raise ValueError(f"Invalid base64 encoding: {exc}") from exc


def _base64url(text: str) -> str:
    if "=" in text:
        raise ValueError("Invalid base64url encoding: padding is not allowed")
    try:
        padded = text + "=" * (-len(text) % 4)
        return _utf8(base64.b64decode(padded, altchars=b"-_", validate=True))
    except binascii.Error as exc:
        raise ValueError(f"Invalid base64url encoding: {exc}") from exc


def _hex(text: str) -> str:
    try:
        data = bytes.fromhex(text)
    except ValueError as exc:
        raise ValueError(f"Invalid hex encoding: {exc}") from exc
    return _utf8(data)


def _url(text: str) -> str:
    try:
        return urllib.parse.unquote(text, errors="strict")
    except UnicodeDecodeError as exc:
        raise ValueError(f"Invalid URL encoding: {exc}") from exc


def _json_escape(text: str) -> str:
    try:
        decoded = json.loads(f'"{text}"')
    except json.JSONDecodeError as exc:
        raise ValueError(f"Invalid JSON escape sequence: {exc}") from exc
    assert isinstance(decoded, str)
    return decoded


_DECODERS: dict[str, Callable[[str], str]] = {
    "base64": _base64,
    "base64url": _base64url,
    "hex": _hex,
    "url": _url,
    "json_escape": _json_escape,
}


class Decoder:
    """Decodes ``target_property`` of inserts and updates."""

    def __init__(self, name: str, raw: Mapping[str, Any]) -> None:
        self.name = name
        self._config = parse_config(DecoderConfig, name, "decoder", raw)

    def process(self, change: Change, index: ElementLookup) -> list[Change]:
        if change.op is Op.DELETE:
            return [change]
        config = self._config
        properties = change.element.properties
        target = config.target_property
        try:
            decoded = self._decode(properties.get(target, _MISSING), target)
        except ValueError as exc:
            if config.on_error == "fail":
                raise fail(self.name, str(exc)) from exc
            return [change]
        output = config.output_property or target
        updated = {**properties, output: decoded}
        return [Change(change.op, with_properties(change.element, updated))]

    def _decode(self, value: Any, target: str) -> str:
        config = self._config
        if value is _MISSING:
            raise ValueError(f"Target property '{target}' not found in element.")
        if not isinstance(value, str):
            raise ValueError(
                f"Target property '{target}' is not a string value (Type: {type_name(value)})."
            )
        if len(value.encode()) > config.max_size_bytes:
            raise ValueError(
                f"Encoded string in property '{target}' exceeds size limit "
                f"({len(value.encode())} > {config.max_size_bytes})"
            )
        text = value.strip('"') if config.strip_quotes else value
        try:
            return _DECODERS[config.encoding_type](text)
        except ValueError as exc:
            raise ValueError(
                f"Failed to decode property '{target}' using {config.encoding_type} encoding: {exc}"
            ) from exc


_MISSING: Any = object()
