"""``unwind``: turn the items of a list property into child nodes (and relations to them).

Config (Drasi's): per parent label, a list of mappings ``{selector, label, key?, relation?,
condition?}``. ``selector`` (JSONPath over the element as Drasi's middleware sees it) picks the
items; each item that is a map becomes a node labelled ``label`` with the item's fields as
properties (any other item, a node without properties), with id
``$unwind-<selector>-<parent id>-<item key>``, the item key being the string ``key`` selects in
the item, else the item's position. With ``relation``, a relation of that label runs from the
parent to each child, id ``<child id>$rel``. ``condition`` (JSONPath) must select something for
the mapping to apply.

An insert inserts the children; an update upserts the current children and deletes those of
the stored parent that are gone; a delete deletes the stored parent's children. The parent's
own change is passed on after its children's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, RootModel, ValidationError

from drasi_ray.model.changes import Element, Op, node, relation
from drasi_ray.model.config import format_validation_error
from drasi_ray.model.errors import ConfigError
from drasi_ray.source.middleware.base import (
    Change,
    ConfigModel,
    ElementLookup,
    element_json,
)
from drasi_ray.source.middleware.jsonpath import JsonPath


class UnwindMappingConfig(ConfigModel):
    selector: str = Field(min_length=1)
    label: str = Field(min_length=1)
    key: str | None = None
    relation: str | None = None
    condition: str | None = None


class UnwindConfig(RootModel[dict[str, tuple[UnwindMappingConfig, ...]]]):
    pass


class _Mapping:
    def __init__(self, spec: UnwindMappingConfig, where: str) -> None:
        self.selector = JsonPath(spec.selector, f"{where}.selector")
        self.label = spec.label
        self.key = None if spec.key is None else JsonPath(spec.key, f"{where}.key")
        self.relation = spec.relation
        self.condition = (
            None if spec.condition is None else JsonPath(spec.condition, f"{where}.condition")
        )

    def items(self, doc: dict[str, Any]) -> dict[str, Any] | None:
        """Item key -> item, in selection order; None when the condition is not met."""
        if self.condition is not None and not self.condition.find(doc):
            return None
        found: dict[str, Any] = {}
        for position, item in enumerate(self.selector.find(doc)):
            key = self.key.find(item) if self.key is not None else []
            found[key[0] if key and isinstance(key[0], str) else str(position)] = item
        return found


class Unwind:
    """Unwinds the list items of the parents whose labels have mappings."""

    def __init__(self, name: str, raw: Mapping[str, Any], source_id: str) -> None:
        self.name = name
        self._source_id = source_id
        try:
            parsed = UnwindConfig.model_validate(dict(raw)).root
        except ValidationError as exc:
            raise ConfigError(
                f"middleware {name!r} (unwind): invalid config: {format_validation_error(exc)}"
            ) from exc
        self._mappings = {
            label: [
                _Mapping(spec, f"middleware {name!r} (unwind): {label}.{i}")
                for i, spec in enumerate(specs)
            ]
            for label, specs in parsed.items()
        }

    def process(self, change: Change, index: ElementLookup) -> list[Change]:
        parent = change.element
        results: list[Change] = []
        for label in parent.labels:
            mappings = self._mappings.get(label)
            if not mappings:
                continue
            new = None if change.op is Op.DELETE else parent
            old = None if change.op is Op.INSERT else index.get(parent.id)
            if change.op is Op.DELETE and old is None:
                continue
            for mapping in mappings:
                results.extend(self._children(mapping, change.op, parent, new, old))
        results.append(change)
        return results

    def _children(
        self, mapping: _Mapping, op: Op, parent: Element, new: Element | None, old: Element | None
    ) -> list[Change]:
        current: dict[str, Any] = {}
        if new is not None:
            found = mapping.items(element_json(new, self._source_id))
            if found is None:
                return []
            current = found
        changes = [
            change
            for key, item in current.items()
            for change in self._child(mapping, op, parent, key, item)
        ]
        if old is not None:
            previous = mapping.items(element_json(old, self._source_id))
            if previous is None:
                return changes
            for key in previous:
                if key not in current:
                    changes.extend(self._child(mapping, Op.DELETE, parent, key, {}))
        return changes

    def _child(
        self, mapping: _Mapping, op: Op, parent: Element, key: str, item: Any
    ) -> list[Change]:
        child_id = f"$unwind-{mapping.selector.expression}-{parent.id}-{key}"
        properties = item if isinstance(item, dict) else {}
        time = parent.effective_from
        changes = [Change(op, node(child_id, (mapping.label,), properties, time))]
        if mapping.relation is not None:
            link = relation(f"{child_id}$rel", (mapping.relation,), parent.id, child_id, {}, time)
            changes.append(Change(op, link))
        return changes
