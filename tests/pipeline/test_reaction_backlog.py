"""An app started with ``start_id: "0"`` over a backlog: its HTTP, SSE and stored-procedure
reactions see the results of that backlog. A reaction's first start begins at its result
stream's end (reactions/relay.py), which is safe only because the app starts its reactions
before its queries: this checks that order through the public API, against a real Redis, a
local Ray, a real HTTP server and a real PostgreSQL."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
import redis

from drasi_ray import HttpReaction, PostgresStoredProcReaction, SseReaction
from drasi_ray.model.changes import Op, node
from drasi_ray.model.results import diffs_from_platform_event
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.apps import one_source_app
from drasi_ray.testing.embedded_redis import EmbeddedRedis
from drasi_ray.testing.http_sink import HttpSink
from drasi_ray.testing.postgres import EmbeddedPostgres
from drasi_ray.testing.sse_client import SseClient
from drasi_ray.testing.waiting import wait_until

HOT = "MATCH (s:Sensor) WHERE s.t > 70 RETURN s.id AS id, s.t AS t"
SCHEMA = """
CREATE TABLE hot_rows (id text PRIMARY KEY, t double precision NOT NULL);
CREATE PROCEDURE upsert_hot(p_id text, p_t double precision) LANGUAGE sql AS $$
    INSERT INTO hot_rows (id, t) VALUES (p_id, p_t) ON CONFLICT (id) DO UPDATE SET t = p_t
$$;
CREATE PROCEDURE delete_hot(p_id text) LANGUAGE sql AS $$
    DELETE FROM hot_rows WHERE id = p_id
$$;
"""


def _backlog() -> list[bytes]:
    """Inserts, updates into and out of the results, and a delete: every kind of diff."""
    changes = [(Op.INSERT, f"s{i}", 60.0 + 5 * i) for i in range(8)]
    changes += [(Op.UPDATE, "s1", 90.0), (Op.UPDATE, "s6", 20.0), (Op.UPDATE, "s7", 99.5)]
    changes += [(Op.DELETE, "s5", 85.0), (Op.UPDATE, "s0", 71.0)]
    return [
        encode_cloud_event(
            [change_event(op, node(s, ["Sensor"], {"id": s, "t": t}), (1 + n) * 1_000_000_000)]
        )
        for n, (op, s, t) in enumerate(changes)
    ]


def _stream_keys(client: redis.Redis, query_id: str) -> list[str]:
    """The idempotency key of every diff in the query's result stream."""
    found = []
    entries: list[tuple[bytes, dict[bytes, bytes]]] = client.xrange(f"{query_id}-results")  # type: ignore[assignment]
    for _id, fields in entries:
        event = orjson.loads(fields[b"data"])
        if event["data"]["kind"] == "change":
            sequence = event["data"]["sequence"]
            diffs = diffs_from_platform_event(event)
            found += [f"{query_id}:{sequence}:{index}" for index in range(len(diffs))]
    return found


def _by_id(rows: list[dict[str, Any]]) -> dict[str, float]:
    return {row["id"]: row["t"] for row in rows}


def test_the_reactions_of_an_app_started_over_a_backlog_see_its_results(
    ray_session: None, redis_server: EmbeddedRedis, postgres_server: EmbeddedPostgres
) -> None:
    url = redis_server.url
    stream = f"backlog-{uuid.uuid4().hex[:6]}"
    with Publisher.from_url(url) as publisher:
        publisher.publish(stream, _backlog())  # all of it there before the app starts
    database = postgres_server.create_database(f"backlog_{uuid.uuid4().hex[:8]}")
    postgres_server.execute(SCHEMA, database)
    hot = f"hot-{uuid.uuid4().hex[:6]}"  # its own result stream (<id>-results) on the shared Redis
    app = one_source_app(url, stream, {hot: HOT}, prefix="backlog", start_id="0")
    with HttpSink() as sink:
        app.add_reaction(HttpReaction(id="hooks", base_url=sink.url, queries={hot: None}))
        app.add_reaction(
            PostgresStoredProcReaction(
                id="sync",
                host=postgres_server.host,
                port=postgres_server.port,
                database=database,
                user="postgres",
                password_file=postgres_server.password_file,
                added_command="CALL upsert_hot(@id, @t)",
                updated_command="CALL upsert_hot(@after.id, @after.t)",
                deleted_command="CALL delete_hot(@id)",
                queries={hot: None},
            )
        )
        app.add_reaction(SseReaction(id="dashboard", port=0))
        app.start()
        try:
            app.wait_until_idle(60)
            app.flush_reactions(60)
            results = _by_id(app.results(hot))
            assert results == {"s0": 71.0, "s1": 90.0, "s3": 75.0, "s4": 80.0, "s7": 99.5}
            keys = _stream_keys(redis.Redis.from_url(url), hot)
            assert keys  # every diff of the backlog reached the receiver, in order:
            assert [item.key for item in sink.first_receipts()] == keys
            table = postgres_server.query("SELECT id, t FROM hot_rows", database)
            assert dict(table) == results
            with SseClient(app.reaction_url("dashboard"), [hot]) as viewer:
                wait_until(lambda: _by_id(viewer.rows(hot)) == results, 30, what="the view")
        finally:
            app.stop()
