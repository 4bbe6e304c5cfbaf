"""A PostgreSQL source's faults: a killed reader, a slot gone, wrong credentials.

A reader SIGKILLed mid-stream is restarted by Ray and resumes from the slot and the stream: each
committed row is on the stream once and the results are exact. When the stream's slot is gone
(dropped while the app was stopped), the next start takes a new snapshot and deletes what went
meanwhile. Wrong credentials fail ``start()`` with one error naming the database.
"""

from __future__ import annotations

import os
import signal
import uuid

import pytest
import ray
import redis

from drasi_ray import DrasiRay
from drasi_ray.model import keys
from drasi_ray.model.changes import Element
from drasi_ray.model.errors import PostgresSourceError
from drasi_ray.source.decode import decode_entry
from drasi_ray.testing.postgres import EmbeddedPostgres, source_builder
from drasi_ray.testing.waiting import wait_until
from tests.pipeline.test_postgres import SCHEMA, shop_app, sorted_rows


def test_a_killed_reader_loses_and_repeats_nothing(
    ray_session: None, redis_url: str, postgres_server: EmbeddedPostgres
) -> None:
    database = postgres_server.create_database(f"kill_{uuid.uuid4().hex[:8]}")
    postgres_server.execute(SCHEMA, database)
    app = shop_app(postgres_server, database, redis_url, f"pg-{uuid.uuid4().hex[:6]}").start()
    try:
        reader = app.reader_actor("shop")
        with postgres_server.connect(database) as connection, connection.cursor() as cursor:
            for number in range(300):
                cursor.execute("INSERT INTO orders VALUES (%s, 2, 1.00)", (1000 + number,))
                if number in (100, 200):
                    os.kill(wait_until(lambda: _pid(reader), what="the reader"), signal.SIGKILL)
        app.wait_until_idle(timeout=120)
        assert {"customer": "Bob", "orders": 301, "spent": 307.0} in app.results("spend")
        stream = redis.Redis.from_url(redis_url).xrange(keys.postgres_stream(app.app_id, "shop"))
        ids = [element.id for entry_id, fields in stream for element in _elements(entry_id, fields)]
        assert len(ids) == len(set(ids)) == 5 + 3 + 300 * 2  # snapshot, its relations, rows
    finally:
        app.stop()


def _pid(actor: object) -> int | None:
    """The actor's process id; None while Ray restarts it."""
    try:
        pid: int = ray.get(actor.pid.remote(), timeout=5)  # type: ignore[attr-defined]
    except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
        return None
    return pid


def _elements(entry_id: bytes, fields: dict[bytes, bytes]) -> list[Element]:
    return [change.element for change in decode_entry(entry_id.decode(), fields).changes]


def test_a_new_snapshot_deletes_rows_gone_while_the_slot_was_missing(
    ray_session: None, redis_url: str, postgres_server: EmbeddedPostgres
) -> None:
    database = postgres_server.create_database(f"gone_{uuid.uuid4().hex[:8]}")
    postgres_server.execute(SCHEMA, database)
    app_id = f"pg-{uuid.uuid4().hex[:6]}"
    app = shop_app(postgres_server, database, redis_url, app_id).start()
    app.wait_until_idle(timeout=60)
    app.stop()
    postgres_server.execute("SELECT pg_drop_replication_slot(%s)", database, [f"slot_{database}"])
    postgres_server.execute(
        "DELETE FROM orders WHERE customer_id = 2; INSERT INTO orders VALUES (14, 1, 1.00)",
        database,
    )
    again = shop_app(postgres_server, database, redis_url, app_id).start()
    try:
        again.wait_until_idle(timeout=60)
        assert sorted_rows(again, "spend") == [  # Bob's order deleted after the bootstrap
            {"customer": "Ann", "orders": 3, "spent": 126.5},
            {"customer": "Bob", "orders": 0, "spent": 0.0},
        ]
        assert "orders:11" not in {element.id for element in again.elements("shop")}
        assert again.status()["readers"]["shop"]["snapshots"] == 1
    finally:
        again.stop()


def test_wrong_credentials_fail_the_start_naming_the_database(
    ray_session: None, redis_url: str, postgres_server: EmbeddedPostgres, tmp_path: object
) -> None:
    database = postgres_server.create_database(f"creds_{uuid.uuid4().hex[:8]}")
    wrong = os.path.join(str(tmp_path), "password")
    with open(wrong, "w", encoding="utf-8") as file:
        file.write("not-the-password\n")
    app = DrasiRay(f"pg-{uuid.uuid4().hex[:6]}")
    app.add_source(
        source_builder(postgres_server, database, redis_url).with_password_file(wrong).build()
    )
    with pytest.raises(PostgresSourceError) as raised:
        app.start()
    message = str(raised.value)
    assert f"database {database!r}" in message and "password authentication failed" in message
    assert "not-the-password" not in message
    assert not app.running
    wait_until(lambda: not _reader_alive(app), what="the failed reader to be gone")


def _reader_alive(app: DrasiRay) -> bool:
    try:
        ray.get_actor("drasi/shop/postgres-reader", namespace=app.namespace)
    except ValueError:
        return False
    return True
