"""``Query``: the builder users write continuous queries with (Drasi's ``Query::cypher``).

Query.cypher("hot-sensors").query("MATCH (s:Sensor) ... RETURN ...").from_source("sensors").build()
"""

from __future__ import annotations

from typing import Any

from drasi_ray.model.config import QueryConfig, validated
from drasi_ray.model.reaction_specs import AnyReaction


class Query:
    """Entry point of the query builder."""

    @staticmethod
    def cypher(query_id: str) -> QueryBuilder:
        return QueryBuilder(query_id)


class QueryBuilder:
    """Fluent construction of a :class:`~drasi_ray.config.QueryConfig`."""

    def __init__(self, query_id: str) -> None:
        self._id = query_id
        self._text = ""
        self._sources: list[str] = []
        self._parameters: dict[str, Any] = {}
        self._auto_start = True
        self._reactions: list[AnyReaction] = []

    def query(self, text: str) -> QueryBuilder:
        self._text = text
        return self

    def from_source(self, source_id: str) -> QueryBuilder:
        self._sources.append(source_id)
        return self

    def with_parameter(self, name: str, value: Any) -> QueryBuilder:
        self._parameters[name] = value
        return self

    def with_parameters(self, parameters: dict[str, Any]) -> QueryBuilder:
        self._parameters.update(parameters)
        return self

    def with_auto_start(self, auto_start: bool) -> QueryBuilder:
        self._auto_start = auto_start
        return self

    def with_reaction(self, reaction: AnyReaction) -> QueryBuilder:
        """Also send results to ``reaction`` (see :mod:`drasi_ray.reactions`)."""
        self._reactions.append(reaction)
        return self

    def build(self) -> QueryConfig:
        config: QueryConfig = validated(
            QueryConfig,
            id=self._id,
            query=self._text,
            sources=tuple(self._sources),
            parameters=dict(self._parameters),
            auto_start=self._auto_start,
            reactions=tuple(self._reactions),
        )
        return config
