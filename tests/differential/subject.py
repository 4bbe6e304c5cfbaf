"""drasi_ray's run of a case, in process, along the path a change takes in the app.

Each change is written as a platform CloudEvent and decoded by the consumer's decoder
(:func:`drasi_ray.source.decode.decode_entry`, as the consumer decodes it), applied by a
store shard's core (:class:`ShardCore`: the versioned element store, then routing by label;
a query's pipelines run on what it is handed, as its host runs them),
carried to each query as a pickled :class:`~drasi_ray.actors.wire.DeltaPacket` (what a call
carries) and applied by the query's
:class:`~drasi_ray.query.engine.ContinuousQuery`. The diffs are then written as JSON by
:func:`drasi_ray.model.encoding.dumps` and read back, so they hold exactly what a user reads:
the same JSON values drasi-lib hands its Python callbacks.

Only Ray itself, Redis and the subscriber buffers are left out; the end-to-end variant
(``tests/pipeline/test_differential_end_to_end.py``) runs those too.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

import orjson

from drasi_ray.actors.wire import DeltaPacket
from drasi_ray.host.pipelines import SourcePipelines
from drasi_ray.model.changes import ElementDelta, PipedChange
from drasi_ray.model.encoding import dumps
from drasi_ray.model.errors import ConfigError, QuerySyntaxError
from drasi_ray.model.identity import reads_several
from drasi_ray.model.query_specs import MiddlewareSpec, QueryJoin, QueryLanguage
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.query.expressions import contains_aggregate
from drasi_ray.shards.core import ShardCore
from drasi_ray.shards.routing import LabelFilter
from drasi_ray.source.decode import decode_entry, encode_cloud_event
from tests.oracle.model import Case, CaseRun, QueryRun, QuerySpec, empty_steps


def as_users_read(value: Any) -> Any:
    """``value`` as drasi_ray writes it in JSON, read back."""
    return orjson.loads(dumps(value))


class DrasiRaySubject:
    """A store shard's core plus one engine per query, fed one entry per change."""

    def __init__(self, queries: Sequence[QuerySpec]) -> None:
        self.shard = ShardCore()
        # each query's pipelines, as its host runs them (the query's own, nobody else's)
        self.pipes: dict[str, SourcePipelines] = {}
        self.engines: dict[str, ContinuousQuery] = {}
        self.refused: dict[str, str] = {}
        for query in queries:
            try:
                self._register(query)
            except (QuerySyntaxError, ConfigError) as error:
                self.refused[query.id] = f"refused: {error}"

    def _register(self, query: QuerySpec) -> None:
        joins = [QueryJoin.model_validate(join) for join in query.joins]
        engine = ContinuousQuery(
            query.id, query.text, joins=joins, language=QueryLanguage(query.language)
        )
        middleware = [MiddlewareSpec.model_validate(spec) for spec in query.middleware]
        pipes = self.pipes[query.id] = SourcePipelines()
        several = reads_several(query.sources)
        pipes.subscribe(query.id, middleware, query.pipelines, self.shard.stores, several)
        self.shard.pipe(query.id, [source for source, names in query.pipelines.items() if names])
        self.engines[query.id] = engine
        labels = LabelFilter.of(engine.node_labels, engine.relation_labels)
        self.shard.table.register_query(query.id, query.sources, labels)

    def apply(
        self, position: int, event: dict[str, Any], source: str
    ) -> dict[str, list[dict[str, Any]]]:
        """The diffs of each query for the platform ``event`` at stream ``position`` of
        ``source``."""
        entry_id = f"{position + 1}-0"
        entry = decode_entry(entry_id, {b"data": encode_cloud_event([event])})
        routed, _report = self.shard.apply_entries(source, [entry], json_values=True)
        diffs: dict[str, list[dict[str, Any]]] = {}
        for query_id, items in routed.items():
            deltas = self._through_pipes(query_id, items)
            packet = DeltaPacket(deltas, self.shard.json_values)
            carried = pickle.loads(pickle.dumps(packet))
            produced = self.engines[query_id].apply_batch(carried)
            diffs[query_id] = [diff for step in produced for diff in as_users_read(step)]
        return diffs

    def _through_pipes(self, query_id: str, items: Sequence[Any]) -> list[ElementDelta]:
        """The deltas a query's engine gets: piped changes through its pipelines first."""
        deltas: list[ElementDelta] = []
        for item in items:
            if isinstance(item, PipedChange):
                derived = self.pipes[query_id].apply(item.source_id, item.change).deltas
                deltas.extend(derived.get(query_id, ()))
            else:
                deltas.append(item)
        return deltas

    def results(self, query_id: str) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = as_users_read(self.engines[query_id].results())
        return rows


def run_drasi_ray(case: Case, queries: Sequence[QuerySpec]) -> CaseRun:
    """drasi_ray's run of every query over ``case``."""
    subject = DrasiRaySubject(queries)
    runs = {q.id: QueryRun(empty_steps(case.changes)) for q in queries}
    engines = subject.engines
    for query_id, engine in engines.items():
        runs[query_id].aggregating = _aggregates(engine)
    for position, change in enumerate(case.changes):
        reached = {query_id: engine.row_changes for query_id, engine in engines.items()}
        applied = subject.apply(position, change.platform_event(), change.source)
        for query_id, diffs in applied.items():
            runs[query_id].steps[position].extend(diffs)
        for query_id, engine in engines.items():
            runs[query_id].rows.append(engine.row_changes - reached[query_id])
    for query_id, run in runs.items():
        if query_id in subject.refused:
            run.failure = subject.refused[query_id]
        else:
            run.results = subject.results(query_id)
    return CaseRun(case.name, runs)


def _aggregates(engine: ContinuousQuery) -> bool:
    """Whether a part of the query aggregates (a WITH or the RETURN)."""
    items = (item for part in engine.query.parts for item in part.projection.items)
    return any(contains_aggregate(item.expression) for item in items)
