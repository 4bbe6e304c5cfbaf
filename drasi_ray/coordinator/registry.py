"""The control plane's state, without Ray: which queries run where, and the subscription table.

The coordinator is the one control plane of an app (docs/architecture.md, "Store shards"): it
registers queries (each on a query host), keeps the *master* subscription table (query
registrations plus ``SourceSubscription`` control events) and hands every store shard the same
copy of it, numbered by a version so that a shard never goes back to an older one, and it
numbers each query's bootstrap *rounds*: every round asks every shard for its part of the
query's graph (:class:`~drasi_ray.model.shards.BootstrapPart`), and a newer round replaces an
older one on the query's host. It also knows every live subscription to a query's results
(:class:`SubscriberSpec`), so that a query host that restarts opens its subscribers' buffers
again before its first result.

:class:`Registry` is that state. It persists as JSON (registrations, through
:meth:`QueryRegistration.to_json`; the table, through
:meth:`~drasi_ray.shards.routing.SubscriptionTable.to_records`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from drasi_ray.model import urls
from drasi_ray.model.changes import SubscriptionControl
from drasi_ray.model.config import DispatchMode, QueryConfig
from drasi_ray.model.history import HistoryLimits
from drasi_ray.model.reaction_specs import PlatformReaction
from drasi_ray.shards.routing import LabelFilter, SubscriptionTable


@dataclass(frozen=True, slots=True)
class QueryRegistration:
    """A query as the control plane knows it: its settings, its host, the labels it reads,
    the element history the shards keep for it (None: it calls no past function) and, when
    other queries read its results, the Redis of its chain stream."""

    config: QueryConfig
    host: str
    node_labels: tuple[str, ...] | None
    relation_labels: tuple[str, ...] | None
    history: HistoryLimits | None = None
    chain_url: str | None = None

    @property
    def query_id(self) -> str:
        return self.config.id

    @property
    def labels(self) -> LabelFilter:
        return LabelFilter.of(self.node_labels, self.relation_labels)

    @property
    def source_filters(self) -> dict[str, LabelFilter]:
        """The filter of each source the query lists labels for (its ``source_labels``)."""
        return {
            source_id: self.labels.restricted(listed.nodes, listed.relations)
            for source_id, listed in self.config.source_labels.items()
        }

    def to_json(self) -> bytes:
        """The stored form: every Redis URL without its password (secrets are never stored;
        :meth:`from_json` gives them back from the URLs the app was started with)."""
        return orjson.dumps(
            {
                "config": _urls_mapped(self.config, urls.without_password).model_dump(mode="json"),
                "host": self.host,
                "nodeLabels": _listed(self.node_labels),
                "relLabels": _listed(self.relation_labels),
                "history": None if self.history is None else dataclasses.asdict(self.history),
                "chainUrl": None
                if self.chain_url is None
                else urls.without_password(self.chain_url),
            }
        )

    @classmethod
    def from_json(cls, data: bytes, credentials: Sequence[str] = ()) -> QueryRegistration:
        """A stored registration, each URL given back its password from ``credentials`` (the
        full URLs the app runs with)."""
        doc = orjson.loads(data)
        chain_url = doc.get("chainUrl")
        return cls(
            _urls_mapped(
                QueryConfig.model_validate(doc["config"]),
                lambda url: urls.with_password(url, credentials),
            ),
            doc["host"],
            _tupled(doc["nodeLabels"]),
            _tupled(doc["relLabels"]),
            None if doc.get("history") is None else HistoryLimits(**doc["history"]),
            None if chain_url is None else urls.with_password(chain_url, credentials),
        )


def _urls_mapped(config: QueryConfig, change: Callable[[str], str]) -> QueryConfig:
    """``config`` with ``change`` applied to the Redis URL of each platform reaction."""
    reactions = tuple(
        reaction.model_copy(update={"redis_url": change(reaction.redis_url)})
        if isinstance(reaction, PlatformReaction) and reaction.redis_url is not None
        else reaction
        for reaction in config.reactions
    )
    return config.model_copy(update={"reactions": reactions})


@dataclass(frozen=True, slots=True)
class TableCopy:
    """The master table as every shard receives it: a version and its records."""

    version: int
    records: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SubscriberSpec:
    """A subscription to a query's results: its buffer inside the query's host, which a
    restarted host opens again (empty) from this spec."""

    query_id: str
    subscriber_id: str
    capacity: int
    mode: DispatchMode

    def to_json(self) -> bytes:
        return orjson.dumps([self.query_id, self.subscriber_id, self.capacity, self.mode.value])

    @classmethod
    def from_json(cls, data: bytes) -> SubscriberSpec:
        query_id, subscriber_id, capacity, mode = orjson.loads(data)
        return cls(query_id, subscriber_id, capacity, DispatchMode(mode))


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
            config.id, config.sources, registration.labels, registration.source_filters
        )
        self._changed()

    def unregister(self, query_id: str) -> None:
        self.registrations.pop(query_id, None)
        self._rounds.pop(query_id, None)
        for spec in [spec for spec in self.subscribers.values() if spec.query_id == query_id]:
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
                    config.id, config.sources, registration.labels, registration.source_filters
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


def _listed(labels: tuple[str, ...] | None) -> list[str] | None:
    return None if labels is None else sorted(labels)


def _tupled(labels: list[str] | None) -> tuple[str, ...] | None:
    return None if labels is None else tuple(labels)
