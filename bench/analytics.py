"""Analytics: 1,000,000 applied changes through the change log to Spark (RayDP), and a group-by.

    python -m bench.analytics                  # 1,000,000 changes in batches of 1,000
    python -m bench.analytics --changes 200000

The change log's own path, without Redis and the query side: a feeder actor plays the
coordinator (builds the records of sensor updates, one fire-and-forget ``append`` per batch to
the real analytics actor, then the ``flush`` barrier), the same calls the coordinator makes. Then
``app.analytics``'s hand-off: seal + consolidate, Ray Dataset from the Arrow blocks, RayDP's
``to_spark``, a Spark count; then ``change_counts`` (group-by window x label x op) and a
group-by element id. Memory: Arrow bytes the log holds in Ray's object store, per million.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

import ray

from bench.common import command_line, format_table, load_average, print_lines, timed
from bench.results import Recorder
from drasi_ray.analytics.actor import AnalyticsActor
from drasi_ray.analytics.facade import Analytics
from drasi_ray.model.config import AnalyticsConfig
from drasi_ray.shards.records import ChangeRecord

BASE_MS = 1_700_000_000_000


def sensor_records(start: int, count: int, sensors: int) -> list[ChangeRecord]:
    """Records of sensor updates ``start..start+count`` (one change per stream entry)."""
    records: list[ChangeRecord] = []
    for index in range(start, start + count):
        sensor = f"sensor-{index % sensors}"
        properties = {
            "id": sensor,
            "temperature": 50.0 + (index * 7919 % 4000) / 100,
            "humidity": 30.0 + index % 40,
            "location": f"Building {'ABC'[index % 3]}",
        }
        ms = BASE_MS + index * 10
        records.append(
            ChangeRecord(
                f"{ms}-0", ms, 0, 0, "update", "node", sensor, ("Sensor",), ms, properties, None,
                None, True,
            )
        )  # fmt: skip
    return records


@ray.remote
class Feeder:
    """Plays the coordinator: one fire-and-forget append per batch, then the flush barrier."""

    def __init__(self, analytics: Any) -> None:
        self._analytics = analytics

    def feed(self, changes: int, batch: int, sensors: int) -> float:
        """Send every batch; returns the seconds spent building records (not sending)."""
        building = 0.0
        for start in range(0, changes, batch):
            began = time.perf_counter()
            records = sensor_records(start, min(batch, changes - start), sensors)
            building += time.perf_counter() - began
            self._analytics.append.remote("sensors", records)
        return building

    async def flush_analytics(self) -> int:
        rows: int = await self._analytics.flush.remote()
        return rows


def run(changes: int, batch: int, sensors: int) -> list[list[object]]:
    config = AnalyticsConfig(enabled=True, spill_bytes=8 * 1024**3, flush_every_changes=100_000)
    actor = AnalyticsActor.remote(config)  # type: ignore[attr-defined]
    feeder = Feeder.remote(actor)  # type: ignore[attr-defined]
    analytics = Analytics(actor, config)
    analytics.attach(feeder)
    rows: list[list[object]] = []
    try:
        with timed() as spark_start:
            version = analytics.spark.version
        rows.append([f"Spark {version} start (raydp.init_spark)", spark_start.seconds, ""])
        with timed() as accumulate:
            building = ray.get(feeder.feed.remote(changes, batch, sensors))
            held = analytics.flush()
        assert held == changes, f"log holds {held} of {changes}"
        rows.append(["accumulate (append + seal)", accumulate.seconds, _per_s(changes, accumulate)])
        rows.append(["  of which building records", building, ""])
        stats = analytics.stats()
        rows.append(["Arrow bytes in store per 1M", stats["bytes_in_store"] * 1e6 / changes, ""])
        with timed() as reach:
            counted = analytics.dataframe().count()
        assert counted == changes
        rows.append(["hand-off to Spark + count (cold)", reach.seconds, _per_s(changes, reach)])
        with timed() as again:
            analytics.dataframe().count()
        rows.append(["count again (same hand-off, warm)", again.seconds, _per_s(changes, again)])
        with timed() as counts:
            windows = analytics.change_counts("1 minute").collect()
        rows.append([f"change_counts group-by ({len(windows)} rows)", counts.seconds, ""])
        with timed() as by_id:
            ids = analytics.dataframe().groupBy("element_id").count().collect()
        rows.append([f"group-by element_id ({len(ids)} rows)", by_id.seconds, ""])
        blocks = ray.get(actor.snapshot.remote()).blocks
        rows.append(["Ray blocks = Spark partitions", float(len(blocks)), ""])
    finally:
        analytics.stop()
    return rows


def _per_s(changes: int, timer: Any) -> str:
    return f"{changes / timer.seconds:,.0f} changes/s" if timer.seconds else ""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=1000, help="changes per coordinator batch")
    parser.add_argument("--sensors", type=int, default=10_000)
    parser.add_argument("--no-record", action="store_true", help="do not append to results.jsonl")
    args = parser.parse_args(argv)
    recorder = Recorder("analytics", command_line("bench.analytics", argv))
    started_ray = not ray.is_initialized()
    if started_ray:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    load_before = load_average()
    try:
        rows = run(args.changes, args.batch, args.sensors)
    finally:
        if started_ray:
            ray.shutdown()
    lines = format_table(["step", "seconds / value", "rate"], rows)
    lines += [
        "",
        f"{args.changes:,} changes in batches of {args.batch:,}, {args.sensors:,} sensors; "
        f"Spark: 1 executor, 1 core, 1g; load average before {load_before:.2f}, "
        f"after {load_average():.2f} (2 cores, shared).",
    ]
    print_lines(lines)
    detail = f"{args.changes:,} changes in batches of {args.batch:,}; Spark 1 executor, 1 core"
    for step, value, _rate in rows:
        assert isinstance(step, str) and isinstance(value, (int, float))
        unit = "bytes" if step.startswith("Arrow bytes") else "seconds"
        if step.startswith("Ray blocks"):
            unit = "blocks"
        recorder.add(step, float(value), unit, detail=detail)
    if not args.no_record:
        recorder.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
