"""The subscription table: which query needs which change.

A query receives a change of source S when one of its subscriptions on S names a label of the
element (before or after the change, so a query sees an element leave its labels). Subscriptions
are keyed by ``(query_id, query_node_id)``:

- registering a query adds ``(query_id, "default")`` with the labels of its MATCH patterns
  (``None`` = every label, for an unlabelled ``()`` pattern);
- ``SourceSubscription`` control events insert (i), replace (u) or remove (d) a subscription,
  including the registration's own ``"default"`` one. Control events for queries that are not
  registered are kept, and take effect if the query is registered later.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from drasi_ray.model.changes import Element, ElementDelta, ElementKind, Op, SubscriptionControl
from drasi_ray.model.identity import reads_several

logger = logging.getLogger("drasi_ray.routing")

DEFAULT_QUERY_NODE = "default"
_NOBODY: frozenset[str] = frozenset()
_NO_ROUTES: tuple[dict[str, set[str]], frozenset[str]] = ({}, frozenset())


@dataclass(frozen=True, slots=True)
class LabelFilter:
    """Labels of interest; ``None`` for a kind means every element of that kind."""

    node_labels: frozenset[str] | None
    relation_labels: frozenset[str] | None

    def matches(self, element: Element) -> bool:
        wanted = self.node_labels if element.is_node else self.relation_labels
        if wanted is None:
            return True
        return any(label in wanted for label in element.labels)

    def restricted(self, nodes: Iterable[str], relations: Iterable[str]) -> LabelFilter:
        """Only the labels listed, of those this filter takes (Drasi's subscription
        ``nodes`` and ``relations``: a kind with no label listed takes none)."""
        return LabelFilter(
            _within(self.node_labels, nodes), _within(self.relation_labels, relations)
        )

    @staticmethod
    def of(node_labels: Iterable[str] | None, relation_labels: Iterable[str] | None) -> LabelFilter:
        return LabelFilter(
            None if node_labels is None else frozenset(node_labels),
            None if relation_labels is None else frozenset(relation_labels),
        )


@dataclass(frozen=True, slots=True)
class _Subscription:
    source_id: str
    labels: LabelFilter


class SubscriptionTable:
    """Registered queries and their label subscriptions, per source."""

    def __init__(self) -> None:
        self._registered: dict[str, tuple[str, ...]] = {}
        self._subscriptions: dict[tuple[str, str], _Subscription] = {}
        self._index: dict[tuple[str, bool], tuple[dict[str, set[str]], set[str]]] | None = None
        self._routes: dict[tuple[str, ElementKind, tuple[str, ...]], frozenset[str]] = {}
        self._several: frozenset[str] | None = None

    # -- registration -------------------------------------------------------------------

    def register_query(
        self,
        query_id: str,
        sources: Iterable[str],
        labels: LabelFilter,
        per_source: Mapping[str, LabelFilter] | None = None,
    ) -> None:
        """Register ``query_id`` on ``sources`` with the labels of its MATCH patterns, or on a
        source named in ``per_source`` with the filter given there."""
        sources = tuple(sources)
        self._subscriptions_changed()
        self._registered[query_id] = sources
        for source_id in sources:
            wanted = (per_source or {}).get(source_id, labels)
            self._subscriptions[(query_id, f"{DEFAULT_QUERY_NODE}@{source_id}")] = _Subscription(
                source_id, wanted
            )

    def unregister_query(self, query_id: str) -> None:
        self._subscriptions_changed()
        self._registered.pop(query_id, None)
        for key in [key for key in self._subscriptions if key[0] == query_id]:
            del self._subscriptions[key]

    def is_registered(self, query_id: str) -> bool:
        return query_id in self._registered

    @property
    def query_ids(self) -> list[str]:
        return list(self._registered)

    @property
    def several_sources(self) -> frozenset[str]:
        """The queries registered on more than one source: they see elements under graph ids
        (:mod:`drasi_ray.model.identity`)."""
        if self._several is None:
            registered = self._registered.items()
            self._several = frozenset(q for q, sources in registered if reads_several(sources))
        return self._several

    # -- control events -----------------------------------------------------------------

    def apply_control(self, source_id: str, control: SubscriptionControl) -> None:
        """Apply a SourceSubscription control event received on ``source_id``."""
        key = (control.query_id, self._node_key(control.query_node_id, source_id))
        self._subscriptions_changed()
        if control.op is Op.DELETE:
            removed = self._subscriptions.pop(key, None)
            logger.info(
                "query %s unsubscribed from source %s (%s)",
                control.query_id,
                source_id,
                "was subscribed" if removed else "was not subscribed",
            )
            return
        labels = LabelFilter.of(control.node_labels, control.relation_labels)
        self._subscriptions[key] = _Subscription(source_id, labels)
        logger.info(
            "query %s subscribed to source %s: nodes %s, relations %s",
            control.query_id,
            source_id,
            sorted(control.node_labels),
            sorted(control.relation_labels),
        )

    @staticmethod
    def _node_key(query_node_id: str, source_id: str) -> str:
        # The registration's subscription is "default" per source; a control event for
        # queryNodeId "default" addresses the one of the source it arrived on.
        return f"{query_node_id}@{source_id}"

    # -- routing ------------------------------------------------------------------------

    def _subscriptions_changed(self) -> None:
        """Drop the label index and the route memo: both are rebuilt on the next route."""
        self._index = None
        self._routes.clear()
        self._several = None

    def route(self, source_id: str, delta: ElementDelta) -> frozenset[str]:
        """Registered queries that must see ``delta`` of ``source_id``.

        Memoised per (source, kind, labels) of the element before and after: one dict lookup
        for the usual change that keeps its labels. The memo and the per-label index behind
        it are rebuilt only when subscriptions change, which is rare next to changes.
        """
        before, after = delta.before, delta.after
        if before is None or after is None or before.labels == after.labels:
            element = after if after is not None else before
            if element is None:
                return _NOBODY
            return self._targets(source_id, element.kind, element.labels)
        return self._targets(source_id, before.kind, before.labels) | self._targets(
            source_id, after.kind, after.labels
        )

    def _targets(
        self, source_id: str, kind: ElementKind, labels: tuple[str, ...]
    ) -> frozenset[str]:
        key = (source_id, kind, labels)
        found = self._routes.get(key)
        if found is None:
            if self._index is None:
                self._index = self._build_index()
            is_node = kind is ElementKind.NODE
            by_label, everything = self._index.get((source_id, is_node), _NO_ROUTES)
            targets = set(everything)
            for label in labels:
                targets |= by_label.get(label, _NOBODY)
            found = self._routes[key] = frozenset(targets)
        return found

    def _build_index(self) -> dict[tuple[str, bool], tuple[dict[str, set[str]], set[str]]]:
        index: dict[tuple[str, bool], tuple[dict[str, set[str]], set[str]]] = {}
        for (query_id, _node), subscription in self._subscriptions.items():
            if query_id not in self._registered:
                continue
            filters = subscription.labels
            for is_node, wanted in ((True, filters.node_labels), (False, filters.relation_labels)):
                by_label, everything = index.setdefault(
                    (subscription.source_id, is_node), ({}, set())
                )
                if wanted is None:
                    everything.add(query_id)
                    continue
                for label in wanted:
                    by_label.setdefault(label, set()).add(query_id)
        return index

    # -- persistence --------------------------------------------------------------------

    def to_records(self) -> dict[str, Any]:
        """The table as JSON-able data (see :mod:`drasi_ray.shards.state`)."""
        return {
            "registered": {qid: list(sources) for qid, sources in self._registered.items()},
            "subscriptions": [
                {
                    "query": qid,
                    "node": node_key,
                    "source": sub.source_id,
                    "nodeLabels": _sorted_or_none(sub.labels.node_labels),
                    "relLabels": _sorted_or_none(sub.labels.relation_labels),
                }
                for (qid, node_key), sub in self._subscriptions.items()
            ],
        }

    @classmethod
    def from_records(cls, records: dict[str, Any]) -> SubscriptionTable:
        table = cls()
        for qid, sources in records.get("registered", {}).items():
            table._registered[qid] = tuple(sources)
        for item in records.get("subscriptions", []):
            labels = LabelFilter.of(item["nodeLabels"], item["relLabels"])
            table._subscriptions[(item["query"], item["node"])] = _Subscription(
                item["source"], labels
            )
        return table

    def filter_for(self, query_id: str, source_id: str) -> list[LabelFilter]:
        """The label filters of ``query_id`` on ``source_id`` (for bootstrap snapshots)."""
        return [
            subscription.labels
            for (qid, _node), subscription in self._subscriptions.items()
            if qid == query_id and subscription.source_id == source_id
        ]


def _within(wanted: frozenset[str] | None, listed: Iterable[str]) -> frozenset[str]:
    return frozenset(listed) if wanted is None else wanted & frozenset(listed)


def _sorted_or_none(labels: frozenset[str] | None) -> list[str] | None:
    return None if labels is None else sorted(labels)
