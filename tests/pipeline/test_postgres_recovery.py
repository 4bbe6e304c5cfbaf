"""A PostgreSQL source's faults: a killed reader, a slot gone.

A reader SIGKILLed mid-stream is restarted by Ray and resumes from the slot and the stream: each
committed row is on the stream once and the results are exact. When the stream's slot is gone
(dropped while the app was stopped), the next start takes a new snapshot and deletes what went
meanwhile. (Wrong credentials: ``tests/ops/test_postgres_cli.py``; the full chaos run:
``test_postgres_chaos.py``.)
"""

from __future__ import annotations

import os
import signal
import uuid
from typing import Any

import ray
import redis

from drasi_ray.model import keys
from drasi_ray.model.changes import Element
from drasi_ray.source.decode import decode_entry
from drasi_ray.testing.postgres import EmbeddedPostgres
from drasi_ray.testing.waiting import wait_until
from tests.pipeline.test_postgres import SCHEMA, shop_app, sorted_rows


def test_a_killed_reader_loses_nothing_and_a_new_snapshot_deletes_what_went(
    ray_session: None, redis_url: str, postgres_server: EmbeddedPostgres
) -> None:
    """SIGKILLed twice while 300 rows commit: each row on the stream once, results exact. Then,
    the app stopped, the slot dropped and rows deleted meanwhile: the next start takes a new
    snapshot and deletes them from the store."""
    database = postgres_server.create_database(f"kill_{uuid.uuid4().hex[:8]}")
    postgres_server.execute(SCHEMA, database)
    app_id = f"pg-{uuid.uuid4().hex[:6]}"
    app = shop_app(postgres_server, database, redis_url, app_id).start()
    try:
        reader = app.reader_actor("shop")
        with postgres_server.connect(database) as connection, connection.cursor() as cursor:
            for number in range(300):
                cursor.execute("INSERT INTO orders VALUES (%s, 2, 1.00)", (1000 + number,))
                if number in (100, 200):
                    os.kill(wait_until(lambda: _pid(reader), what="the reader"), signal.SIGKILL)
        app.wait_until_idle(timeout=120)
        assert {"customer": "Bob", "orders": 301, "spent": 307.0} in app.results("spend")
        stream: Any = redis.Redis.from_url(redis_url).xrange(keys.postgres_stream(app_id, "shop"))
        ids = [element.id for entry_id, fields in stream for element in _elements(entry_id, fields)]
        assert len(ids) == len(set(ids)) == 5 + 3 + 300 * 2  # snapshot, its relations, rows
    finally:
        app.stop()
    postgres_server.execute("SELECT pg_drop_replication_slot(%s)", database, [f"slot_{database}"])
    postgres_server.execute(
        "DELETE FROM orders WHERE customer_id = 2; INSERT INTO orders VALUES (14, 1, 1.00)",
        database,
    )
    again = shop_app(postgres_server, database, redis_url, app_id).start()
    try:
        again.wait_until_idle(timeout=60)
        assert sorted_rows(again, "spend") == [  # Bob's orders deleted after the bootstrap
            {"customer": "Ann", "orders": 3, "spent": 126.5},
            {"customer": "Bob", "orders": 0, "spent": 0.0},
        ]
        assert not {"orders:11", "orders:1000"} & {e.id for e in again.elements("shop")}
        assert again.status().reader("shop").snapshots == 1
    finally:
        again.stop()


def _pid(actor: Any) -> int | None:
    """The actor's process id; None while Ray restarts it."""
    try:
        pid: int = ray.get(actor.pid.remote(), timeout=5)
    except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
        return None
    return pid


def _elements(entry_id: bytes, fields: dict[bytes, bytes]) -> list[Element]:
    return [change.element for change in decode_entry(entry_id.decode(), fields).changes]
