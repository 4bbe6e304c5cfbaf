"""``jq``: turn a change into changes of other elements with jq programs (the ``jq`` package,
libjq's own engine, not a subset).

Config (Drasi's): per source label, ``{insert: [...], update: [...], delete: [...]}``, each a
list of outputs ``{op?, query, id?, label?, elementType?, haltOnError?}``:

- ``query``: a jq program run on the element as Drasi's middleware sees it (properties plus
  ``$metadata``); an array result gives one output element per item, any other value one;
- ``id`` / ``label``: jq programs run on each item (a string result is used as it is, any
  other value as its JSON text); default: the changed element's id and labels;
- ``elementType``: ``Node`` or ``{"Relation": {"inNodeId", "outNodeId"}}`` (jq programs on the
  item); default: the kind of the changed element. An item that is a map becomes the element's
  properties (any other item: no properties);
- ``op``: ``Insert``, ``Update`` or ``Delete`` (default: the change's own);
- ``haltOnError``: a failing program fails the change (dead-lettered); by default, as in
  Drasi, that output is skipped.

Changes whose labels have no mapping for their operation produce nothing. Every program is
compiled when the pipeline is built, so a syntax error is a ConfigError there (Drasi reports
it on the first change). Where a program yields several results Drasi fails to read them
(``jq-rs`` returns them as lines of text); drasi_ray takes each as an item.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import jq as jqlib
from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError

from drasi_ray.model.changes import Element, ElementKind, Op, node, relation
from drasi_ray.model.config import format_validation_error
from drasi_ray.model.errors import ConfigError
from drasi_ray.source.middleware.base import Change, ConfigModel, ElementLookup, element_json, fail
from drasi_ray.source.middleware.mapping import OPS, as_id


class JqRelationEnds(ConfigModel):
    in_node_id: str = Field(alias="inNodeId", min_length=1)
    out_node_id: str = Field(alias="outNodeId", min_length=1)


class JqRelationType(ConfigModel):
    relation: JqRelationEnds = Field(alias="Relation")


class JqOutput(ConfigModel):
    op: Literal["Insert", "Update", "Delete"] | None = None
    query: str = Field(min_length=1)
    id: str | None = None
    label: str | None = None
    element_type: Literal["Node"] | JqRelationType | None = Field(None, alias="elementType")
    halt_on_error: bool = Field(False, alias="haltOnError")


class JqOperations(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    insert: tuple[JqOutput, ...] = ()
    update: tuple[JqOutput, ...] = ()
    delete: tuple[JqOutput, ...] = ()


class JqConfig(RootModel[dict[str, JqOperations]]):
    pass


class _Program:
    """A compiled jq program; ``run`` gives every result."""

    def __init__(self, text: str, where: str) -> None:
        self.text = text
        try:
            self._program = jqlib.compile(text)
        except ValueError as exc:
            raise ConfigError(f"{where}: invalid jq program {text!r}: {exc}") from exc

    def run(self, value: Any) -> list[Any]:
        try:
            return list(self._program.input_value(value).all())
        except ValueError as exc:
            raise _JqFailure(f"JQ execution error: {exc}") from exc

    def one(self, value: Any) -> str:
        results = self.run(value)
        if len(results) != 1:
            raise _JqFailure(f"jq program {self.text!r} gave {len(results)} results, not one")
        return as_id(results[0])


class _JqFailure(Exception):
    pass


class _Output:
    def __init__(self, spec: JqOutput, where: str) -> None:
        self.op = None if spec.op is None else OPS[spec.op]
        self.query = _Program(spec.query, f"{where}.query")
        self.id = None if spec.id is None else _Program(spec.id, f"{where}.id")
        self.label = None if spec.label is None else _Program(spec.label, f"{where}.label")
        self.halt = spec.halt_on_error
        self.node = spec.element_type == "Node"
        ends = spec.element_type.relation if isinstance(spec.element_type, JqRelationType) else None
        self.ends = (
            None
            if ends is None
            else (
                _Program(ends.in_node_id, f"{where}.elementType.Relation.inNodeId"),
                _Program(ends.out_node_id, f"{where}.elementType.Relation.outNodeId"),
            )
        )

    def items(self, element: Element, source_id: str) -> list[Any]:
        results = self.query.run(element_json(element, source_id))
        if len(results) == 1 and isinstance(results[0], list):
            return list(results[0])
        return results

    def element(self, element: Element, item: Any) -> Element:
        element_id = element.id if self.id is None else self.id.one(item)
        labels = element.labels if self.label is None else (self.label.one(item),)
        properties = item if isinstance(item, dict) else {}
        time = element.effective_from
        if self.ends is not None:
            start, end = (program.one(item) for program in self.ends)
            return relation(element_id, labels, start, end, properties, time)
        if self.node or element.kind is ElementKind.NODE:
            return node(element_id, labels, properties, time)
        assert element.start_id is not None and element.end_id is not None
        return relation(element_id, labels, element.start_id, element.end_id, properties, time)


class Jq:
    """Maps each change of a mapped label through its jq outputs."""

    def __init__(self, name: str, raw: Mapping[str, Any], source_id: str) -> None:
        self.name = name
        self._source_id = source_id
        try:
            parsed = JqConfig.model_validate(dict(raw)).root
        except ValidationError as exc:
            raise ConfigError(
                f"middleware {name!r} (jq): invalid config: {format_validation_error(exc)}"
            ) from exc
        self._outputs: dict[tuple[str, Op], list[_Output]] = {}
        for label, operations in parsed.items():
            for op_name, op in (
                ("insert", Op.INSERT),
                ("update", Op.UPDATE),
                ("delete", Op.DELETE),
            ):
                specs: tuple[JqOutput, ...] = getattr(operations, op_name)
                self._outputs[(label, op)] = [
                    _Output(spec, f"middleware {name!r} (jq): {label}.{op_name}.{i}")
                    for i, spec in enumerate(specs)
                ]

    def process(self, change: Change, index: ElementLookup) -> list[Change]:
        element = change.element
        if change.op is Op.DELETE:
            element = node(element.id, element.labels, {}, element.effective_from)
        results: list[Change] = []
        for label in change.element.labels:
            for output in self._outputs.get((label, change.op), ()):
                results.extend(self._run(output, change.op, element))
        return results

    def _run(self, output: _Output, op: Op, element: Element) -> list[Change]:
        made: list[Change] = []
        try:
            items = output.items(element, self._source_id)
        except _JqFailure as exc:
            return self._failed(output, exc)
        for item in items:
            try:
                made.append(Change(output.op or op, output.element(element, item)))
            except _JqFailure as exc:
                made.extend(self._failed(output, exc))
        return made

    def _failed(self, output: _Output, exc: _JqFailure) -> list[Change]:
        if output.halt:
            raise fail(self.name, str(exc)) from exc
        return []
