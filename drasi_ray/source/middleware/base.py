"""The middleware interface: a named transformation of one change into zero or more changes.

Drasi runs a query's source changes through the pipeline of that query's subscription before
the query sees them (drasi-core ``middleware/``). A :class:`Middleware` gets one
:class:`Change` (an insert, an update — an upsert carrying the properties the producer sent —
or a delete) and returns the changes to pass on, in order. Middleware that must know an
element's stored state (``unwind`` on an update or delete) reads it from the
:class:`ElementLookup` it is given: the query's view of the source after the pipeline.

A middleware raises :class:`~drasi_ray.model.errors.MiddlewareError` for a change it cannot
process (with ``on_error: fail``, Drasi's default); the caller dead-letters the entry.
Configuration errors raise :class:`~drasi_ray.model.errors.ConfigError` when the pipeline is
built, naming the middleware and the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from drasi_ray.model.changes import Element, ElementKind, FrozenMap, Op
from drasi_ray.model.config import format_validation_error
from drasi_ray.model.errors import ConfigError, MiddlewareError
from drasi_ray.model.value_kinds import value_kind

__all__ = [
    "Change",
    "ConfigModel",
    "ElementLookup",
    "Middleware",
    "PropertyConfig",
    "element_json",
    "parse_config",
    "set_property",
    "type_name",
    "with_properties",
]


@dataclass(frozen=True, slots=True)
class Change:
    """One change as middleware sees it. For a delete only the id, kind, labels and time of
    ``element`` count (Drasi's delete carries metadata only)."""

    op: Op
    element: Element


class ElementLookup(Protocol):
    """The stored state of an element by id (None: not stored)."""

    def get(self, element_id: str) -> Element | None: ...


class Middleware(Protocol):
    """One configured middleware of a pipeline."""

    name: str

    def process(self, change: Change, index: ElementLookup) -> list[Change]:
        """The changes ``change`` becomes; raises MiddlewareError if it cannot be processed."""
        ...


class ConfigModel(BaseModel):
    """Base of the kinds' config models: unknown keys are errors, as Drasi's deny them."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


_Config = TypeVar("_Config", bound=ConfigModel)


def parse_config(model: type[_Config], name: str, kind: str, raw: Mapping[str, Any]) -> _Config:
    """``raw`` validated as ``model``; a ConfigError names the middleware and the field."""
    try:
        return model.model_validate(dict(raw))
    except ValidationError as exc:
        raise ConfigError(
            f"middleware {name!r} ({kind}): invalid config: {format_validation_error(exc)}"
        ) from exc


class PropertyConfig(ConfigModel):
    """The fields of Drasi's middleware that compute one property from another (``decoder``,
    ``parse_json``): ``target_property`` (required), ``output_property`` (default: overwrite
    the target), ``on_error`` (``fail``, the default, or ``skip``: pass the change on
    unchanged)."""

    target_property: str = Field(min_length=1)
    output_property: str | None = None
    on_error: Literal["fail", "skip"] = "fail"


def set_property(
    name: str,
    config: PropertyConfig,
    change: Change,
    compute: Callable[[Mapping[str, Any]], Any],
) -> list[Change]:
    """``change`` with its output property set to ``compute(properties)``, for an insert or an
    update; a delete passes through (it carries no properties). ``compute`` raises ValueError
    for a change it cannot process: with ``on_error: fail`` that fails the change
    (MiddlewareError, prefixed with ``name``), with ``skip`` the change goes on unchanged."""
    if change.op is Op.DELETE:
        return [change]
    properties = change.element.properties
    try:
        value = compute(properties)
    except ValueError as exc:
        if config.on_error == "fail":
            raise fail(name, str(exc)) from exc
        return [change]
    output = config.output_property or config.target_property
    return [Change(change.op, with_properties(change.element, {**properties, output: value}))]


def fail(name: str, message: str) -> MiddlewareError:
    """The error a middleware raises, prefixed with its name as Drasi's messages are."""
    return MiddlewareError(f"[{name}] {message}")


def with_properties(element: Element, properties: Mapping[str, Any]) -> Element:
    """``element`` with ``properties`` instead of its own."""
    return Element(
        element.kind,
        element.id,
        element.labels,
        FrozenMap(properties),
        element.start_id,
        element.end_id,
        element.effective_from,
    )


def element_json(element: Element, source_id: str) -> dict[str, Any]:
    """An element as Drasi's middleware reads it (``serde_json::Value::from(&Element)``): the
    properties plus ``$metadata`` (``"(source:id, [labels], time)"``), and for a relation
    ``$in_node`` / ``$out_node`` (``"source:id"``)."""
    doc: dict[str, Any] = dict(element.properties)
    labels = ",".join(element.labels)
    doc["$metadata"] = f"({source_id}:{element.id}, [{labels}], {element.effective_from})"
    if element.kind is ElementKind.RELATION:
        doc["$in_node"] = f"{source_id}:{element.start_id}"
        doc["$out_node"] = f"{source_id}:{element.end_id}"
    return doc


def type_name(value: Any) -> str:
    """The ``ElementValue`` variant name Drasi's middleware messages use for ``value``."""
    kind = value_kind(value)
    return type(value).__name__ if kind is None else kind.element_value_name
