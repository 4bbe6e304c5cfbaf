"""A store shard's state and logic without Ray: apply a batch, route its deltas.

:class:`ShardCore` owns one versioned element store per source
(:mod:`drasi_ray.shards.store`) and a copy of the subscription table
(:mod:`drasi_ray.shards.routing`). :meth:`ShardCore.apply_entries` applies a consumer's
batch to the store and returns, per query, what it must see, in store order: the deltas, or,
for a query that sees the source through a middleware pipeline, the applied changes themselves
(:class:`~drasi_ray.model.changes.PipedChange`), which the query runs through its pipeline
(:mod:`drasi_ray.host.pipelines`). A query that reads several sources gets deltas and
snapshots with the elements under their graph ids (:mod:`drasi_ray.model.identity`: the
source is part of an element's identity). Every store
shard runs one, over the elements it owns (:mod:`drasi_ray.model.shards`; the coordinator
actor is shard 0); the Ray shell (:mod:`drasi_ray.actors.shard`) persists, delivers and
recovers around it.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, TypeAlias

from drasi_ray.model.changes import (
    ZERO_VERSION,
    DecodedEntry,
    Element,
    ElementChange,
    ElementDelta,
    PipedChange,
    SubscriptionControl,
    VersionedElement,
)
from drasi_ray.model.history import ElementHistory, HistoryLimits
from drasi_ray.model.identity import graph_delta, graph_element
from drasi_ray.shards.reports import BatchReport, ShardReport, ShardStats
from drasi_ray.shards.routing import LabelFilter, SubscriptionTable
from drasi_ray.shards.store import ElementStore

logger = logging.getLogger("drasi_ray.coordinator")

Routed: TypeAlias = ElementDelta | PipedChange
"""What a query is handed: a delta, or (a source it pipes) the applied change."""

_NOBODY: frozenset[str] = frozenset()


class ApplyProbe(Protocol):
    """Sees each change before the shard applies it: how crash tests inject faults
    (:class:`drasi_ray.testing.failpoints.Failpoints`). It must pickle: it travels to the
    shard actor."""

    def check_element(self, element_id: str) -> None:
        """Called with the changed element's id; may end the process."""


class ShardCore:
    """A store shard's state and logic, without Ray (tested directly)."""

    def __init__(self, probe: ApplyProbe | None = None, durable: bool = False) -> None:
        """``probe`` (tests only) sees each change's element id before it is applied;
        ``durable``: the element histories kept are written to the durable state."""
        self.stores: dict[str, ElementStore] = {}
        self._durable = durable
        self.table = SubscriptionTable()
        # source id -> the queries that see it through a pipeline: they get its applied changes
        self.piped: dict[str, set[str]] = {}
        self.stats = ShardStats()
        self._probe = probe
        # (entry id, change, delta) of each valid change, for the change log (delta None: the
        # store took nothing visible from it: overtaken by a newer change, or a duplicate,
        # which the log drops by its position); None: not kept.
        self.applied: list[tuple[str, ElementChange, ElementDelta | None]] | None = None
        # Every property value in the stores is a JSON value (they come from decoded JSON and
        # from the orjson state), so deltas may travel as MessagePack; False for good once a
        # batch of built entries (any Python values) was applied.
        self.json_values = True
        # The element histories kept for the queries that call Drasi's past functions, fed the
        # deltas routed to them, so a restarted query actor gets its history back.
        self.histories: dict[str, ElementHistory] = {}

    def store(self, source_id: str) -> ElementStore:
        store = self.stores.get(source_id)
        if store is None:
            store = self.stores[source_id] = ElementStore()
        return store

    def pipe(self, query_id: str, sources: Iterable[str]) -> None:
        """``query_id`` sees ``sources`` (and no others) through a pipeline: it gets every
        change of them the store applies, whatever its labels (the pipeline may relabel)."""
        for queries in self.piped.values():
            queries.discard(query_id)
        for source_id in sources:
            self.piped.setdefault(source_id, set()).add(query_id)

    def apply_entries(  # noqa: C901  (the per-change hot loop, inline on purpose)
        self, source_id: str, entries: Sequence[DecodedEntry], json_values: bool = False
    ) -> tuple[dict[str, list[Routed]], BatchReport]:
        """Apply a batch to the store; return what each query must see, in order: deltas,
        or applied changes for a query that pipes the source (module docstring).

        ``json_values``: every property value of the batch is a JSON value (decoded from
        JSON); once a batch that is not is applied, :attr:`json_values` is False for good.
        """
        store = self.store(source_id)
        routed: dict[str, list[Routed]] = defaultdict(list)
        self.json_values = self.json_values and json_values
        piped = self.piped.get(source_id, _NOBODY)
        several = self.table.several_sources
        # Per change: names bound once, counts kept in locals (the report is made at the end).
        apply, route, probe, log = store.apply, self.table.route, self._probe, self.applied
        changes = applied = routes = controls = 0
        for entry in entries:
            for control in entry.controls:
                controls += 1
                self._apply_control(source_id, control)
            for change in entry.changes:
                changes += 1
                if probe is not None:
                    probe.check_element(change.element.id)
                delta = apply(change)
                if log is not None:  # overtaken changes (delta None) are history too
                    log.append((entry.entry_id, change, delta))
                if delta is None:
                    continue
                applied += 1
                in_graph: ElementDelta | None = None  # under its graph id, made once
                for query_id in route(source_id, delta):
                    if query_id in piped:
                        continue
                    if query_id in several:
                        in_graph = in_graph or graph_delta(source_id, delta)
                        routed[query_id].append(in_graph)
                    else:
                        routed[query_id].append(delta)
                    routes += 1
                if piped:
                    raw = PipedChange(source_id, entry.entry_id, change)
                    for query_id in piped:
                        routed[query_id].append(raw)
                        routes += 1
        report = BatchReport(
            changes=changes,
            applied=applied,
            duplicates=changes - applied,
            controls=controls,
            routed=routes,
        )
        if self.histories:
            self._record_histories(source_id, routed)
        self._count(source_id, report)
        return routed, report

    def keep_history(self, query_id: str, limits: HistoryLimits | None) -> None:
        """Keep (with ``limits``) or stop keeping the element history of ``query_id``. A
        history already kept goes on with the new limits."""
        if limits is None:
            self.histories.pop(query_id, None)
            return
        history = self.histories.get(query_id)
        if history is None:
            self.histories[query_id] = ElementHistory(limits, durable=self._durable)
        else:
            history.limits = limits

    def _record_histories(self, source_id: str, routed: dict[str, list[Routed]]) -> None:
        """Record the deltas routed to each query that keeps a history, as its engine does:
        the version when the query sees the element after the change, else the element is
        forgotten. (What a pipeline derives is not kept here: a query that pipes a source
        keeps the history of its outputs in its own engine only.)"""
        for query_id, history in self.histories.items():
            for delta in routed.get(query_id, ()):
                if isinstance(delta, PipedChange):
                    continue
                after = delta.after
                if after is not None and not self._selects(query_id, source_id, after):
                    after = None
                history.observe(delta.element.id, after)

    def _selects(self, query_id: str, source_id: str, element: Element) -> bool:
        return any(labels.matches(element) for labels in self.table.filter_for(query_id, source_id))

    def history_records(self, query_id: str, elements: Sequence[Element]) -> dict[str, bytes]:
        """The histories of ``elements`` (a bootstrap snapshot of ``query_id``) to ship with
        the bootstrap, each element's current version recorded first, as the query's engine
        records the elements it bootstraps."""
        history = self.histories.get(query_id)
        if history is None:
            return {}
        for element in elements:
            history.observe(element.id, element)
        return history.records(element.id for element in elements)

    def _apply_control(self, source_id: str, control: Any) -> None:
        if isinstance(control, SubscriptionControl):
            self.table.apply_control(source_id, control)
        else:
            logger.info("skipping control event of unknown type %r", control.control_type)

    def _count(self, source_id: str, report: BatchReport) -> None:
        stats = self.stats
        stats.batches += 1
        stats.changes += report.changes
        stats.applied += report.applied
        stats.duplicates += report.duplicates
        stats.controls += report.controls
        stats.per_source[source_id] = stats.per_source.get(source_id, 0) + report.applied

    def report(
        self, restarted: bool, line_calls: int, durable: dict[str, dict[str, int]], shard: int = 0
    ) -> ShardReport:
        """The live status, with what only the actor shell knows."""
        stats, stores = self.stats, self.stores
        return ShardReport(
            batches=stats.batches,
            changes=stats.changes,
            applied=stats.applied,
            duplicates=stats.duplicates,
            controls=stats.controls,
            tombstones_forgotten=stats.tombstones_forgotten,
            restarted=restarted,
            line_calls=line_calls,
            durable=durable,
            elements={source: len(store) for source, store in stores.items()},
            tombstones={source: store.tombstones for source, store in stores.items()},
            queries=self.table.query_ids,
            shard=shard,
        )

    def piped_snapshot(self, query_id: str, sources: Sequence[str]) -> dict[str, list[Any]]:
        """Per source ``query_id`` pipes, every element with the version that set it (what
        the query rebuilds its view of the source from)."""
        snapshots: dict[str, list[Any]] = {}
        for source_id in sources:
            if query_id not in self.piped.get(source_id, _NOBODY):
                continue
            store = self.store(source_id)
            snapshots[source_id] = [
                VersionedElement(element, store.head_version(element.id) or ZERO_VERSION)
                for element in store.elements()
            ]
        return snapshots

    def snapshot(self, query_id: str, sources: Sequence[str]) -> list[Element]:
        """Elements of ``sources`` that ``query_id``'s subscriptions select (for bootstrap),
        under their graph ids for a query of several sources; the sources it pipes are left
        out (:meth:`piped_snapshot`)."""
        selected: list[Element] = []
        several = query_id in self.table.several_sources
        for source_id in sources:
            if query_id in self.piped.get(source_id, _NOBODY):
                continue
            filters: list[LabelFilter] = self.table.filter_for(query_id, source_id)
            for element in self.store(source_id).elements():
                if any(labels.matches(element) for labels in filters):
                    selected.append(graph_element(source_id, element) if several else element)
        return selected
