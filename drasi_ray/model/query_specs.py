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


def split_subscriptions(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Drasi's ``sources`` entries may be source ids or ``{id, pipeline}`` subscriptions:
    return ``raw`` with ``sources`` as ids and the pipelines moved to ``pipelines``.

    A mapping entry must have exactly the keys ``id`` and (optionally) ``pipeline``; anything
    else is left for the model's validation to refuse with the field's name.
    """
    sources = raw.get("sources")
    if not isinstance(sources, (list, tuple)):
        return dict(raw)
    ids: list[Any] = []
    pipelines: dict[str, Any] = dict(raw.get("pipelines") or {})
    for entry in sources:
        if isinstance(entry, Mapping) and set(entry) <= {"id", "pipeline"} and "id" in entry:
            ids.append(entry["id"])
            if entry.get("pipeline"):
                pipelines[str(entry["id"])] = entry["pipeline"]
        else:
            ids.append(entry)
    return {**raw, "sources": ids, "pipelines": pipelines}


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
