"""Where source middleware runs: in the query, per source subscription, before its engine.

A query that gives a source a pipeline (Drasi's ``sources.subscriptions[].pipeline``) sees that
source through it. Drasi runs the pipeline inside the query, on each source change, and stores
what comes out in the query's element index, which middleware reads back (``unwind`` looks up
the stored parent). drasi_ray does the same, in the query (on its query host,
:mod:`drasi_ray.host.hosted`), on the change still whole (the producer's partial update, not
the merged element): the store shards hand such a query every change of the source they
applied (:class:`~drasi_ray.model.changes.PipedChange`), wherever the element lives, so a
pipeline whose outputs are other elements (a ``map`` keyed by a property) sees every change
of its source on any number of shards, and is the single writer of its outputs:

- for each change the source's store applied, every pipeline subscription on that source runs
  the change through its pipeline; the outputs are applied to the subscription's own
  :class:`~drasi_ray.shards.store.ElementStore` (the query's view of the source, with the
  store's upsert, merge and version rules), and the resulting deltas go to the query's engine,
  in order with its other deltas. The raw deltas of that source do not go to the query.
- an output's version is the raw change's version with the output's position folded into its
  last part (``index << 20 | position``), so redeliveries and out-of-order batches converge as
  they do for the source itself.
- a change the pipeline fails on (:class:`~drasi_ray.model.errors.MiddlewareError`) is skipped
  for that query and reported as a :class:`~drasi_ray.streams.records.Rejection`: the shard
  waits for the query's host before it confirms a batch with such changes, so the consumer
  dead-letters the entry with the reason before it acks (unless the host dies meanwhile, or
  the query is being bootstrapped again: then the change is skipped without a dead letter).
  The source's store and every other query are unaffected.
- a subscription's store is built at each bootstrap (the query's registration, a restart of a
  shard or of its host) from the source's current elements and the versions that set them
  (:func:`source_view`), each passed through the pipeline as an insert, as Drasi's bootstrap
  passes a snapshot through it. For middleware that transforms elements
  one by one (``relabel``, ``decoder``, ``parse_json``, ``promote``, ``unwind``, and ``map`` /
  ``jq`` outputs that only reshape their element) that equals what live application built. A
  ``map``/``jq`` that turns events into changes of *other* elements is rebuilt from the events
  the source still holds, in store order: changes of since-deleted events are not replayed.

Cost: per change of a source with pipeline subscriptions, the pipeline's work plus one store
apply per output, for each such subscription (none for queries without a pipeline); memory, one
store per subscription holding the pipeline's outputs (the source's elements again, reshaped).
A pipeline subscription receives every change of its source, whatever its labels, since the
pipeline may relabel or map them. Changes the source's store does not apply (redeliveries,
duplicates, an update that changes nothing, a delete of an unknown element) do not reach the
pipeline: so a ``map`` does not re-emit its outputs for an event re-sent unchanged, where Drasi
would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from drasi_ray.model.changes import (
    Element,
    ElementChange,
    ElementDelta,
    Op,
    Timing,
    Version,
    VersionedElement,
)
from drasi_ray.model.errors import MiddlewareError
from drasi_ray.model.identity import graph_delta, graph_element
from drasi_ray.model.query_specs import MiddlewareSpec
from drasi_ray.shards.store import ElementStore
from drasi_ray.source.middleware import Change, Pipeline, build_pipeline

OUTPUT_BITS = 20
"""Bits of a derived version's last part that number the outputs of one change."""
MAX_OUTPUTS = 1 << OUTPUT_BITS
"""A pipeline may turn one change into at most this many changes (more fails the change)."""

_REBUILD_TIMING = Timing(0)


@dataclass(slots=True)
class _Subscription:
    query_id: str
    source_id: str
    pipeline: Pipeline
    store: ElementStore
    several_sources: bool
    """The query reads several sources: what it is handed names the elements by graph ids."""

    def to_query(self, delta: ElementDelta) -> ElementDelta:
        """A delta of the subscription's store as the query sees it."""
        return graph_delta(self.source_id, delta) if self.several_sources else delta


@dataclass(slots=True)
class Derived:
    """What one raw change did through the pipelines: deltas per query, and failures."""

    deltas: dict[str, list[ElementDelta]]
    failures: list[str]


class SourcePipelines:
    """The pipeline subscriptions of every query, per source, and their stores."""

    def __init__(self) -> None:
        self._by_source: dict[str, dict[str, _Subscription]] = {}

    def subscribe(
        self,
        query_id: str,
        middleware: Sequence[MiddlewareSpec],
        pipelines: Mapping[str, Sequence[str]],
        sources: Mapping[str, ElementStore],
        several_sources: bool = False,
    ) -> None:
        """(Re)subscribe ``query_id``: build its pipelines (ConfigError if one is invalid) and
        their stores from the sources' current elements. ``several_sources``: the query reads
        more than one source (:func:`~drasi_ray.model.identity.reads_several`), so the
        elements it is handed are under their graph ids."""
        built = {
            source_id: build_pipeline(middleware, names, source_id)
            for source_id, names in pipelines.items()
            if names
        }
        self.unsubscribe(query_id)
        for source_id, pipeline in built.items():
            subscription = _Subscription(
                query_id, source_id, pipeline, ElementStore(), several_sources
            )
            source = sources.get(source_id)
            if source is not None:
                _rebuild(subscription, source)
            self._by_source.setdefault(source_id, {})[query_id] = subscription

    def unsubscribe(self, query_id: str) -> None:
        for source_id in list(self._by_source):
            subscriptions = self._by_source[source_id]
            subscriptions.pop(query_id, None)
            if not subscriptions:
                del self._by_source[source_id]

    def queries(self, source_id: str) -> Mapping[str, object]:
        """The queries that see ``source_id`` through a pipeline (a mapping: fast ``in``)."""
        return self._by_source.get(source_id, {})

    def elements(self, query_id: str, source_id: str) -> list[Element] | None:
        """The query's view of the source, as the query sees it (None: no pipeline there)."""
        subscription = self._by_source.get(source_id, {}).get(query_id)
        if subscription is None:
            return None
        elements = subscription.store.elements()
        if subscription.several_sources:
            return [graph_element(source_id, element) for element in elements]
        return list(elements)

    def apply(self, source_id: str, change: ElementChange) -> Derived:
        """Run one applied change of ``source_id`` through every pipeline subscribed to it."""
        derived = Derived({}, [])
        for query_id, subscription in self._by_source.get(source_id, {}).items():
            try:
                deltas = _through(subscription, change)
            except MiddlewareError as exc:
                derived.failures.append(f"query {query_id!r}, source {source_id!r}: {exc.reason}")
                continue
            if deltas:
                derived.deltas[query_id] = [subscription.to_query(delta) for delta in deltas]
        return derived


def _through(subscription: _Subscription, change: ElementChange) -> list[ElementDelta]:
    """The deltas ``change`` makes in the subscription's store (all outputs, or none)."""
    outputs = subscription.pipeline.process(Change(change.op, change.element), subscription.store)
    if len(outputs) > MAX_OUTPUTS:
        raise MiddlewareError(
            f"the pipeline made {len(outputs)} changes of one (at most {MAX_OUTPUTS})"
        )
    ms, seq, index = change.version
    deltas = []
    for position, output in enumerate(outputs):
        version: Version = (ms, seq, (index << OUTPUT_BITS) | position)
        delta = subscription.store.apply(
            ElementChange(output.op, output.element, version, change.timing)
        )
        if delta is not None:
            deltas.append(delta)
    return deltas


def source_view(elements: Iterable[VersionedElement]) -> ElementStore:
    """A source's store as a snapshot of it gives it (each element at the version of the
    newest change that set it): what :meth:`SourcePipelines.subscribe` rebuilds a
    subscription from."""
    store = ElementStore()
    for item in elements:
        store.apply(ElementChange(Op.INSERT, item.element, item.version, _REBUILD_TIMING))
    return store


def _rebuild(subscription: _Subscription, source: ElementStore) -> None:
    """Fill the subscription's store from the source's elements, each as an insert at the
    version that last set it (so a late older change cannot override the result)."""
    elements: Iterable[Element] = source.elements()
    for element in elements:
        version = source.head_version(element.id) or (0, 0, 0)
        change = ElementChange(Op.INSERT, element, version, _REBUILD_TIMING)
        try:
            _through(subscription, change)
        except MiddlewareError:
            continue  # it was dead-lettered (or refused) when it arrived; nothing to rebuild
