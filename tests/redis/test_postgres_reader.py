"""The PostgreSQL reader without Ray: a real PostgreSQL 16 (pgserver) and a real Redis.

Its start refuses a misconfigured database with one error naming it and the fix; the snapshot
and the stream map every column type the same way; a stopped reader resumes where the stream
ends (each transaction on the stream once, in commit order); ``sync`` returns once what was
committed before it is on the stream.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
import redis

from drasi_ray.model.changes import Element, ElementChange
from drasi_ray.model.errors import PostgresSourceError
from drasi_ray.model.postgres_specs import PostgresSourceConfig
from drasi_ray.source.decode import decode_entry
from drasi_ray.source.postgres.reader import PostgresReader
from drasi_ray.testing.postgres import EmbeddedPostgres, source_builder

NO_ELEMENTS: Sequence[Element] = ()


def _settings(
    server: EmbeddedPostgres, database: str, redis_url: str, **changes: Any
) -> PostgresSourceConfig:
    config = source_builder(server, database, redis_url).build().config
    updated: PostgresSourceConfig = config.model_copy(update=changes)
    return updated


@contextmanager
def _running(settings: PostgresSourceConfig, stream: str) -> Iterator[PostgresReader]:
    """A reader on its thread (the store is empty: nothing to delete on a new snapshot)."""
    reader = PostgresReader(
        "shop",
        settings,
        stream_key=stream,
        state_key=f"{stream}:reader",
        consumer_group="drasi-core",
        known_elements=lambda: NO_ELEMENTS,
    )
    stop = threading.Event()
    thread = threading.Thread(target=reader.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield reader
    finally:
        stop.set()
        thread.join(30)


def _changes(redis_url: str, stream: str) -> list[ElementChange]:
    rows: Any = redis.Redis.from_url(redis_url).xrange(stream)
    return [c for entry_id, fields in rows for c in decode_entry(entry_id.decode(), fields).changes]


@pytest.fixture
def database(postgres_server: EmbeddedPostgres) -> str:
    return postgres_server.create_database(f"reader_{uuid.uuid4().hex[:8]}")


def _start_error(settings: PostgresSourceConfig) -> str:
    with _running(settings, "s") as reader, pytest.raises(PostgresSourceError) as raised:
        reader.wait_started(60)
    assert reader.report().state == "failed"
    return str(raised.value)


def test_start_errors_name_the_database_and_the_fix(
    redis_url: str,
    postgres_server: EmbeddedPostgres,
    database: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, where = postgres_server, f"database {database!r}"
    settings = _settings(server, database, redis_url)
    message = _start_error(settings)
    assert where in message and "CREATE PUBLICATION drasi_publication" in message
    server.execute(
        "CREATE TABLE logs (at timestamptz, line text); CREATE PUBLICATION drasi_publication"
        " FOR TABLE logs; CREATE ROLE reader LOGIN PASSWORD 'pw';",
        database,
    )
    message = _start_error(settings)
    assert "has no primary key and no REPLICA IDENTITY FULL" in message
    assert "ALTER TABLE logs REPLICA IDENTITY FULL" in message
    monkeypatch.setenv("READER_PW", "pw")
    reader = settings.model_copy(
        update={"user": "reader", "password_env": "READER_PW", "password_file": None}
    )
    assert "ALTER ROLE reader WITH REPLICATION" in _start_error(reader)
    server.execute("ALTER ROLE reader WITH REPLICATION", database)
    assert "GRANT SELECT ON logs TO reader" in _start_error(reader)
    missing = reader.model_copy(update={"password_env": "NO_SUCH_VARIABLE"})
    assert "password_env names NO_SUCH_VARIABLE, which is not set" in _start_error(missing)
    monkeypatch.setenv("WRONG_PW", "not-it")
    message = _start_error(reader.model_copy(update={"password_env": "WRONG_PW"}))
    assert where in message and "password authentication failed" in message
    assert "not-it" not in message
    server.execute("DROP OWNED BY reader; DROP ROLE reader", database)


TYPES = """
CREATE TABLE kinds (
    id int PRIMARY KEY, flag bool, small smallint, big bigint, real_ real, dbl float8,
    amount numeric(12, 3), txt text, var varchar(10), fixed char(4), uid uuid, ts timestamp,
    tstz timestamptz, day date, tod time, doc json, docb jsonb, raw bytea, tags text[], o oid
);
CREATE PUBLICATION drasi_publication FOR TABLE kinds;
"""
ROW = (
    "(%s, true, 7, 9007199254740993, 1.5, 2.25, 12.345, 'hé', 'v', 'ab', "
    "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2024-01-02 10:00:00.25', "
    "'2024-01-02 12:00:00+02', '2024-01-02', '10:30:00', '{\"n\": [1, 2.5]}', '{\"k\": true}', "
    "'\\x00ff', '{a,b}', 16384)"
)
EXPECTED = {
    "flag": True, "small": 7, "big": 9007199254740993, "real_": 1.5, "dbl": 2.25,
    "amount": 12.345, "txt": "hé", "var": "v", "fixed": "ab",
    "uid": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "ts": "2024-01-02 10:00:00.25",
    "tstz": "2024-01-02T10:00:00+00:00", "day": "2024-01-02", "tod": "10:30:00",
    "doc": {"n": [1, 2.5]}, "docb": {"k": True}, "raw": "AP8=", "tags": "{a,b}", "o": 16384,
}  # fmt: skip


def test_snapshot_and_stream_map_every_type_alike_then_resume_without_repeats(
    redis_url: str,
    postgres_server: EmbeddedPostgres,
    database: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="drasi_ray.postgres")
    server = postgres_server
    server.execute(TYPES + "INSERT INTO kinds VALUES " + ROW % 1, database)
    settings = _settings(server, database, redis_url)
    with _running(settings, "kinds") as reader:
        reader.wait_started(60)
        server.execute("INSERT INTO kinds VALUES " + ROW % 2, database)
        server.execute("UPDATE kinds SET txt = NULL WHERE id = 1", database)
        reader.sync(30)
        report = reader.report()
    snapshot, streamed, nulled = _changes(redis_url, "kinds")
    for change, key in ((snapshot, 1), (streamed, 2)):
        assert dict(change.element.properties) == {"id": key, **EXPECTED}
        kinds = {name: type(value) for name, value in change.element.properties.items()}
        assert kinds == {"id": int, **{name: type(value) for name, value in EXPECTED.items()}}
    assert snapshot.version[0] < streamed.version[0] < nulled.version[0]
    assert nulled.element.properties["txt"] is None
    assert report.text_columns == ["kinds.tags"] and report.snapshots == 1
    warned = [r for r in caplog.records if "is read as text" in r.getMessage()]
    assert [r.getMessage().split(": column ")[1] for r in warned] == [
        "kinds.tags is read as text: its type (OID 1009) has no mapping"
    ]  # once, at start
    server.execute("INSERT INTO kinds (id) VALUES (3); INSERT INTO kinds (id) VALUES (4)", database)
    with _running(settings, "kinds") as again:  # resumes: no new snapshot, nothing twice
        again.wait_started(60)
        server.execute("DELETE FROM kinds WHERE id = 2", database)
        again.sync(30)
        assert again.report().snapshots == 0
    ids = [(c.op.value, c.element.id) for c in _changes(redis_url, "kinds")]
    assert ids == [
        ("i", "kinds:1"), ("i", "kinds:2"), ("u", "kinds:1"), ("i", "kinds:3"), ("i", "kinds:4"),
        ("d", "kinds:2"),
    ]  # fmt: skip
