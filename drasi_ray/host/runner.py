"""A query's logic without Ray: the engine, result numbering, subscriber buffers.

:class:`QueryRunner` applies the deltas the store shards route to one query, numbers the
resulting :class:`~drasi_ray.model.results.QueryResult` objects (``sequence`` starts at 1 and
strictly increases) and hands them to its observers (reactions, metrics) and subscriber buffers.
Its owner is :class:`~drasi_ray.host.hosted.HostedQuery` (a query inside a query host), which
feeds it in the order :mod:`drasi_ray.host.inbox` and :mod:`drasi_ray.host.merge` decide.

A query that calls Drasi's stateful functions also runs its due re-evaluations
(:meth:`QueryRunner.take_due`, then :meth:`QueryRunner.publish_due`), one result per entry that
changed something, timed at the entry's due time. Its function state is handed to
``save_state`` (the owner persists it) after each change or due re-evaluation and before the
results are published, so what was published is always what a restart rebuilds.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias

import orjson

from drasi_ray.host.reports import QueryReport, SubscriberReport
from drasi_ray.host.subscribers import SubscriberBuffer
from drasi_ray.model.changes import Element, ElementDelta
from drasi_ray.model.config import QueryConfig
from drasi_ray.model.results import (
    ControlResult,
    ControlSignal,
    Delivered,
    QueryResult,
    now_ms,
)
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.query.expressions import contains_aggregate
from drasi_ray.query.stateful import FunctionState

logger = logging.getLogger("drasi_ray.query")

StateSaver: TypeAlias = Callable[[dict[str, bytes | None]], Awaitable[None]]
"""Persists changed function-state fields (name -> JSON bytes, None: delete the field)."""

Due: TypeAlias = list[tuple[int, list[dict[str, Any]]]]
"""Due re-evaluations that changed the result: (due time, diffs) each."""

RowChanges: TypeAlias = dict[str, dict[str, Any] | None]
"""Result rows that changed, by row id (:mod:`drasi_ray.query.row_ids`): each row as it now
is, None for a row that is gone."""

RowWatcher: TypeAlias = Callable[[RowChanges, int], None]
"""Takes the result rows one change (or due re-evaluation) changed, and that change's time."""


def grouping_keys(query: ContinuousQuery) -> list[str]:
    """The RETURN columns that are not aggregates: Drasi's ``groupingKeys``."""
    return [
        item.name for item in query.query.returns.items if not contains_aggregate(item.expression)
    ]


class QueryRunner:
    """A continuous query plus its result numbering and subscriber buffers (no Ray)."""

    def __init__(self, config: QueryConfig, save_state: StateSaver | None = None) -> None:
        self.config = config
        self.engine = make_engine(config)
        self._save_state = save_state
        self.sequence = 0
        self.diffs_emitted = 0
        self.subscribers: dict[str, SubscriberBuffer] = {}
        self.observers: list[Callable[[Delivered], None]] = []
        self.batch_observers: list[Callable[[list[Delivered]], None]] = []
        self.bootstrapped = False
        self._row_watcher: RowWatcher | None = None

    def watch_rows(self, watcher: RowWatcher) -> None:
        """Hand ``watcher`` every change of the result set from now on, by row id, after each
        change or due re-evaluation that made it (query chaining reads the result set so;
        a bootstrap's rows are read whole, :meth:`ContinuousQuery.results_by_id`)."""
        self._row_watcher = watcher
        self.engine.track_rows()

    def _rows_changed(self, time_ms: int) -> None:
        if self._row_watcher is not None:
            changes = self.engine.take_row_changes()
            if changes:
                self._row_watcher(changes, time_ms)

    async def publish(self, item: Delivered) -> None:
        """Hand ``item`` to the observers (reactions, metrics: never block), then subscribers."""
        await self.publish_many([item])

    async def publish_many(self, items: list[Delivered]) -> None:
        """:meth:`publish` each item, in order, with one buffer operation per subscriber."""
        if not items:
            return
        for observe in self.observers:
            for item in items:
                observe(item)
        for observe_batch in self.batch_observers:
            observe_batch(items)
        for buffer in list(self.subscribers.values()):
            await buffer.put_many(items)

    async def signal(self, signal: ControlSignal) -> None:
        await self.publish(ControlResult(self.config.id, self.sequence, now_ms(), signal))

    async def bootstrap(
        self, elements: Sequence[Element], history: Mapping[str, bytes] | None = None
    ) -> None:
        """Load the graph (and the element history the store shards keep for a query that
        calls Drasi's past functions). A re-bootstrap (after a shard or own restart)
        rebuilds the engine and emits the difference between the old and new results as one
        result, so subscribers catch up on whatever the crash interrupted."""
        await self.signal(ControlSignal.BOOTSTRAP_STARTED)
        previous = self.engine.results() if self.bootstrapped else []
        if self.bootstrapped:
            config, state = self.config, self.engine.state
            state.restored = True  # the new engine rebuilds the rows this one holds
            self.engine = make_engine(config, state)
            if self._row_watcher is not None:
                self.engine.track_rows()
        self.engine.load_history(history or {})
        self.engine.bootstrap(elements)
        await self.save_state()
        # The loaded graph lives as long as the query: keep it out of every later GC pass
        # (a full collection over a 1M-element graph stalls the actor for a visible moment).
        gc.freeze()
        if self.bootstrapped:
            await self._emit(catch_up_diffs(previous, self.engine.results()), now_ms())
        self.bootstrapped = True
        await self.signal(ControlSignal.BOOTSTRAP_COMPLETED)
        await self.signal(ControlSignal.RUNNING)

    def _result(self, diffs: list[dict[str, Any]], source_time_ms: int, at_ms: int) -> QueryResult:
        self.sequence += 1
        self.diffs_emitted += len(diffs)
        return QueryResult(self.config.id, self.sequence, at_ms, source_time_ms, tuple(diffs))

    async def _emit(self, diffs: list[dict[str, Any]], source_time_ms: int) -> None:
        if diffs:
            await self.publish(self._result(diffs, source_time_ms, now_ms()))

    def report(self, line_calls: int, reactions: list[dict[str, Any]]) -> QueryReport:
        """The live status, with what only the actor shell knows."""
        return QueryReport(
            query_id=self.config.id,
            line_calls=line_calls,
            sequence=self.sequence,
            diffs=self.diffs_emitted,
            rows=len(self.engine.results()),
            columns=list(self.engine.column_names),
            reactions=reactions,
            subscribers={
                sid: SubscriberReport(len(buffer), buffer.dropped)
                for sid, buffer in self.subscribers.items()
            },
        )

    async def apply(self, deltas: Sequence[ElementDelta]) -> int:
        """Apply deltas in order; one QueryResult per delta that changed the result set,
        handed to observers and subscribers together once the batch is evaluated."""
        before = self.diffs_emitted
        at_ms = now_ms()
        results: list[Delivered] = [
            self._result(diffs, delta.source_time_ms, at_ms)
            for delta, diffs in zip(deltas, self._apply_batch(deltas), strict=True)
            if diffs
        ]
        await self.save_state()
        await self.publish_many(results)
        for message in self.engine.take_evaluation_errors():
            logger.warning("query %s: row refused: %s", self.config.id, message)
        return self.diffs_emitted - before

    def _apply_batch(self, deltas: Sequence[ElementDelta]) -> list[list[dict[str, Any]]]:
        """The engine's diffs of each delta; with a row watcher, the rows each one changed
        are handed over after it (also when it fails: what it did is in the result set)."""
        if self._row_watcher is None:
            return self.engine.apply_batch(deltas)
        produced = []
        for delta in deltas:
            try:
                produced.append(self.engine.apply(delta))
            finally:
                self._rows_changed(delta.source_time_ms)
        return produced

    # ------------------------------------------------------------------ function state

    def restore_state(self, fields: Mapping[str, bytes]) -> None:
        """Load persisted function state (before the first bootstrap after a restart)."""
        self.engine.state.load(fields)

    async def save_state(self) -> None:
        """Hand the function state changed since the last call to ``save_state``."""
        if self._save_state is None or not self.engine.stateful:
            return
        changes = self.engine.state.take_changes()
        if changes:
            await self._save_state(changes)

    def next_due_ms(self) -> int | None:
        """When the next scheduled re-evaluation is due (None: nothing is scheduled)."""
        return self.engine.next_due_ms() if self.bootstrapped else None

    def take_due(self, now_ms: int) -> Due:
        """Run the re-evaluations due at ``now_ms`` (results not numbered nor published yet:
        :meth:`save_state`, then :meth:`publish_due`)."""
        if not self.bootstrapped:
            return []
        if self._row_watcher is None:
            return self.engine.fire_due_timed(now_ms)
        return self.engine.fire_due_timed(now_ms, after_each=self._rows_changed)

    async def publish_due(self, due: Due) -> None:
        """Number and publish the results of :meth:`take_due`, one per re-evaluation."""
        at_ms = now_ms()
        await self.publish_many([self._result(diffs, due_ms, at_ms) for due_ms, diffs in due])


def make_engine(config: QueryConfig, state: FunctionState | None = None) -> ContinuousQuery:
    """The engine of the query ``config`` describes (with the function ``state`` of the
    engine it replaces, if any)."""
    return ContinuousQuery(
        config.id,
        config.query,
        config.parameters,
        config.joins,
        state=state,
        history=config.history.limits(),
        language=config.query_language,
    )


def catch_up_diffs(
    previous: list[dict[str, Any]], current: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """DELETE the rows that disappeared and ADD the rows that appeared (as multisets)."""
    remaining = [orjson.dumps(row, option=orjson.OPT_SORT_KEYS) for row in current]
    deleted: list[dict[str, Any]] = []
    for row in previous:
        key = orjson.dumps(row, option=orjson.OPT_SORT_KEYS)
        if key in remaining:
            remaining.remove(key)
        else:
            deleted.append({"type": "DELETE", "data": row})
    added = [{"type": "ADD", "data": orjson.loads(key)} for key in remaining]
    return deleted + added
