"""``promote``: copy nested values (selected by JSONPath) to top-level properties.

Config (Drasi's): ``mappings`` (at least one ``{path, target_name}``), ``on_conflict``
(``overwrite``, the default, ``skip`` or ``fail`` when the target exists and is not null),
``on_error`` (``fail``, the default, or ``skip``: that mapping is left out). A path that
selects no value, or more than one, is an error. Inserts and updates are promoted; deletes
pass through. The paths read the element's properties (no ``$metadata``).
"""

from __future__ import annotations

from collections.abc import Mapping
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
from drasi_ray.source.middleware.jsonpath import JsonPath


class PromoteMapping(ConfigModel):
    path: str = Field(min_length=1)
    target_name: str = Field(min_length=1)


class PromoteConfig(ConfigModel):
    mappings: tuple[PromoteMapping, ...] = Field(min_length=1)
    on_conflict: Literal["overwrite", "skip", "fail"] = "overwrite"
    on_error: Literal["fail", "skip"] = "fail"


class Promote:
    """Adds one top-level property per mapping, from the value its path selects."""

    def __init__(self, name: str, raw: Mapping[str, Any]) -> None:
        self.name = name
        self._config = parse_config(PromoteConfig, name, "promote", raw)
        self._paths = [
            (JsonPath(m.path, f"middleware {name!r} (promote): mappings.{i}.path"), m.target_name)
            for i, m in enumerate(self._config.mappings)
        ]

    def process(self, change: Change, index: ElementLookup) -> list[Change]:
        if change.op is Op.DELETE:
            return [change]
        original = dict(change.element.properties)
        properties = dict(original)
        for path, target in self._paths:
            selected = path.find(original)
            if len(selected) != 1:
                self._selection_error(path, len(selected))
                continue
            if properties.get(target) is not None:
                if self._config.on_conflict == "skip":
                    continue
                if self._config.on_conflict == "fail":
                    raise fail(
                        self.name,
                        f"Property '{target}' already exists and conflict strategy is 'fail'",
                    )
            properties[target] = selected[0]
        return [Change(change.op, with_properties(change.element, properties))]

    def _selection_error(self, path: JsonPath, count: int) -> None:
        if self._config.on_error == "skip":
            return
        what = "no values" if count == 0 else f"multiple values ({count})"
        raise fail(self.name, f"JSONPath '{path.expression}' selected {what}")
