"""The control plane's records: what it tells the store shards and the query hosts.

A :class:`QueryRegistration` is a query as the control plane knows it (its settings, host and
labels), persisted as JSON (:meth:`QueryRegistration.to_json`); a :class:`TableCopy` is the
master subscription table as every shard receives it; a :class:`SubscriberSpec` is a
subscription to a query's results, which a restarted host opens again. The control plane is
:mod:`drasi_ray.coordinator.registry`; the shards (:mod:`drasi_ray.shards.service`) and the
hosts (:mod:`drasi_ray.host.core`) receive these records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from drasi_ray.model import urls
from drasi_ray.model.config import DispatchMode, QueryConfig
from drasi_ray.model.history import HistoryLimits
from drasi_ray.model.reaction_specs import PlatformReaction


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


def _listed(labels: tuple[str, ...] | None) -> list[str] | None:
    return None if labels is None else sorted(labels)


def _tupled(labels: list[str] | None) -> tuple[str, ...] | None:
    return None if labels is None else tuple(labels)
