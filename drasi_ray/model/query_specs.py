"""What a query declares besides its text: its language, synthetic joins and source middleware.

These are the YAML schema of Drasi's ``QueryConfig`` (``joins: [{id, keys: [{label,
property}]}]``, ``middleware: [{name, kind, config}]`` and a source subscription's
``pipeline``), validated like the rest of :mod:`drasi_ray.model.config`: unknown keys are
errors, and every error names the offending field.

- A **join** is a relation label the query's patterns may use although no source has such
  relations: nodes whose key properties hold equal values are linked by it, in both directions
  (:mod:`drasi_ray.query.joins`).
- The **language** of the text: Cypher, or GQL (Drasi's ``queryLanguage``; parsed by
  :mod:`drasi_ray.query.gql`).
- A **middleware** is one named, configured transformation of a source's changes; a
  **pipeline** is the ordered list of middleware names one source subscription runs
  (:mod:`drasi_ray.source.middleware`). The ``config`` of a middleware is validated by its kind
  when the query is added.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

MIDDLEWARE_KINDS = ("decoder", "jq", "map", "parse_json", "promote", "relabel", "remap", "unwind")
"""Drasi's middleware kinds (``remap`` is another name of ``map``)."""


class QueryLanguage(str, enum.Enum):
    """The language of a query's text. Any case is accepted (Drasi's resource files write
    ``queryLanguage: GQL``, drasi-lib ``language="gql"``)."""

    CYPHER = "cypher"
    GQL = "gql"

    @classmethod
    def _missing_(cls, value: object) -> QueryLanguage | None:
        if isinstance(value, str):
            for member in cls:
                if member.value == value.lower():
                    return member
        return None


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class JoinKey(_Spec):
    """One side of a join: nodes with ``label`` take part through their ``property``."""

    label: str = Field(min_length=1, description="nodes with this label take part")
    property: str = Field(min_length=1, description="through the value of this property")


class QueryJoin(_Spec):
    """A synthetic relation ``id`` between the nodes whose key values are equal."""

    id: str = Field(min_length=1, description="the relation label the query's patterns use")
    keys: tuple[JoinKey, ...] = Field(
        min_length=2, description="at least two (label, property) keys whose values must match"
    )

    @field_validator("keys")
    @classmethod
    def _distinct(cls, keys: tuple[JoinKey, ...]) -> tuple[JoinKey, ...]:
        if len(set(keys)) < 2:
            raise ValueError("a join needs at least two different (label, property) keys")
        return keys


class MiddlewareSpec(_Spec):
    """One middleware instance: ``name`` (what pipelines refer to), ``kind``, ``config``."""

    name: str = Field(min_length=1, description="what pipelines refer to it by")
    kind: str = Field(
        min_length=1, description="one of Drasi's kinds: " + ", ".join(MIDDLEWARE_KINDS)
    )
    config: dict[str, Any] = Field(
        default_factory=dict, description="the kind's settings (tables below)"
    )

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        if kind not in MIDDLEWARE_KINDS:
            raise ValueError(
                f"unknown middleware kind {kind!r}; known: {', '.join(MIDDLEWARE_KINDS)}"
            )
        return kind


class SourceLabels(_Spec):
    """The only labels a query takes from one source (Drasi's subscription ``nodes`` and
    ``relations``). Drasi's platform asks the source for exactly these when either list is
    given, and for every label of the query's patterns when both are empty; so does
    drasi_ray: a label the query's patterns name but the lists leave out is not routed from
    that source, and a listed label the patterns never name has no effect."""

    nodes: tuple[str, ...] = Field((), description="node labels taken from the source")
    relations: tuple[str, ...] = Field((), description="relation labels taken from the source")

    @field_validator("nodes", "relations", mode="before")
    @classmethod
    def _drasi_entries(cls, value: Any) -> Any:
        """Drasi writes each label as ``{sourceLabel: <label>}``; a plain label is taken too."""
        if not isinstance(value, (list, tuple)):
            return value
        return [
            entry["sourceLabel"]
            if isinstance(entry, Mapping) and set(entry) == {"sourceLabel"}
            else entry
            for entry in value
        ]

    @field_validator("nodes", "relations")
    @classmethod
    def _not_empty(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not label for label in value):
            raise ValueError("a label must not be empty")
        return value


_SUBSCRIPTION_KEYS = {"id", "pipeline", "nodes", "relations"}


def split_subscriptions(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Drasi's ``sources`` entries may be source ids or ``{id, pipeline, nodes, relations}``
    subscriptions: return ``raw`` with ``sources`` as ids, the pipelines moved to
    ``pipelines`` and the label lists to ``source_labels``.

    A mapping entry must have ``id`` and only those keys; anything else is left for the
    model's validation to refuse with the field's name.
    """
    sources = raw.get("sources")
    if not isinstance(sources, (list, tuple)):
        return dict(raw)
    ids: list[Any] = []
    pipelines: dict[str, Any] = dict(raw.get("pipelines") or {})
    labels: dict[str, Any] = dict(raw.get("source_labels") or {})
    for entry in sources:
        if isinstance(entry, Mapping) and set(entry) <= _SUBSCRIPTION_KEYS and "id" in entry:
            ids.append(entry["id"])
            if entry.get("pipeline"):
                pipelines[str(entry["id"])] = entry["pipeline"]
            if entry.get("nodes") or entry.get("relations"):
                labels[str(entry["id"])] = {
                    "nodes": entry.get("nodes") or (),
                    "relations": entry.get("relations") or (),
                }
        else:
            ids.append(entry)
    split = {**raw, "sources": ids, "pipelines": pipelines}
    if labels:
        split["source_labels"] = labels
    return split


def check_pipelines(
    sources: tuple[str, ...],
    middleware: tuple[MiddlewareSpec, ...],
    pipelines: Mapping[str, tuple[str, ...]],
) -> None:
    """Every pipeline belongs to a source of the query and names declared middleware;
    middleware names are unique. Raises ValueError naming what is wrong."""
    names = [spec.name for spec in middleware]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"middleware name(s) declared twice: {duplicates}")
    for source_id, pipeline in pipelines.items():
        if source_id not in sources:
            raise ValueError(f"pipeline for {source_id!r}, which is not a source of the query")
        unknown = [name for name in pipeline if name not in names]
        if unknown:
            raise ValueError(
                f"pipeline of source {source_id!r} names undeclared middleware {unknown}"
            )
