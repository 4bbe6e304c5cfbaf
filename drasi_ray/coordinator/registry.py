"""The control plane's state, without Ray: which queries run where, and the subscription table.

The coordinator is the one control plane of an app (docs/architecture.md, "Store shards"): it
registers queries (each on a query host), keeps the *master* subscription table (query
registrations plus ``SourceSubscription`` control events) and hands every store shard the same
copy of it, numbered by a version so that a shard never goes back to an older one, and it
numbers each query's bootstrap *rounds*: every round asks every shard for its part of the
query's graph (:class:`~drasi_ray.model.shards.BootstrapPart`), and a newer round replaces an
older one on the query's host. It also knows every live subscription to a query's results
(:class:`~drasi_ray.model.registrations.SubscriberSpec`), so that a query host that restarts
opens its subscribers' buffers again before its first result.

:class:`Registry` is that state. It persists as JSON (registrations, through
:meth:`~drasi_ray.model.registrations.QueryRegistration.to_json`; the table, through
:meth:`~drasi_ray.shards.routing.SubscriptionTable.to_records`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from drasi_ray.model.changes import SubscriptionControl
from drasi_ray.model.registrations import QueryRegistration, SubscriberSpec, TableCopy
from drasi_ray.shards.routing import LabelFilter, SubscriptionTable


class Registry:
    """Registrations, the master subscription table and bootstrap rounds (module docstring)."""

    def __init__(self) -> None:
        self.registrations: dict[str, QueryRegistration] = {}
        self.table = SubscriptionTable()
        self.subscribers: dict[str, SubscriberSpec] = {}
        """Subscriber id -> its spec. Kept in memory only: a restarted coordinator learns
        them again from the query hosts."""
        self._version = 0
        self._rounds: dict[str, int] = {}

    def register(self, registration: QueryRegistration) -> None:
        """(Re)register a query; the table gains its default subscriptions."""
        config = registration.config
        self.registrations[config.id] = registration
        self.table.register_query(
            config.id, config.sources, _labels(registration), source_filters(registration)
        )
        self._changed()

    def subscribers_of_query(self, query_id: str) -> list[SubscriberSpec]:
        return [spec for spec in self.subscribers.values() if spec.query_id == query_id]

    def unregister(self, query_id: str) -> None:
        self.registrations.pop(query_id, None)
        self._rounds.pop(query_id, None)
        for spec in self.subscribers_of_query(query_id):
            del self.subscribers[spec.subscriber_id]
        self.table.unregister_query(query_id)
        self._changed()

    def apply_controls(self, source_id: str, controls: Iterable[Any]) -> int:
        """Apply ``SourceSubscription`` control events; how many there were."""
        applied = 0
        for control in controls:
            if isinstance(control, SubscriptionControl):
                self.table.apply_control(source_id, control)
                applied += 1
        if applied:
            self._changed()
        return applied

    def load(
        self, registrations: Sequence[QueryRegistration], table: dict[str, Any] | None
    ) -> None:
        """Take what a previous life persisted (or what the hosts report)."""
        for registration in registrations:
            self.registrations[registration.query_id] = registration
        if table is not None:
            self.table = SubscriptionTable.from_records(table)
        for registration in registrations:
            if not self.table.is_registered(registration.query_id):
                config = registration.config
                self.table.register_query(
                    config.id, config.sources, _labels(registration), source_filters(registration)
                )
        self._changed()

    def _changed(self) -> None:
        # Versions outlive a restart of the coordinator: a shard that kept a copy from its
        # previous life must accept the next one.
        self._version = max(self._version + 1, time.time_ns())

    def copy(self) -> TableCopy:
        return TableCopy(self._version, self.table.to_records())

    def new_round(self, query_id: str) -> int:
        """The number of a new bootstrap round of ``query_id``: above every earlier one, also
        across restarts of the coordinator (it starts from the clock)."""
        number = max(self._rounds.get(query_id, 0) + 1, time.time_ns())
        self._rounds[query_id] = number
        return number

    def queries_of(self, host: str) -> list[QueryRegistration]:
        return [r for r in self.registrations.values() if r.host == host]

    def subscribers_of(self, host: str) -> list[SubscriberSpec]:
        """The subscriptions to the queries ``host`` runs."""
        hosted = {registration.query_id for registration in self.queries_of(host)}
        return [spec for spec in self.subscribers.values() if spec.query_id in hosted]

    @property
    def hosts(self) -> list[str]:
        return sorted({registration.host for registration in self.registrations.values()})


def _labels(registration: QueryRegistration) -> LabelFilter:
    return LabelFilter.of(registration.node_labels, registration.relation_labels)


def source_filters(registration: QueryRegistration) -> dict[str, LabelFilter]:
    """The filter of each source the query lists labels for (its ``source_labels``: Drasi's
    subscription ``nodes`` and ``relations``), within the labels of its patterns."""
    labels = _labels(registration)
    return {
        source_id: labels.restricted(listed.nodes, listed.relations)
        for source_id, listed in registration.config.source_labels.items()
    }
