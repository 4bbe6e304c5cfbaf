"""The PostgreSQL stored-procedure reaction against a real PostgreSQL (pgserver's), a real
Redis and a local Ray: the procedures' table equals the query's results after a run in which
the reaction's actor is SIGKILLed and PostgreSQL restarts; a call the database refuses is
dead-lettered; a user's mistakes are one line."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import ray
import redis

from drasi_ray import ConfigError, DrasiRay, PostgresStoredProcReaction, StoredProcCommands
from drasi_ray.model import keys
from drasi_ray.model.changes import Op, node
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.apps import one_source_app
from drasi_ray.testing.embedded_redis import EmbeddedRedis
from drasi_ray.testing.postgres import EmbeddedPostgres
from drasi_ray.testing.waiting import wait_until

QUERIES = {
    "hot": "MATCH (s:Sensor) WHERE s.t > 70 RETURN s.id AS id, s.t AS t",
    "alarms": "MATCH (s:Sensor) WHERE s.t > 95 RETURN s.id AS id",
}
SCHEMA = """
CREATE TABLE hot_rows (id text PRIMARY KEY, t double precision NOT NULL);
CREATE TABLE seen (key text PRIMARY KEY);
CREATE PROCEDURE upsert_hot(p_id text, p_t double precision, p_key text) LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO hot_rows (id, t) VALUES (p_id, p_t) ON CONFLICT (id) DO UPDATE SET t = p_t;
    INSERT INTO seen (key) VALUES (p_key) ON CONFLICT DO NOTHING;
END $$;
CREATE PROCEDURE delete_hot(p_id text) LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM hot_rows WHERE id = p_id;
END $$;
CREATE PROCEDURE refuse(p_id text) LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'no alarms for %', p_id;
END $$;
"""


class Scene:
    def __init__(
        self, app: DrasiRay, url: str, stream: str, database: str, pg: EmbeddedPostgres
    ) -> None:
        self.app, self.redis_url, self.stream, self.database, self.pg = (
            app,
            url,
            stream,
            database,
            pg,
        )

    def publish(self, events: list[Any]) -> None:
        with Publisher.from_url(self.redis_url) as publisher:
            publisher.publish(self.stream, [encode_cloud_event([event]) for event in events])

    def table(self) -> list[dict[str, Any]]:
        rows = self.pg.query("SELECT id, t FROM hot_rows ORDER BY id", self.database)
        return [{"id": row_id, "t": t} for row_id, t in rows]


def _sensor(op: Op, sensor_id: str, t: float, minute: int) -> Any:
    element = node(sensor_id, ["Sensor"], {"id": sensor_id, "t": t})
    return change_event(op, element, (1_700_000_000_000 + minute * 60_000) * 1_000_000)


def _spec(pg: EmbeddedPostgres, database: str, **options: Any) -> PostgresStoredProcReaction:
    return PostgresStoredProcReaction(
        id="sync",
        host=pg.host,
        port=pg.port,
        database=database,
        user="postgres",
        password_file=pg.password_file,
        added_command="CALL upsert_hot(@id, @t, @drasi.key)",
        updated_command="upsert_hot(@after.id, @after.t, @drasi.key)",  # CALL may be left out
        deleted_command="CALL delete_hot(@id)",
        queries={"hot": None, "alarms": StoredProcCommands(added_command="CALL refuse(@id)")},
        **options,
    )


@pytest.fixture(scope="module")
def scene(
    ray_session: None, redis_server: EmbeddedRedis, postgres_server: EmbeddedPostgres
) -> Iterator[Scene]:
    url = redis_server.url
    redis.Redis.from_url(url).flushall()
    database = postgres_server.create_database(f"sync_{uuid.uuid4().hex[:8]}")
    postgres_server.execute(SCHEMA, database)
    stream = f"sensors-{uuid.uuid4().hex[:6]}"
    app = one_source_app(url, stream, QUERIES, prefix="storedproc")
    spec = _spec(
        postgres_server,
        database,
        max_attempts=10_000,
        retry_initial_ms=50,
        retry_max_ms=500,
        connect_timeout_s=2,
    )
    app.add_reaction(spec)
    app.start()
    try:
        yield Scene(app, url, stream, database, postgres_server)
    finally:
        app.stop()


def _kill_reaction(app: DrasiRay) -> None:
    actor = app._reactions.actors["sync"]
    pid = ray.get(actor.pid.remote())
    ray.kill(actor, no_restart=False)
    wait_until(lambda: _new_pid(actor, pid), 120, what="the reaction actor's restart")


def _new_pid(actor: Any, old: int) -> bool:
    try:
        return bool(ray.get(actor.pid.remote(), timeout=5) != old)
    except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
        return False


def test_the_procedures_table_equals_the_results_after_kills_and_database_restarts(
    scene: Scene,
) -> None:
    rng = random.Random(11)
    sensors = [f"s{i}" for i in range(30)]
    minute = 0
    for round_number in range(4):
        events = []
        for _ in range(120):
            minute += 1
            sensor_id = rng.choice(sensors)
            op = Op.DELETE if rng.random() < 0.1 else Op.UPDATE
            events.append(_sensor(op, sensor_id, round(rng.uniform(60.0, 90.0), 1), minute))
        scene.publish(events)
        if round_number == 1:
            _kill_reaction(scene.app)
        elif round_number == 2:
            scene.pg.restart("fast")
        elif round_number == 3:
            scene.pg.restart("immediate")  # a crash: PostgreSQL recovers its WAL
    scene.app.wait_until_idle(120)
    scene.app.flush_reactions(180)
    results = sorted(scene.app.results("hot"), key=lambda row: row["id"])
    assert results and scene.table() == results
    report = scene.app.status().reactions["sync"]
    assert report["queries"]["hot"]["dead_lettered"] == 0 and report["lag"] == 0
    stream: Any = redis.Redis.from_url(scene.redis_url).xrange("hot-results")
    calls = [diff for _id, fields in stream for diff in _diffs(fields)]
    seen = scene.pg.query("SELECT count(*) FROM seen", scene.database)[0][0]
    assert seen == sum(1 for kind in calls if kind != "DELETE")  # every upsert's key, once


def _diffs(fields: dict[bytes, bytes]) -> list[str]:
    data = orjson.loads(fields[b"data"])["data"]
    if data["kind"] != "change":
        return []
    return (
        ["ADD"] * len(data["addedResults"])
        + ["UPDATE"] * len(data["updatedResults"])
        + ["DELETE"] * len(data["deletedResults"])
    )


def test_a_call_the_database_refuses_is_dead_lettered_and_the_rest_goes_on(
    scene: Scene,
) -> None:
    scene.publish([_sensor(Op.INSERT, "hot-one", 99.5, 5000)])
    scene.app.wait_until_idle(60)
    scene.app.flush_reactions(60)
    assert {"id": "hot-one", "t": 99.5} in scene.table()  # hot: delivered
    client = redis.Redis.from_url(scene.redis_url)
    letters: Any = client.xrange(keys.reaction_dead_letters(scene.app.app_id, "sync"))
    fields = {k.decode(): v.decode() for k, v in letters[-1][1].items()}
    assert fields["query"] == "alarms" and fields["attempts"] == "1"
    assert fields["reason"].startswith("RaiseException [P0001]: no alarms for hot-one")
    assert fields["request"].startswith("CALL refuse(%s) on database")


def test_a_user_s_mistakes_each_get_one_line(scene: Scene, tmp_path: Any) -> None:
    app = one_source_app(scene.redis_url, "x", QUERIES, prefix="mistakes")
    pg = scene.pg
    bad_field = _spec(pg, scene.database).model_copy(
        update={"added_command": "CALL upsert_hot(@id, @temperature, @drasi.key)"}
    )
    with pytest.raises(ConfigError) as raised:
        app.add_reaction(bad_field)
    assert str(raised.value) == (
        "reaction 'sync', query 'hot', added_command: @temperature names field 'temperature', "
        "which the query does not return (its fields: id, t)"
    )
    wrong = tmp_path / "wrong-password"
    wrong.write_text("not-the-password\n")
    app.add_reaction(_spec(pg, scene.database).model_copy(update={"password_file": str(wrong)}))
    with pytest.raises(ConfigError) as raised:
        app.start()  # the login is tried first: nothing starts
    message = str(raised.value)
    assert "\n" not in message and not app.running
    assert message.startswith(
        f"reaction 'sync': cannot connect to database {scene.database!r} at "
        f"127.0.0.1:{pg.port} as 'postgres': "
    )
    assert "password authentication failed" in message and "not-the-password" not in message
