"""The coordinator actor: applies changes to the element store and routes them to queries.

Contract with the consumers: :meth:`CoordinatorActor.apply_batch` returns only after every
change of the batch is applied to the store and every affected query actor has applied its
deltas and buffered its results for subscribers. The consumer acks the batch after that, so an
acked entry is an entry whose effects are delivered (at-least-once, end to end).

Ordering: the store is updated synchronously inside one event-loop step per batch, so batches
from several consumers are applied atomically; deliveries to each query carry a per-query
sequence number, and the query actor applies them in that order (Ray does not promise the
execution order of calls to an async actor).
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import ray

from drasi_ray.changes import DecodedEntry, Element, ElementDelta, SubscriptionControl
from drasi_ray.routing import LabelFilter, SubscriptionTable
from drasi_ray.store import ElementStore

logger = logging.getLogger("drasi_ray.coordinator")


@dataclass(slots=True)
class BatchReport:
    """What a batch did: returned to the consumer that sent it."""

    changes: int = 0
    applied: int = 0
    duplicates: int = 0
    controls: int = 0
    routed: int = 0


@dataclass(slots=True)
class _QueryLink:
    """The coordinator's side of one query actor: its handle and delivery sequence."""

    handle: Any
    sources: tuple[str, ...]
    next_delivery: int = 0

    def take_delivery(self) -> int:
        number = self.next_delivery
        self.next_delivery += 1
        return number


@dataclass(slots=True)
class CoordinatorStats:
    batches: int = 0
    changes: int = 0
    applied: int = 0
    duplicates: int = 0
    controls: int = 0
    per_source: dict[str, int] = field(default_factory=dict)


class Coordinator:
    """The coordinator's state and logic, without Ray (tested directly)."""

    def __init__(self) -> None:
        self.stores: dict[str, ElementStore] = {}
        self.table = SubscriptionTable()
        self.stats = CoordinatorStats()

    def store(self, source_id: str) -> ElementStore:
        store = self.stores.get(source_id)
        if store is None:
            store = self.stores[source_id] = ElementStore()
        return store

    def apply_entries(
        self, source_id: str, entries: Sequence[DecodedEntry]
    ) -> tuple[dict[str, list[ElementDelta]], BatchReport]:
        """Apply a batch to the store; return the deltas each query must see, in order."""
        store = self.store(source_id)
        routed: dict[str, list[ElementDelta]] = defaultdict(list)
        report = BatchReport()
        for entry in entries:
            for control in entry.controls:
                report.controls += 1
                self._apply_control(source_id, control)
            for change in entry.changes:
                report.changes += 1
                delta = store.apply(change)
                if delta is None:
                    report.duplicates += 1
                    continue
                report.applied += 1
                for query_id in self.table.route(source_id, delta):
                    routed[query_id].append(delta)
                    report.routed += 1
        self._count(source_id, report)
        return routed, report

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

    def snapshot(self, query_id: str, sources: Sequence[str]) -> list[Element]:
        """Elements of ``sources`` that ``query_id``'s subscriptions select (for bootstrap)."""
        selected: list[Element] = []
        for source_id in sources:
            filters: list[LabelFilter] = self.table.filter_for(query_id, source_id)
            for element in self.store(source_id).elements():
                if any(labels.matches(element) for labels in filters):
                    selected.append(element)
        return selected


@ray.remote
class CoordinatorActor:
    """Ray wrapper of :class:`Coordinator`; one per app, named ``drasi/coordinator``."""

    def __init__(self, namespace: str) -> None:
        self._namespace = namespace
        self._core = Coordinator()
        self._queries: dict[str, _QueryLink] = {}

    async def register_query(
        self,
        query_id: str,
        actor_name: str,
        sources: Sequence[str],
        node_labels: Sequence[str] | None,
        relation_labels: Sequence[str] | None,
    ) -> int:
        """Subscribe a query and bootstrap it from the store; returns the elements loaded.

        Registration, snapshot and the bootstrap delivery happen in one event-loop step, so
        the query sees exactly the changes applied after its snapshot.
        """
        handle = ray.get_actor(actor_name, namespace=self._namespace)
        labels = LabelFilter.of(node_labels, relation_labels)
        self._core.table.register_query(query_id, sources, labels)
        link = self._queries[query_id] = _QueryLink(handle, tuple(sources))
        elements = self._core.snapshot(query_id, sources)
        await handle.bootstrap.remote(link.take_delivery(), elements)
        return len(elements)

    async def unregister_query(self, query_id: str) -> None:
        self._core.table.unregister_query(query_id)
        self._queries.pop(query_id, None)

    async def apply_batch(self, source_id: str, entries: Sequence[DecodedEntry]) -> BatchReport:
        """Apply one consumer batch; return once every affected query has delivered it."""
        routed, report = self._core.apply_entries(source_id, entries)
        calls = []
        for query_id, deltas in routed.items():
            link = self._queries.get(query_id)
            if link is not None:
                calls.append(link.handle.deliver.remote(link.take_delivery(), deltas))
        if calls:
            await asyncio.gather(*calls)
        return report

    def stats(self) -> dict[str, Any]:
        stats = self._core.stats
        return {
            "batches": stats.batches,
            "changes": stats.changes,
            "applied": stats.applied,
            "duplicates": stats.duplicates,
            "controls": stats.controls,
            "elements": {source: len(store) for source, store in self._core.stores.items()},
            "queries": self._core.table.query_ids,
        }

    def elements(self, source_id: str) -> list[Element]:
        """The current graph of ``source_id`` (tests and analytics compare against it)."""
        return list(self._core.store(source_id).elements())
