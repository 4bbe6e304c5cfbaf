"""The templates of the HTTP reaction: Drasi's ``{{after.field}}`` placeholders over a diff.

A template is text with placeholders ``{{name}}`` or ``{{json name}}``; ``name`` is a dotted
path whose first part is one of :data:`ROOTS` (``after.id``, ``before.total``, ``queryId``),
with a part holding dots or spaces written ``[like this]``. Only this subset of Handlebars
exists: no blocks, no other helpers; anything else is refused when the template is compiled,
with the offending placeholder named.

How a value is written depends on where the template is (:class:`Mode`): in a URL the text is
percent-encoded; in a body ``{{name}}`` is the text escaped for a JSON string (so the usual
``"{{after.name}}"`` stays valid JSON whatever the name holds) and ``{{json name}}`` the value
as JSON; in a header the text as is. A missing value or null is written as nothing
(``{{json ...}}``: ``null``). The text of a string is itself; of a number, a boolean, a list
or a map its JSON.

:func:`check_fields` is what refuses a template naming a column the query does not return, or
``before`` in an ``added`` call (there is no row before) and ``after`` in a ``deleted`` one.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import orjson

from drasi_ray.model import encoding
from drasi_ray.model.errors import ConfigError

ROOTS = ("after", "before", "queryId", "sequence", "kind", "sourceTimeMs")
"""What a placeholder's path may start with."""

_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_PART = re.compile(r"\[([^\]]+)\]|([^.\[\]\s]+)")


class Mode(enum.Enum):
    """Where a template is written, which decides how values are escaped."""

    URL = "url"
    BODY = "body"
    HEADER = "header"


@dataclass(frozen=True, slots=True)
class Placeholder:
    """``{{path}}`` or, with ``as_json``, ``{{json path}}``; ``text`` as written."""

    path: tuple[str, ...]
    as_json: bool
    text: str


@dataclass(frozen=True, slots=True)
class Template:
    """A compiled template: literal text and placeholders, in order."""

    parts: tuple[str | Placeholder, ...]
    mode: Mode

    @property
    def placeholders(self) -> Iterator[Placeholder]:
        return (part for part in self.parts if isinstance(part, Placeholder))

    def render(self, context: Mapping[str, Any]) -> str:
        """The text with every placeholder replaced by its value in ``context``."""
        return "".join(
            part if isinstance(part, str) else _write(_lookup(context, part.path), part, self.mode)
            for part in self.parts
        )


def compile_template(text: str, mode: Mode) -> Template:
    """Parse ``text``; raises ConfigError naming a malformed placeholder."""
    parts: list[str | Placeholder] = []
    position = 0
    for match in _PLACEHOLDER.finditer(text):
        literal = text[position : match.start()]
        _no_stray_braces(literal, text)
        if literal:
            parts.append(literal)
        parts.append(_placeholder(match.group(1), match.group(0)))
        position = match.end()
    rest = text[position:]
    _no_stray_braces(rest, text)
    if rest:
        parts.append(rest)
    return Template(tuple(parts), mode)


def _no_stray_braces(literal: str, text: str) -> None:
    if "{{" in literal or "}}" in literal:
        raise ConfigError(f"unbalanced '{{{{' or '}}}}' in template {text!r}")


def _placeholder(inner: str, written: str) -> Placeholder:
    words = inner.split(None, 1)
    if not words:
        raise ConfigError(f"empty placeholder {written!r}")
    as_json = words[0] == "json" and len(words) == 2
    expression = words[1].strip() if as_json else inner.strip()
    if expression.startswith(("#", "/", "!", "{", "^", ">", "&")) or " " in expression:
        raise ConfigError(
            f"placeholder {written!r}: only {{{{name}}}} and {{{{json name}}}} are supported"
        )
    path = _parse_path(expression, written)
    if path[0] not in ROOTS:
        raise ConfigError(
            f"placeholder {written!r}: unknown name {path[0]!r} (names: {', '.join(ROOTS)})"
        )
    return Placeholder(path, as_json, written)


def _parse_path(expression: str, written: str) -> tuple[str, ...]:
    parts: list[str] = []
    position = 0
    while position < len(expression):
        match = _PART.match(expression, position)
        if match is None:
            raise ConfigError(f"placeholder {written!r}: cannot read {expression[position:]!r}")
        parts.append(match.group(1) or match.group(2))
        position = match.end()
        if position < len(expression):
            if expression[position] != ".":
                raise ConfigError(f"placeholder {written!r}: expected '.' at {position}")
            position += 1
            if position == len(expression):
                raise ConfigError(f"placeholder {written!r}: ends with '.'")
    if not parts:
        raise ConfigError(f"empty placeholder {written!r}")
    return tuple(parts)


def check_fields(
    templates: Sequence[Template], kind: str, columns: Sequence[str], where: str
) -> None:
    """Refuse a placeholder naming a column not in ``columns``, or a field of a row ``kind``
    has not (``before.x`` in ``added``, ``after.x`` in ``deleted``; the whole row is null
    there). ``where`` starts the message."""
    absent = {"added": "before", "deleted": "after"}.get(kind)
    for template in templates:
        for placeholder in template.placeholders:
            root = placeholder.path[0]
            if root == absent and len(placeholder.path) > 1:
                raise ConfigError(
                    f"{where}: {placeholder.text} names a field of '{root}', "
                    f"which is null in {kind} diffs"
                )
            if root in ("after", "before") and len(placeholder.path) > 1:
                column = placeholder.path[1]
                if column not in columns:
                    raise ConfigError(
                        f"{where}: {placeholder.text} names field {column!r}, which the query "
                        f"does not return (its fields: {', '.join(columns)})"
                    )


def _lookup(context: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = context
    for part in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _write(value: Any, placeholder: Placeholder, mode: Mode) -> str:
    if placeholder.as_json:
        text = encoding.dumps(value).decode()
        return quote(text, safe="") if mode is Mode.URL else text
    text = value_text(value)
    if mode is Mode.URL:
        return quote(text, safe="")
    if mode is Mode.BODY:
        return orjson.dumps(text).decode()[1:-1]
    return text


def value_text(value: Any) -> str:
    """A value as text: a string itself, null nothing, anything else its JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return encoding.dumps(value).decode()
