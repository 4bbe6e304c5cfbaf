"""``map`` (also ``remap``): turn a change into changes of other elements, by JSONPath.

Config (Drasi's): per source label, ``{insert: [...], update: [...], delete: [...]}``, each a
list of outputs ``{op?, selector?, label?, id?, elementType?, condition?, properties?}``:

- ``op``: ``Insert``, ``Update`` or ``Delete`` (default: the change's own);
- ``selector``: JSONPath picking the values to map, one output each (default: the element);
  each selected value is available to the other paths as ``$['$selected']``;
- ``condition``: JSONPath that must select something;
- ``id`` / ``label``: the output element's id (JSONPath; a non-string value is used as its
  JSON text; nothing selected skips the output) and single label (default: the change's);
- ``elementType``: ``Node``, or ``{"Relation": {"inNodeId", "outNodeId"}}`` (JSONPaths);
  default: the kind of the changed element;
- ``properties``: output property name -> JSONPath (a path that selects nothing leaves the
  property out).

The paths read the element as Drasi's middleware sees it (properties plus ``$metadata``).
Changes whose labels have no mapping for their operation produce nothing: with ``map`` in a
pipeline, only mapped changes go on, as in Drasi.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, RootModel

from drasi_ray.model.changes import Element, Op
from drasi_ray.source.middleware import outputs
from drasi_ray.source.middleware.base import Change, ConfigModel, ElementLookup, element_json
from drasi_ray.source.middleware.jsonpath import JsonPath
from drasi_ray.source.middleware.outputs import Operations, RelationType


class MapOutput(ConfigModel):
    op: Literal["Insert", "Update", "Delete"] | None = None
    selector: str | None = None
    label: str | None = None
    id: str | None = None
    element_type: Literal["Node"] | RelationType | None = Field(None, alias="elementType")
    condition: str | None = None
    properties: dict[str, str] = Field(default_factory=dict)


class MapConfig(RootModel[dict[str, Operations[MapOutput]]]):
    pass


class _Output:
    def __init__(self, spec: MapOutput, where: str) -> None:
        self.op = None if spec.op is None else outputs.OPS[spec.op]
        self.selector = _path(spec.selector, f"{where}.selector")
        self.condition = _path(spec.condition, f"{where}.condition")
        self.id = _path(spec.id, f"{where}.id")
        self.label = spec.label
        self.properties = [
            (name, JsonPath(path, f"{where}.properties.{name}"))
            for name, path in sorted(spec.properties.items())
        ]
        ends = spec.element_type.relation if isinstance(spec.element_type, RelationType) else None
        self.node = spec.element_type == "Node"
        self.ends = (
            None
            if ends is None
            else (
                JsonPath(ends.in_node_id, f"{where}.elementType.Relation.inNodeId"),
                JsonPath(ends.out_node_id, f"{where}.elementType.Relation.outNodeId"),
            )
        )

    def outputs(self, op: Op, element: Element, source_id: str) -> list[Change]:
        doc = element_json(element, source_id)
        selected = self.selector.find(doc) if self.selector is not None else [dict(doc)]
        made: list[Change] = []
        for value in selected:
            doc["$selected"] = value
            output = self._output(op, element, doc)
            if output is not None:
                made.append(output)
        return made

    def _output(self, op: Op, element: Element, doc: dict[str, Any]) -> Change | None:
        if self.condition is not None and not self.condition.find(doc):
            return None
        element_id = element.id
        if self.id is not None:
            found = self.id.find(doc)
            if not found:
                return None
            element_id = outputs.as_id(found[0])
        labels = element.labels if self.label is None else (self.label,)
        properties = {}
        for name, path in self.properties:
            found = path.find(doc)
            if found:
                properties[name] = found[0]
        ends = None
        if self.ends is not None:
            start, end = (path.find(doc) for path in self.ends)
            if not start or not end:
                return None
            ends = (outputs.as_id(start[0]), outputs.as_id(end[0]))
        built = outputs.build_element(element, element_id, labels, properties, ends, self.node)
        return Change(self.op or op, built)


def _path(expression: str | None, where: str) -> JsonPath | None:
    return None if expression is None else JsonPath(expression, where)


class Map:
    """Maps each change of a mapped label to the changes its outputs describe."""

    def __init__(self, name: str, raw: Mapping[str, Any], source_id: str, kind: str) -> None:
        self.name = name
        self._source_id = source_id
        self._table = outputs.OutputTable(MapConfig, name, kind, raw, _Output)

    def process(self, change: Change, index: ElementLookup) -> list[Change]:
        element = outputs.event_element(change)
        results: list[Change] = []
        for output in self._table.outputs(change):
            results.extend(output.outputs(change.op, element, self._source_id))
        return results
