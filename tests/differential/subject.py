"""drasi_ray's run of a case, in process, along the path a change takes in the app.

The case runs in :class:`~drasi_ray.testing.inprocess.InProcessApp`: each change is written as
a platform CloudEvent, decoded by the consumer's decoder, applied by a store shard's service
(the versioned element store, then routing by label), carried to its query host as a pickled
packet (what a line carries), run through the query's pipelines and applied by its engine,
numbered and buffered for a subscriber. The diffs the subscriber takes are then written as JSON
by :func:`drasi_ray.model.encoding.dumps` and read back, so they hold exactly what a user reads:
the same JSON values drasi-lib hands its Python callbacks.

Only Ray itself and Redis are left out; the end-to-end variant
(``tests/pipeline/test_differential_end_to_end.py``) runs those too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from drasi_ray.model.config import QueryConfig
from drasi_ray.model.encoding import dumps
from drasi_ray.model.errors import ConfigError, QuerySyntaxError
from drasi_ray.model.query_specs import MiddlewareSpec, QueryJoin, QueryLanguage
from drasi_ray.model.results import QueryResult
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.query.expressions import contains_aggregate
from drasi_ray.shards.core import ShardCore
from drasi_ray.source.decode import decode_entry, encode_cloud_event
from drasi_ray.testing.inprocess import InProcessApp, InProcessSubscription
from tests.oracle.model import Case, CaseRun, QueryRun, QuerySpec, empty_steps


def as_users_read(value: Any) -> Any:
    """``value`` as drasi_ray writes it in JSON, read back."""
    return orjson.loads(dumps(value))


class DrasiRaySubject:
    """The pipeline in one process, one subscription per query, fed one entry per change."""

    def __init__(self, queries: Sequence[QuerySpec]) -> None:
        self.app = InProcessApp()
        self.feeds: dict[str, InProcessSubscription] = {}
        self.refused: dict[str, str] = {}
        for query in queries:
            try:
                self._register(query)
            except (QuerySyntaxError, ConfigError) as error:
                self.refused[query.id] = f"refused: {error}"

    def _register(self, query: QuerySpec) -> None:
        config = QueryConfig(
            id=query.id,
            query=query.text,
            query_language=QueryLanguage(query.language),
            sources=query.sources,
            joins=tuple(QueryJoin.model_validate(join) for join in query.joins),
            middleware=tuple(MiddlewareSpec.model_validate(spec) for spec in query.middleware),
            pipelines={source: tuple(names) for source, names in query.pipelines.items()},
        )
        self.app.add_query(config)
        self.feeds[query.id] = self.app.subscribe(query.id)

    @property
    def shard(self) -> ShardCore:
        """The one store shard's core (the subject runs one shard)."""
        return self.app.shards[0].core

    @property
    def engines(self) -> dict[str, ContinuousQuery]:
        """Each registered query's engine now."""
        return {query_id: self.app.engine(query_id) for query_id in self.feeds}

    def apply(
        self, position: int, event: dict[str, Any], source: str
    ) -> dict[str, list[dict[str, Any]]]:
        """The diffs of each query for the platform ``event`` at stream ``position`` of
        ``source``."""
        return self.apply_payload(f"{position + 1}-0", encode_cloud_event([event]), source)

    def apply_payload(
        self, entry_id: str, payload: bytes, source: str
    ) -> dict[str, list[dict[str, Any]]]:
        """The diffs of each query for the stream entry ``entry_id`` of ``source`` whose
        ``data`` field is ``payload`` (a CloudEvent of any number of events)."""
        self.app.apply(source, [decode_entry(entry_id, {b"data": payload})])
        diffs: dict[str, list[dict[str, Any]]] = {}
        for query_id, feed in self.feeds.items():
            results = [item for item in feed.drain() if isinstance(item, QueryResult)]
            if results:
                diffs[query_id] = [as_users_read(diff) for r in results for diff in r.results]
        return diffs

    def results(self, query_id: str) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = as_users_read(self.app.results(query_id))
        return rows

    def close(self) -> None:
        self.app.close()


def run_drasi_ray(case: Case, queries: Sequence[QuerySpec]) -> CaseRun:
    """drasi_ray's run of every query over ``case``."""
    subject = DrasiRaySubject(queries)
    try:
        return _run(subject, case, queries)
    finally:
        subject.close()


def _run(subject: DrasiRaySubject, case: Case, queries: Sequence[QuerySpec]) -> CaseRun:
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
