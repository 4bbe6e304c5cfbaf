"""``relabel``: rename labels (Drasi's ``labelMappings``), on inserts, updates and deletes.

Config: ``{"labelMappings": {"Person": "User", ...}}`` (at least one mapping). Labels without
a mapping are kept; the element's id, properties and endpoints are unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
from pydantic import Field

from drasi_ray.source.middleware.base import Change, ConfigModel, ElementLookup, parse_config


class RelabelConfig(ConfigModel):
    label_mappings: dict[str, str] = Field(alias="labelMappings", min_length=1)


class Relabel:
    """Renames the labels of every change by ``labelMappings``."""

    def __init__(self, name: str, raw: Mapping[str, Any]) -> None:
        self.name = name
        self._mappings = parse_config(RelabelConfig, name, "relabel", raw).label_mappings

    def process(self, change: Change, index: ElementLookup) -> list[Change]:
        element = change.element
        labels = tuple(self._mappings.get(label, label) for label in element.labels)
        return [Change(change.op, msgspec.structs.replace(element, labels=labels))]
