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
from dataclasses import dataclass
from typing import Any

import orjson

from drasi_ray.model.config import DispatchMode, QueryConfig
from drasi_ray.model.history import HistoryLimits


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
        return orjson.dumps(
            {
                "config": self.config.model_dump(mode="json"),
                "host": self.host,
                "nodeLabels": _listed(self.node_labels),
                "relLabels": _listed(self.relation_labels),
                "history": None if self.history is None else dataclasses.asdict(self.history),
                "chainUrl": self.chain_url,
            }
        )

    @classmethod
    def from_json(cls, data: bytes) -> QueryRegistration:
        doc = orjson.loads(data)
        return cls(
            QueryConfig.model_validate(doc["config"]),
            doc["host"],
            _tupled(doc["nodeLabels"]),
            _tupled(doc["relLabels"]),
            None if doc.get("history") is None else HistoryLimits(**doc["history"]),
            doc.get("chainUrl"),
        )


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


def _listed(labels: tuple[str, ...] | None) -> list[str] | None:
    return None if labels is None else sorted(labels)


def _tupled(labels: list[str] | None) -> tuple[str, ...] | None:
    return None if labels is None else tuple(labels)
