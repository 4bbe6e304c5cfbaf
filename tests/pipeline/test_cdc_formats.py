"""CDC tools' streams through the public API, on real Ray and Redis.

One app reads the same row changes three ways: as platform events, as Debezium Server's Redis
sink writes them (a stream per table, schema-wrapped, tombstones after deletes) and as
DeltaForge's Redis sink writes them (one stream). The same queries on each (a filter, an
aggregation, a synthetic join of the two tables) must give the same results; the tools'
at-least-once duplicates (a window of changes sent again, as after a restart from the last
checkpoint, DeltaForge's with new event ids) and a redelivery of every entry (the consumer
group moved back to 0) must apply nothing and change nothing.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from typing import Any

import redis

from drasi_ray import DrasiRay, PlatformSource, Query
from drasi_ray.ops.replay import set_position
from drasi_ray.source.decode import encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.cdc import (
    RowChange,
    debezium_fields,
    debezium_tombstone,
    deltaforge_fields,
    platform_event,
)

QUERIES = {
    "vip": "MATCH (c:customers) WHERE c.vip = true RETURN c.id AS id, c.name AS name",
    "totals": "MATCH (o:orders) RETURN o.customer AS customer, sum(o.amount) AS total",
    "joined": "MATCH (c:customers)-[:PLACED]->(o:orders) "
    "RETURN c.name AS name, o.id AS order, o.amount AS amount",
}
"""The join reads two streams of the Debezium source, whose entries interleave differently
from the platform stream's order; its rows are a function of the final graph (an aggregation
over the join would keep the empty groups a particular interleaving made, as Drasi does)."""
SNAPSHOT_LSN = 90_000
"""Where the snapshot reads are; the first streamed changes are below it (transactions that
wrote before the snapshot and committed after it)."""


def _workload(seed: int = 11, steps: int = 160) -> list[RowChange]:
    """Snapshot reads of 8 customers and 16 orders, then random inserts, updates and deletes
    at rising LSNs (a row's changes in its commit order)."""
    rng = random.Random(seed)
    ts = 1_700_000_000_000
    customers: dict[int, dict[str, object]] = {
        i: {"id": i, "name": f"c{i}", "vip": i % 3 == 0} for i in range(1, 9)
    }
    orders: dict[int, dict[str, object]] = {
        i: {"id": i, "customer": 1 + i % 8, "amount": i * 10} for i in range(1, 17)
    }
    changes = [
        RowChange("r", "customers", None, row, ts, SNAPSHOT_LSN) for row in customers.values()
    ]
    changes += [RowChange("r", "orders", None, row, ts, SNAPSHOT_LSN) for row in orders.values()]
    lsn, next_order = 80_000, 17
    for _ in range(steps):
        lsn, ts = lsn + rng.randint(8, 64), ts + 3
        table, rows = ("customers", customers) if rng.random() < 0.4 else ("orders", orders)
        pick = rng.random()
        if table == "orders" and (pick < 0.3 or not rows):
            row: dict[str, object] = {
                "id": next_order,
                "customer": rng.randint(1, 8),
                "amount": rng.randint(1, 99),
            }
            rows[next_order], next_order = row, next_order + 1
            changes.append(RowChange("c", table, None, row, ts, lsn))
        elif pick < 0.85 or len(rows) < 4:
            key = rng.choice(sorted(rows))
            before = rows[key]
            after = (
                {**before, "name": f"c{key}-{lsn}", "vip": not before["vip"]}
                if (table == "customers")
                else {**before, "amount": rng.randint(1, 99)}
            )
            rows[key] = after
            changes.append(RowChange("u", table, None, after, ts, lsn))
        else:
            key = rng.choice(sorted(rows))
            changes.append(RowChange("d", table, rows.pop(key), None, ts, lsn))
    return changes


def _app(redis_url: str, streams: dict[str, list[str]]) -> DrasiRay:
    app = DrasiRay(f"cdc-{uuid.uuid4().hex[:8]}")
    formats = {"plat": "platform", "dbz": "debezium", "df": "deltaforge"}
    for source_id, keys in streams.items():
        builder = (
            PlatformSource.builder(source_id)
            .with_redis_url(redis_url)
            .with_stream_keys(keys)
            .with_start_id("0")
            .with_block_ms(100)
            .with_batch_size(50)
            .with_format(formats[source_id])
        )
        if source_id == "df":
            builder = builder.with_cdc(keys={"*": ["id"]})
        app.add_source(builder.build())
        for query_id, text in QUERIES.items():
            query = Query.cypher(f"{query_id}-{source_id}").query(text).from_source(source_id)
            if query_id == "joined":
                query = query.with_join("PLACED", ("customers", "id"), ("orders", "customer"))
            app.add_query(query.build())
    return app


def _resent(changes: list[RowChange], start: int, end: int) -> Iterator[RowChange]:
    """The changes a tool sends twice: all of them once, and a window again after it (a
    restart from its last checkpoint), in the middle of the stream."""
    yield from changes[:end]
    yield from changes[start:end]
    yield from changes[end:]


def _publish(redis_url: str, streams: dict[str, list[str]], changes: list[RowChange]) -> None:
    table_stream = {stream.rsplit(".", 1)[1]: stream for stream in streams["dbz"]}
    entries: list[tuple[str, dict[bytes, bytes]]] = []
    for change in _resent(changes, 60, 110):
        stream = table_stream[change.table]
        entries.append((stream, debezium_fields(change)))
        if change.op == "d":
            entries.append((stream, debezium_tombstone(change)))
    entries += [(streams["df"][0], deltaforge_fields(c)) for c in _resent(changes, 30, 140)]
    with Publisher.from_url(redis_url) as publisher:
        publisher.publish(
            streams["plat"][0], [encode_cloud_event([platform_event(c)]) for c in changes]
        )
    with redis.Redis.from_url(redis_url) as client, client.pipeline(transaction=False) as pipe:
        for stream, fields in entries:
            pipe.xadd(stream, fields)  # type: ignore[arg-type]
        pipe.execute()


def _rows(app: DrasiRay, source_id: str) -> dict[str, list[Any]]:
    def key(row: dict[str, Any]) -> str:
        return repr(sorted(row.items()))

    return {q: sorted(app.results(f"{q}-{source_id}"), key=key) for q in QUERIES}


def test_cdc_streams_give_the_platform_results_and_duplicates_change_nothing(
    ray_session: None, redis_url: str
) -> None:
    base = uuid.uuid4().hex[:6]
    streams = {
        "plat": [f"{base}-platform"],
        "dbz": [f"{base}.public.customers", f"{base}.public.orders"],
        "df": [f"{base}-deltaforge"],
    }
    changes = _workload()
    app = _app(redis_url, streams)
    app.start()
    try:
        _publish(redis_url, streams, changes)
        app.wait_until_idle(timeout=60)
        expected = _rows(app, "plat")
        after_duplicates = {source: _rows(app, source) for source in ("dbz", "df")}
        applied = _durable(app)
        for source in ("dbz", "df"):  # every entry again, from the start
            config = app._sources[source].config
            for stream in config.stream_keys:
                set_position(config, "0", stream)
        app.wait_until_idle(timeout=60)
        after_redelivery = {source: _rows(app, source) for source in ("dbz", "df")}
        durable = _durable(app)
    finally:
        app.stop()

    assert all(expected[q] for q in QUERIES), expected  # the workload leaves rows in each
    assert after_duplicates == after_redelivery == {"dbz": expected, "df": expected}
    # The duplicates and redeliveries were dropped by version, not applied again.
    assert applied["dbz"]["applied"] == applied["df"]["applied"] == applied["plat"]["applied"]
    assert durable["dbz"]["applied"] == durable["df"]["applied"] == applied["plat"]["applied"]
    assert durable["df"]["duplicates"] > applied["df"]["duplicates"] > 0


def _durable(app: DrasiRay) -> dict[str, dict[str, int]]:
    durable: dict[str, dict[str, int]] = app.status().totals.durable
    return durable
