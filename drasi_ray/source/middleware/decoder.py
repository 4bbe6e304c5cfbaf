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

from drasi_ray.source.middleware.base import (
    Change,
    ElementLookup,
    PropertyConfig,
    parse_config,
    set_property,
    type_name,
)


class DecoderConfig(PropertyConfig):
    encoding_type: Literal["base64", "base64url", "hex", "url", "json_escape"]
    strip_quotes: bool = False
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
        return set_property(self.name, self._config, change, self._decode)

    def _decode(self, properties: Mapping[str, Any]) -> str:
        config = self._config
        target = config.target_property
        value = properties.get(target, _MISSING)
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
