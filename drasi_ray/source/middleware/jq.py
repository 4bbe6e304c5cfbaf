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

Numbers: jq computes in doubles, and Drasi reads its output as JSON text, so a whole number
comes back as an Integer where it fits an i64 and as a Float beyond (drasi_ray does the same:
the ``jq`` package hands integral doubles back as ints). drasi-lib 0.3.0 has no ``jq``
middleware, so this kind is checked against drasi-core's tests only, not differentially.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import jq as jqlib
from pydantic import Field, RootModel

from drasi_ray.model.changes import Element, Op
from drasi_ray.model.errors import ConfigError
from drasi_ray.model.value_kinds import as_element_value
from drasi_ray.source.middleware import outputs
from drasi_ray.source.middleware.base import Change, ConfigModel, ElementLookup, element_json, fail
from drasi_ray.source.middleware.outputs import Operations, RelationType


class JqOutput(ConfigModel):
    op: Literal["Insert", "Update", "Delete"] | None = None
    query: str = Field(min_length=1)
    id: str | None = None
    label: str | None = None
    element_type: Literal["Node"] | RelationType | None = Field(None, alias="elementType")
    halt_on_error: bool = Field(False, alias="haltOnError")


class JqConfig(RootModel[dict[str, Operations[JqOutput]]]):
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
            results = self._program.input_value(value).all()
        except ValueError as exc:
            raise _JqFailure(f"JQ execution error: {exc}") from exc
        # jq computes in doubles; Drasi reads its output as JSON (module docstring)
        return [as_element_value(result) for result in results]

    def one(self, value: Any) -> str:
        results = self.run(value)
        if len(results) != 1:
            raise _JqFailure(f"jq program {self.text!r} gave {len(results)} results, not one")
        return outputs.as_id(results[0])


class _JqFailure(Exception):
    pass


class _Output:
    def __init__(self, spec: JqOutput, where: str) -> None:
        self.op = None if spec.op is None else outputs.OPS[spec.op]
        self.query = _Program(spec.query, f"{where}.query")
        self.id = None if spec.id is None else _Program(spec.id, f"{where}.id")
        self.label = None if spec.label is None else _Program(spec.label, f"{where}.label")
        self.halt = spec.halt_on_error
        self.node = spec.element_type == "Node"
        ends = spec.element_type.relation if isinstance(spec.element_type, RelationType) else None
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
        ends = None
        if self.ends is not None:
            start, end = (program.one(item) for program in self.ends)
            ends = (start, end)
        return outputs.build_element(element, element_id, labels, properties, ends, self.node)


class Jq:
    """Maps each change of a mapped label through its jq outputs."""

    def __init__(self, name: str, raw: Mapping[str, Any], source_id: str) -> None:
        self.name = name
        self._source_id = source_id
        self._table = outputs.OutputTable(JqConfig, name, "jq", raw, _Output)

    def process(self, change: Change, index: ElementLookup) -> list[Change]:
        element = outputs.event_element(change)
        results: list[Change] = []
        for output in self._table.outputs(change):
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
