"""The PostgreSQL source beside the platform source: rows/s to query results, and latency.

    python -m bench.postgres                 # 20,000 rows per run, latency at 200 rows/s, 10 s
    python -m bench.postgres --rows 5000 --no-record

One app (the local Ray, a private Redis, a private PostgreSQL 16 from pgserver) with two
sources feeding the same filter query shape, each its own query: a PostgreSQL source on table
``readings`` and a platform source whose entries carry the same rows as platform events (what a
producer writing Drasi's format would send). Every row is a new ``readings`` node the query
returns, so every change is one result.

(a) **rows/s to query results**, single-row and 100-row transactions: a backlog of ``--rows``
    changes waits (the reader stopped while they commit; the platform source's consumers
    paused while its entries are appended: one change per entry, or 100 per entry as a
    transaction of 100 rows is one entry), then the clock runs from releasing it (the reader
    started; the consumers resumed) until the subscriber holds every result. The ratio is
    platform rows/s over database rows/s: what the database path costs per change (goal: at
    most 1.5).
(b) **commit-to-result latency** at a fixed rate (``--rate`` single-row transactions per
    second for ``--seconds``): the time from a commit returning (an XADD returning, for the
    platform source) to the subscriber in this process receiving the row; p50 and p99.
"""

from __future__ import annotations

import argparse
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import ray
import redis

from bench.common import command_line, load_average, print_lines, rate
from bench.results import Recorder
from drasi_ray import DrasiRay, PlatformSource, Query
from drasi_ray.model.changes import Op, node
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.testing.embedded_redis import EmbeddedRedis
from drasi_ray.testing.postgres import EmbeddedPostgres, source_builder

QUERY = "MATCH (r:readings) WHERE r.value >= 0 RETURN r.id AS id, r.value AS value"
STREAM = "bench-readings"
SCHEMA = """
CREATE TABLE readings (id bigint PRIMARY KEY, sensor int NOT NULL, value float8 NOT NULL);
CREATE PUBLICATION drasi_publication FOR TABLE readings;
"""


class Bench:
    """The app, the database and the two feeds; ids never repeat across runs."""

    def __init__(self, postgres: EmbeddedPostgres, redis_url: str) -> None:
        self.postgres = postgres
        self.database = postgres.create_database(f"bench_{uuid.uuid4().hex[:6]}")
        postgres.execute(SCHEMA, self.database)
        self.redis = redis.Redis.from_url(redis_url)
        self.app = DrasiRay(f"pgbench-{uuid.uuid4().hex[:6]}")
        self.app.add_source(
            source_builder(postgres, self.database, redis_url, "pg")
            .with_consumer_settings(batch_size=500, block_ms=50)
            .build()
        )
        self.app.add_source(
            PlatformSource.builder("events")
            .with_redis_url(redis_url)
            .with_stream_key(STREAM)
            .with_batch_size(500)
            .with_block_ms(50)
            .build()
        )
        for source in ("pg", "events"):
            self.app.add_query(Query.cypher(source).query(QUERY).from_source(source).build())
        self.next_id = 1

    def ids(self, count: int) -> list[int]:
        first, self.next_id = self.next_id, self.next_id + count
        return list(range(first, first + count))

    # -- feeding -------------------------------------------------------------------------

    def commit(self, cursor: Any, ids: Sequence[int]) -> None:
        """One transaction inserting ``ids``."""
        rows = ",".join(f"({i}, {i % 97}, {float(i % 1000)})" for i in ids)
        cursor.execute(f"INSERT INTO readings VALUES {rows}")
        cursor.connection.commit()

    def entry(self, ids: Sequence[int]) -> bytes:
        """The same rows as one platform entry (a transaction is one entry)."""
        events = [
            change_event(
                Op.INSERT,
                node(
                    f"readings:{i}",
                    ["readings"],
                    {"id": i, "sensor": i % 97, "value": float(i % 1000)},
                ),
                time.time_ns(),
                db="postgresql",
            )
            for i in ids
        ]
        return encode_cloud_event(events)

    # -- (a) rows/s ------------------------------------------------------------------------

    def backlog_rate(self, source: str, rows: int, per_transaction: int) -> float:
        ids = self.ids(rows)
        groups = [ids[i : i + per_transaction] for i in range(0, rows, per_transaction)]
        with self.app.subscribe(source, capacity=rows + 10) as results:
            release = self._hold_pg(groups) if source == "pg" else self._hold_events(groups)
            started = time.perf_counter()
            release()
            _collect(results, rows)
            return rate(rows, time.perf_counter() - started)

    def _hold_pg(self, groups: list[list[int]]) -> Callable[[], None]:
        reader = self.app.reader_actor("pg")
        ray.get(reader.stop.remote())
        with (
            self.postgres.connect(self.database, autocommit=False) as connection,
            connection.cursor() as cursor,
        ):
            for ids in groups:
                self.commit(cursor, ids)
        return lambda: ray.get(reader.start.remote())

    def _hold_events(self, groups: list[list[int]]) -> Callable[[], None]:
        consumers = self.app.consumer_actors("events")
        ray.get([consumer.pause.remote() for consumer in consumers])
        pipe = self.redis.pipeline(transaction=False)
        for ids in groups:
            pipe.xadd(STREAM, {"data": self.entry(ids)})
        pipe.execute()

        def resume() -> None:
            ray.get([consumer.resume.remote() for consumer in consumers])

        return resume

    # -- (b) latency -----------------------------------------------------------------------

    def latency(self, source: str, per_second: float, seconds: float) -> tuple[float, float]:
        count = int(per_second * seconds)
        ids = self.ids(count)
        sent: dict[int, int] = {}
        received: dict[int, int] = {}
        with self.app.subscribe(source, capacity=count + 10) as results:
            collector = threading.Thread(target=_receive, args=(results, count, received))
            collector.start()
            self._paced(source, ids, per_second, sent)
            collector.join(120)
        latencies = sorted((received[i] - sent[i]) / 1e6 for i in ids if i in received)
        return _percentile(latencies, 0.5), _percentile(latencies, 0.99)

    def _paced(self, source: str, ids: list[int], per_second: float, sent: dict[int, int]) -> None:
        start = time.perf_counter()
        with (
            self.postgres.connect(self.database, autocommit=False) as connection,
            connection.cursor() as cursor,
        ):
            for number, row_id in enumerate(ids):
                delay = start + number / per_second - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                if source == "pg":
                    self.commit(cursor, [row_id])
                else:
                    self.redis.xadd(STREAM, {"data": self.entry([row_id])})
                sent[row_id] = time.time_ns()


def _collect(results: Any, count: int, timeout_s: float = 600.0) -> None:
    got, deadline = 0, time.monotonic() + timeout_s
    while got < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{got} of {count} results")
        got += sum(len(result.results) for result in results.next(timeout=1.0))


def _receive(results: Any, count: int, received: dict[int, int]) -> None:
    deadline = time.monotonic() + 300
    while len(received) < count and time.monotonic() < deadline:
        batch = results.next(timeout=1.0)
        now = time.time_ns()
        for result in batch:
            for diff in result.results:
                received[int(diff["data"]["id"])] = now


def _percentile(values: Sequence[float], fraction: float) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(fraction * len(values)))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    recorder = Recorder("postgres", command_line("bench.postgres", argv))
    load_before = load_average()
    lines: list[str] = []
    owns_ray = not ray.is_initialized()
    if owns_ray:
        ray.init(address="local", include_dashboard=False, log_to_driver=False)
    try:
        with EmbeddedPostgres() as postgres, EmbeddedRedis() as server:
            bench = Bench(postgres, server.url)
            bench.app.start()
            try:
                _measure(bench, args, recorder, lines)
            finally:
                bench.app.stop()
    finally:
        if owns_ray:
            ray.shutdown()
    lines.append(f"load average: {load_before:.1f} before, {load_average():.1f} after (2 cores)")
    print_lines(lines)
    if not args.no_record:
        recorder.write()
    return 0


def _measure(bench: Bench, args: argparse.Namespace, recorder: Recorder, lines: list[str]) -> None:
    bench.backlog_rate("pg", 2000, 100)  # warm-up: actors, connections, the engine
    bench.backlog_rate("events", 2000, 100)
    for size in (1, 100):
        database = bench.backlog_rate("pg", args.rows, size)
        platform = bench.backlog_rate("events", args.rows, size)
        what = f"rows/s to query results, {size}-row transactions, PostgreSQL source"
        lines.append(f"{what}: {database:,.0f}; platform events: {platform:,.0f} "
                     f"(cost per change {platform / database:.2f}x)")  # fmt: skip
        recorder.add(
            what,
            round(database),
            "rows/s",
            peer=f"the same rows as platform events ({size} per entry), same app",
            peer_value=round(platform),
            detail=f"{args.rows:,} rows, backlog drained; ratio = database / platform rows/s "
            f"(cost per change = {platform / database:.2f}x)",
        )
    for label, source in (("PostgreSQL source", "pg"), ("platform events", "events")):
        p50, p99 = bench.latency(source, args.rate, args.seconds)
        lines.append(
            f"latency at {args.rate:g} rows/s, {label}: p50 {p50:.1f} ms, p99 {p99:.1f} ms"
        )
        if source == "pg":
            pg_p50, pg_p99 = p50, p99
        else:
            for name, mine, theirs in (("p50", pg_p50, p50), ("p99", pg_p99, p99)):
                recorder.add(
                    f"{name} commit-to-result latency at {args.rate:g} single-row "
                    "transactions/s, PostgreSQL source",
                    round(mine, 1),
                    "ms",
                    peer="platform events at the same rate (XADD to result), same app",
                    peer_value=round(theirs, 1),
                    detail=f"{int(args.rate * args.seconds):,} rows, {args.seconds:g} s",
                )


if __name__ == "__main__":
    raise SystemExit(main())
