"""ShardCore.apply_entries: what a batch reports and routes (the shard's per-change loop)."""

from __future__ import annotations

from drasi_ray.model.changes import (
    DecodedEntry,
    ElementChange,
    Op,
    SubscriptionControl,
    Timing,
    Version,
    node,
)
from drasi_ray.shards.core import ShardCore
from drasi_ray.shards.routing import LabelFilter


def _entry(entry_id: str, op: Op, element_id: str, label: str, version: Version) -> DecodedEntry:
    change = ElementChange(op, node(element_id, [label], {"v": version[0]}), version, Timing(0))
    return DecodedEntry(entry_id, (change,))


def test_a_batch_reports_changes_applied_duplicates_controls_and_routes() -> None:
    core = ShardCore()
    core.table.register_query("sensors", ["src"], LabelFilter.of(["Sensor"], []))
    core.table.register_query("all", ["src"], LabelFilter.of(None, None))
    core.pipe("piped", ["src"])
    control = DecodedEntry(
        "3-0", controls=(SubscriptionControl(Op.INSERT, "unknown", "n", ("Sensor",)),)
    )
    batch = [
        _entry("1-0", Op.INSERT, "s1", "Sensor", (1, 0, 0)),  # sensors, all, piped
        _entry("2-0", Op.INSERT, "r1", "Room", (2, 0, 0)),  # all, piped
        control,
        _entry("1-0", Op.INSERT, "s1", "Sensor", (1, 0, 0)),  # a redelivery: nothing visible
        _entry("4-0", Op.UPDATE, "s1", "Sensor", (4, 0, 0)),  # sensors, all, piped
    ]
    routed, report = core.apply_entries("src", batch)
    assert (report.changes, report.applied, report.duplicates, report.controls) == (4, 3, 1, 1)
    assert report.routed == 3 + 2 + 3 == sum(map(len, routed.values()))
    assert [len(routed[query]) for query in ("sensors", "all", "piped")] == [2, 3, 3]
    stats = core.stats
    assert (stats.batches, stats.changes, stats.applied, stats.duplicates) == (1, 4, 3, 1)
    assert stats.per_source == {"src": 3}
