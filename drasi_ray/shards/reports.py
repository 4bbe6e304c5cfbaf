"""What a store shard reports: about a batch it applied, and its live status.

Plain records that cross between processes (a batch's report goes back to the consumer that
sent it; the status to the driver), kept apart from the shard's compiled logic
(:mod:`drasi_ray.native`), whose classes do not pickle.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from drasi_ray.streams.records import Rejection


@dataclass(slots=True)
class BatchReport:
    """What a batch did: returned to the consumer that sent it."""

    changes: int = 0
    applied: int = 0
    duplicates: int = 0
    controls: int = 0
    routed: int = 0
    rejected: list[Rejection] = field(default_factory=list)
    """Entries a query's source middleware failed on: the consumer dead-letters them."""


@dataclass(slots=True)
class ShardStats:
    """Counters of the shard since it started (``status()``)."""

    batches: int = 0
    changes: int = 0
    applied: int = 0
    duplicates: int = 0
    controls: int = 0
    tombstones_forgotten: int = 0
    per_source: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ShardReport:
    """A store shard's live status (``DrasiRay.status().shards``), or every shard's added
    up (``DrasiRay.status().coordinator``: :func:`combine_reports`).

    ``durable``: the counters kept in Redis per source (every shard adds to the same ones, so
    they count the whole app, across restarts; empty without durable state); ``elements`` and
    ``tombstones``: per source, in memory now; ``shard``: the shard's index (-1 for a sum).
    """

    batches: int
    changes: int
    applied: int
    duplicates: int
    controls: int
    tombstones_forgotten: int
    restarted: bool
    line_calls: int
    durable: dict[str, dict[str, int]]
    elements: dict[str, int]
    tombstones: dict[str, int]
    queries: list[str]
    shard: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The plain-data form (``status()``, JSON)."""
        return dataclasses.asdict(self)


def combine_reports(reports: Sequence[ShardReport]) -> ShardReport:
    """Every shard's report added up (counters and per-source counts summed; the durable
    counters are the app's already, so the first shard's are taken)."""
    counters = ("batches", "changes", "applied", "duplicates", "controls", "tombstones_forgotten")
    summed = {name: sum(getattr(report, name) for report in reports) for name in counters}
    return ShardReport(
        **summed,
        restarted=any(report.restarted for report in reports),
        line_calls=sum(report.line_calls for report in reports),
        durable=reports[0].durable if reports else {},
        elements=_summed(report.elements for report in reports),
        tombstones=_summed(report.tombstones for report in reports),
        queries=reports[0].queries if reports else [],
        shard=-1,
    )


def _summed(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for per_source in counts:
        for source_id, count in per_source.items():
            total[source_id] = total.get(source_id, 0) + count
    return total
