"""drasi_ray's settings written as Drasi resource documents (what ``drasi-ray describe`` shows).

The inverse of :mod:`drasi_ray.model.resources`: a source, a query or a reaction, however it was
added (a Drasi file, the app's own YAML, Python), as the ``apiVersion: v1`` document that
would add it again, its settings in Drasi's spelling (camelCase, ``subscriptions``, flattened
middleware settings) and only those that differ from their defaults. A Redis URL's password
is masked. Reading a written document gives the same model back (the tests check it), except
for what a Drasi document cannot say: a query's own reactions, parameters and drasi_ray's
settings beyond Drasi's (``dedicated_host``, ``history``, ``auto_start``), which are written
under ``spec.drasiRay`` for the reader's information only.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from drasi_ray.model import urls
from drasi_ray.model.config import PostgresSourceSpec, QueryConfig, SourceSpec
from drasi_ray.model.reaction_specs import AnyAppReaction, AnyReaction, SseReaction

API_VERSION = "v1"


def camel(name: str) -> str:
    """``redis_url`` -> ``redisUrl``."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _changed(model: BaseModel, exclude: set[str] | None = None) -> dict[str, Any]:
    """The fields that differ from their defaults, as JSON values, keys in camelCase."""
    written = model.model_dump(mode="json", exclude_defaults=True, exclude=exclude)
    return {camel(key): value for key, value in written.items()}


def source_document(spec: SourceSpec | PostgresSourceSpec) -> dict[str, Any]:
    """A ``kind: Source`` document of a platform (or CDC-format) or PostgreSQL source."""
    if isinstance(spec, PostgresSourceSpec):
        return _postgres_document(spec)
    props = spec.properties
    properties = _changed(props, {"format", "stream_keys", "redis_url", "cdc"})
    properties["redisUrl"] = urls.redact_url(props.redis_url)
    if len(props.stream_keys) == 1:
        properties["streamKey"] = props.stream_keys[0]
    else:
        properties["streamKeys"] = list(props.stream_keys)
    if props.cdc is not None:
        properties["cdc"] = _changed(props.cdc)
    body: dict[str, Any] = {"kind": _source_kind(props.format.value)}
    body.update(_changed(spec, {"id", "properties", "source_type"}))
    body["properties"] = properties
    return {"apiVersion": API_VERSION, "kind": "Source", "name": spec.id, "spec": body}


def _postgres_document(spec: PostgresSourceSpec) -> dict[str, Any]:
    props = spec.properties
    properties = _changed(props, {"redis_url", "table_keys", "relations", "consumer"})
    properties.update(host=props.host, port=props.port, redisUrl=urls.redact_url(props.redis_url))
    if props.table_keys:
        properties["tableKeys"] = [_changed(key) for key in props.table_keys]
    if props.relations:
        properties["relations"] = [_changed(relation) for relation in props.relations]
    if props.consumer:
        properties["consumer"] = {camel(key): value for key, value in props.consumer.items()}
    body: dict[str, Any] = {"kind": "PostgreSQL"}
    body.update(_changed(spec, {"id", "kind", "properties"}))
    body["properties"] = properties
    return {"apiVersion": API_VERSION, "kind": "Source", "name": spec.id, "spec": body}


def _source_kind(source_format: str) -> str:
    return {"platform": "Platform", "debezium": "Debezium", "deltaforge": "DeltaForge"}.get(
        source_format, source_format
    )


def query_document(config: QueryConfig) -> dict[str, Any]:
    """A ``kind: ContinuousQuery`` document."""
    subscriptions = []
    for source in config.sources:
        entry: dict[str, Any] = {"id": source}
        labels = config.source_labels.get(source)
        if labels is not None:
            entry["nodes"] = [{"sourceLabel": label} for label in labels.nodes]
            entry["relations"] = [{"sourceLabel": label} for label in labels.relations]
        if source in config.pipelines:
            entry["pipeline"] = list(config.pipelines[source])
        subscriptions.append(entry)
    sources: dict[str, Any] = {"subscriptions": subscriptions}
    if config.joins:
        sources["joins"] = [join.model_dump(mode="json") for join in config.joins]
    if config.middleware:
        sources["middleware"] = [
            {"kind": spec.kind, "name": spec.name, **spec.config} for spec in config.middleware
        ]
    spec: dict[str, Any] = {"mode": "query", "query": config.query}
    language = getattr(config.query_language, "value", config.query_language)
    if str(language).lower() != "cypher":
        spec["queryLanguage"] = str(language).upper()
    spec["sources"] = sources
    beyond = _changed(
        config,
        {"id", "query", "sources", "query_language", "joins", "middleware", "pipelines"}
        | {"source_labels", "reactions"},
    )
    own = [_reaction_fields(reaction) for reaction in config.reactions if reaction.name is None]
    if own:
        beyond["reactions"] = own
    if beyond:
        spec["drasiRay"] = beyond
    return {"apiVersion": API_VERSION, "kind": "ContinuousQuery", "name": config.id, "spec": spec}


def reaction_document(name: str, queries: list[str], spec: AnyReaction) -> dict[str, Any]:
    """A ``kind: Reaction`` document: the reaction ``name`` of ``queries``."""
    body: dict[str, Any] = {"kind": spec.kind, "queries": dict.fromkeys(queries)}
    properties = _reaction_fields(spec)
    properties.pop("kind")
    if properties:
        body["properties"] = properties
    return {"apiVersion": API_VERSION, "kind": "Reaction", "name": name, "spec": body}


def _reaction_fields(spec: AnyReaction) -> dict[str, Any]:
    fields = _changed(spec, {"name", "function"})
    fields["kind"] = spec.kind
    if "redisUrl" in fields:
        fields["redisUrl"] = urls.redact_url(fields["redisUrl"])
    function = getattr(spec, "function", None)
    if function is not None:
        fields["function"] = function if isinstance(function, str) else repr(function)
    return fields


_APP_KINDS = {"http": "Http", "sse": "SSE", "storedproc-postgres": "StoredProc"}


def app_reaction_document(spec: AnyAppReaction) -> dict[str, Any]:
    """A ``kind: Reaction`` document of a reaction of the app (HTTP, SSE, stored
    procedures): Drasi's kind name, its queries with their own settings, the rest as
    properties."""
    body: dict[str, Any] = {"kind": _APP_KINDS.get(spec.kind, spec.kind)}
    if isinstance(spec, SseReaction):
        if spec.queries is not None:
            body["queries"] = list(spec.queries)
    else:
        body["queries"] = {
            query_id: None if own is None else _changed(own)
            for query_id, own in spec.queries.items()
        }
    properties = _changed(spec, {"id", "kind", "queries"})
    if properties:
        body["properties"] = properties
    return {"apiVersion": API_VERSION, "kind": "Reaction", "name": spec.id, "spec": body}
