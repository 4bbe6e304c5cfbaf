"""``Query``: the builder users write continuous queries with (Drasi's ``Query::cypher`` and
``Query::gql``).

Query.cypher("hot-sensors").query("MATCH (s:Sensor) ... RETURN ...").from_source("sensors").build()
Query.gql("hot-sensors").query("MATCH (s:Sensor) FILTER s.t > 70 RETURN ...").from_source(...)

Joins and middleware as in Drasi's query config::

    Query.cypher("pickups").query("MATCH (o:Order)-[:PICKED_UP_BY]->(v:Vehicle) RETURN ...")
        .from_source("orders").from_source("vehicles", pipeline=["plates"])
        .with_join("PICKED_UP_BY", ("Order", "plate"), ("Vehicle", "plate"))
        .with_middleware("plates", "promote", {"mappings": [...]})
        .build()
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from drasi_ray.model.config import QueryConfig, validated
from drasi_ray.model.query_specs import MiddlewareSpec, QueryJoin, QueryLanguage
from drasi_ray.model.reaction_specs import AnyReaction


class Query:
    """Entry point of the query builder."""

    @staticmethod
    def cypher(query_id: str) -> QueryBuilder:
        """A query written in Cypher (docs/semantics.md §3)."""
        return QueryBuilder(query_id)

    @staticmethod
    def gql(query_id: str) -> QueryBuilder:
        """A query written in GQL, as Drasi's GQL has it (docs/semantics.md §3,
        :mod:`drasi_ray.query.gql`)."""
        return QueryBuilder(query_id, QueryLanguage.GQL)


class QueryBuilder:
    """Fluent construction of a :class:`~drasi_ray.model.config.QueryConfig`."""

    def __init__(self, query_id: str, language: QueryLanguage = QueryLanguage.CYPHER) -> None:
        self._id = query_id
        self._language = language
        self._text = ""
        self._sources: list[str] = []
        self._parameters: dict[str, Any] = {}
        self._auto_start = True
        self._reactions: list[AnyReaction] = []
        self._joins: list[QueryJoin] = []
        self._middleware: list[MiddlewareSpec] = []
        self._pipelines: dict[str, tuple[str, ...]] = {}
        self._labels: dict[str, dict[str, tuple[str, ...]]] = {}
        self._history: dict[str, Any] = {}
        self._dedicated_host = False

    def query(self, text: str) -> QueryBuilder:
        self._text = text
        return self

    def from_source(
        self,
        source_id: str,
        pipeline: Sequence[str] = (),
        *,
        nodes: Sequence[str] = (),
        relations: Sequence[str] = (),
    ) -> QueryBuilder:
        """Read ``source_id``; its changes first pass the middleware named in ``pipeline``,
        in order (declared with :meth:`with_middleware`). ``nodes`` / ``relations``: take
        only these labels from the source (Drasi's subscription labels: when either is given,
        a kind with none listed takes none)."""
        self._sources.append(source_id)
        if pipeline:
            self._pipelines[source_id] = tuple(pipeline)
        if nodes or relations:
            self._labels[source_id] = {"nodes": tuple(nodes), "relations": tuple(relations)}
        return self

    def from_query(self, query_id: str) -> QueryBuilder:
        """Read another query's results: each of its result rows is a node labelled
        ``query_id`` (query chaining, beyond Drasi: see :mod:`drasi_ray.reactions.chain`)."""
        return self.from_source(query_id)

    def with_join(self, join_id: str, *keys: tuple[str, str]) -> QueryBuilder:
        """Declare the synthetic relation ``join_id`` between nodes whose key properties are
        equal; ``keys`` are ``(label, property)`` pairs, at least two."""
        spec = validated(
            QueryJoin,
            id=join_id,
            keys=tuple({"label": label, "property": name} for label, name in keys),
        )
        self._joins.append(spec)
        return self

    def with_middleware(
        self, name: str, kind: str, config: Mapping[str, Any] | None = None
    ) -> QueryBuilder:
        """Declare middleware ``name`` of ``kind`` (Drasi's kinds) for pipelines to name."""
        spec = validated(MiddlewareSpec, name=name, kind=kind, config=dict(config or {}))
        self._middleware.append(spec)
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

    def with_history(
        self, max_versions: int | None = None, retention_ms: int | None = None
    ) -> QueryBuilder:
        """Bound the element history kept if the query calls Drasi's past functions
        (:class:`~drasi_ray.model.config.HistoryConfig`; an argument left None keeps its
        default)."""
        if max_versions is not None:
            self._history["max_versions"] = max_versions
        if retention_ms is not None:
            self._history["retention_ms"] = retention_ms
        return self

    def with_dedicated_host(self, dedicated: bool = True) -> QueryBuilder:
        """Run the query on a query host of its own (a heavy query), not a shared one."""
        self._dedicated_host = dedicated
        return self

    def build(self) -> QueryConfig:
        config: QueryConfig = validated(
            QueryConfig,
            id=self._id,
            query=self._text,
            query_language=self._language,
            sources=tuple(self._sources),
            parameters=dict(self._parameters),
            auto_start=self._auto_start,
            reactions=tuple(self._reactions),
            joins=tuple(self._joins),
            middleware=tuple(self._middleware),
            pipelines=dict(self._pipelines),
            source_labels=dict(self._labels),
            history=dict(self._history),
            dedicated_host=self._dedicated_host,
        )
        return config
