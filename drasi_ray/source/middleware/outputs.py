"""What ``map`` and ``jq`` share: per source label and operation, outputs that turn a change
into changes of other elements.

Both kinds take Drasi's config shape: per source label, ``{insert: [...], update: [...],
delete: [...]}``, each a list of outputs; an output's optional ``op`` (``Insert``, ``Update``,
``Delete``; default: the change's own) and ``elementType`` (``Node``, or ``{"Relation":
{"inNodeId", "outNodeId"}}``; default: the kind of the changed element) mean the same in both.
They differ only in how an output selects its values (JSONPath for ``map``, jq programs for
``jq``), which stays in each kind's module. The rules written once here:

- :class:`OutputTable`: a change runs through the outputs of each of its labels for its
  operation, in label order; a label without outputs for that operation produces nothing;
- :func:`event_element`: a delete is seen as a node of its metadata only (Drasi maps a
  delete's id, labels and time, no properties);
- :func:`build_element`: the output element's kind (a relation with the ends the output
  selected, a node when ``elementType`` says so, else the changed element's kind);
- :func:`as_id`: a selected id that is not a string is used as its JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, RootModel

from drasi_ray.model.changes import Element, ElementKind, Op, node, relation
from drasi_ray.source.middleware.base import Change, ConfigModel, parse_config

__all__ = [
    "OPS",
    "Operations",
    "OutputTable",
    "RelationEnds",
    "RelationType",
    "as_id",
    "build_element",
    "event_element",
]

OPS: dict[str, Op] = {"Insert": Op.INSERT, "Update": Op.UPDATE, "Delete": Op.DELETE}
"""An output's ``op`` as the config names it."""

_Spec = TypeVar("_Spec", bound=BaseModel)
_Output = TypeVar("_Output")


class RelationEnds(ConfigModel):
    in_node_id: str = Field(alias="inNodeId", min_length=1)
    out_node_id: str = Field(alias="outNodeId", min_length=1)


class RelationType(ConfigModel):
    relation: RelationEnds = Field(alias="Relation")


class Operations(BaseModel, Generic[_Spec]):
    """The outputs of one source label, per operation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    insert: tuple[_Spec, ...] = ()
    update: tuple[_Spec, ...] = ()
    delete: tuple[_Spec, ...] = ()


_NAMED_OPS = (("insert", Op.INSERT), ("update", Op.UPDATE), ("delete", Op.DELETE))


class OutputTable(Generic[_Output]):
    """The built outputs of a ``map``/``jq`` config, by (source label, operation)."""

    def __init__(
        self,
        config: type[RootModel[dict[str, Operations[Any]]]],
        name: str,
        kind: str,
        raw: Mapping[str, Any],
        build: Callable[[Any, str], _Output],
    ) -> None:
        """Validate ``raw`` as ``config`` (a ConfigError names the middleware and the field)
        and build each output spec with ``build(spec, where)``, ``where`` naming it in
        errors (``middleware 'm' (map): Label.insert.0``)."""
        parsed = parse_config(config, name, kind, raw).root  # type: ignore[type-var]
        self._outputs: dict[tuple[str, Op], list[_Output]] = {}
        for label, operations in parsed.items():
            for op_name, op in _NAMED_OPS:
                specs: tuple[Any, ...] = getattr(operations, op_name)
                self._outputs[(label, op)] = [
                    build(spec, f"middleware {name!r} ({kind}): {label}.{op_name}.{i}")
                    for i, spec in enumerate(specs)
                ]

    def outputs(self, change: Change) -> Iterator[_Output]:
        """The outputs ``change`` runs through, in order."""
        for label in change.element.labels:
            yield from self._outputs.get((label, change.op), ())


def event_element(change: Change) -> Element:
    """The element a ``map``/``jq`` output reads: a delete's as a node of its metadata."""
    element = change.element
    if change.op is Op.DELETE:
        return node(element.id, element.labels, {}, element.effective_from)
    return element


def build_element(
    changed: Element,
    element_id: str,
    labels: tuple[str, ...],
    properties: Mapping[str, Any],
    ends: tuple[str, str] | None,
    as_node: bool,
) -> Element:
    """An output element: a relation between ``ends`` when the output selected them, a node
    when its ``elementType`` is ``Node``, else of the changed element's kind (a relation keeps
    its ends); at the changed element's time."""
    time = changed.effective_from
    if ends is not None:
        return relation(element_id, labels, ends[0], ends[1], properties, time)
    if as_node or changed.kind is ElementKind.NODE:
        return node(element_id, labels, properties, time)
    assert changed.start_id is not None and changed.end_id is not None
    return relation(element_id, labels, changed.start_id, changed.end_id, properties, time)


def as_id(value: Any) -> str:
    """A selected id: a string as it is, anything else as its JSON text (Drasi's rule)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))
