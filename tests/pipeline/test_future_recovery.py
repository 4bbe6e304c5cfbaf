"""A pending ``drasi.trueFor`` survives killed actors and fires exactly once.

Three consumers (or one, with both actors killed) feed a query that waits five minutes of a
manual clock before a machine counts as overheated. One machine's wait ends before the crash,
another's is pending when the query actor, the coordinator or both are SIGKILLed; after the
restart the clock moves on and a third machine starts its wait. The query's platform reaction
stream (written from the query actor, its sequences kept across restarts) must hold each
machine's ADD exactly once, in strictly increasing sequences, and the query's rows must be the
three machines.
"""

from __future__ import annotations

import functools
import uuid
from collections import Counter
from typing import Any

import orjson
import pytest
import ray
import redis

from drasi_ray import DrasiRay, ManualClock, PlatformReaction, PlatformSource, Query
from drasi_ray.model.changes import Op, node
from drasi_ray.model.clock import wall_ms
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.waiting import wait_until

T0 = 1_700_000_000_000
MINUTE = 60_000
QUERY = (
    "MATCH (m:Machine) WHERE drasi.trueFor(m.state = 'hot', duration({minutes: 5})) "
    "RETURN m.id AS id"
)


def _machine(machine_id: str, state: str, minute: int, op: Op = Op.INSERT) -> bytes:
    element = node(machine_id, ["Machine"], {"id": machine_id, "state": state})
    return encode_cloud_event([change_event(op, element, (T0 + minute * MINUTE) * 1_000_000)])


def _app(redis_url: str, stream: str, clock: ManualClock, consumers: int) -> DrasiRay:
    app = DrasiRay(f"futures-{uuid.uuid4().hex[:8]}", clock=clock)
    app.add_source(
        PlatformSource.builder("machines")
        .with_redis_url(redis_url)
        .with_stream_key(stream)
        .with_consumers(consumers)
        .with_batch_size(10)
        .with_block_ms(100)
        .with_claim_idle_ms(1_000)
        .with_reclaim_interval_ms(200)
        .build()
    )
    query = Query.cypher("hot").query(QUERY).from_source("machines")
    app.add_query(query.with_reaction(PlatformReaction()).build())
    return app


def _published(redis_url: str) -> list[dict[str, Any]]:
    client = redis.Redis.from_url(redis_url)
    results: Any = client.xrange("hot-results")
    events = [orjson.loads(fields[b"data"]) for _, fields in results]
    return [event["data"] for event in events if event["data"]["kind"] == "change"]


def _kill(app: DrasiRay, victim: str) -> None:
    """SIGKILL the victims and wait until Ray runs a new process for each."""
    actors = []
    if victim in ("query", "both"):
        actors.append(app.query_actor("hot"))
    if victim in ("coordinator", "both"):
        actors.append(app.coordinator_actor())
    pids = [ray.get(actor.pid.remote()) for actor in actors]
    for actor in actors:
        ray.kill(actor, no_restart=False)
    for actor, pid in zip(actors, pids, strict=True):
        wait_until(functools.partial(_new_pid, actor, pid), 120, what="the actor's restart")


def _new_pid(actor: Any, old: int) -> bool:
    try:
        return bool(ray.get(actor.pid.remote(), timeout=5) != old)
    except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
        return False


@pytest.mark.parametrize(
    ("victim", "consumers"),
    [("query", 3), ("coordinator", 3), ("both", 3), ("both", 1)],
    ids=["query-3consumers", "coordinator-3consumers", "both-3consumers", "both-1consumer"],
)
def test_a_pending_true_for_fires_once_after_restarts(
    ray_session: None, redis_url: str, victim: str, consumers: int
) -> None:
    stream = f"machines-{uuid.uuid4().hex[:8]}"
    clock = ManualClock(T0)
    app = _app(redis_url, stream, clock, consumers)
    app.start()
    try:
        with Publisher.from_url(redis_url) as publisher:
            publisher.publish(
                stream,
                [_machine("m1", "hot", 0), _machine("m2", "hot", 1), _machine("m3", "cold", 1)],
            )
            app.wait_until_idle(60)
            clock.set(T0 + 5 * MINUTE)  # m1's wait ends; m2's is pending until minute 6
            app.wait_until_idle(60)
            assert app.results("hot") == [{"id": "m1"}]
            app.flush_reactions(30)
            _kill(app, victim)
            app.wait_until_idle(120)  # the killed actors are back and rebuilt
            assert app.results("hot") == [{"id": "m1"}]
            clock.set(T0 + 6 * MINUTE)
            publisher.publish(stream, [_machine("m3", "hot", 6, Op.UPDATE)])
            app.wait_until_idle(60)
            clock.set(T0 + 11 * MINUTE)
            app.wait_until_idle(60)
        app.flush_reactions(30)
        assert sorted(row["id"] for row in app.results("hot")) == ["m1", "m2", "m3"]
        changes = _published(redis_url)
        added = Counter(row["id"] for change in changes for row in change["addedResults"])
        assert added == {"m1": 1, "m2": 1, "m3": 1}
        assert not any(change["deletedResults"] or change["updatedResults"] for change in changes)
        sequences = [change["sequence"] for change in changes]
        assert sequences == sorted(set(sequences))
    finally:
        app.stop()


def test_on_the_wall_clock_a_due_true_for_fires_by_itself(
    ray_session: None, redis_url: str
) -> None:
    """Without a manual clock the query actor's timer runs the re-evaluation when the wall
    clock reaches it: the machine, stamped now, shows up about a second later, unasked."""
    stream = f"machines-{uuid.uuid4().hex[:8]}"
    app = DrasiRay(f"futures-{uuid.uuid4().hex[:8]}")
    app.add_source(
        PlatformSource.builder("machines")
        .with_redis_url(redis_url)
        .with_stream_key(stream)
        .with_block_ms(100)
        .build()
    )
    text = (
        "MATCH (m:Machine) WHERE drasi.trueFor(m.state = 'hot', duration({seconds: 1})) "
        "RETURN m.id AS id"
    )
    app.add_query(Query.cypher("hot").query(text).from_source("machines").build())
    app.start()
    try:
        subscription = app.subscribe("hot")
        element = node("m1", ["Machine"], {"id": "m1", "state": "hot"})
        now_ns = wall_ms() * 1_000_000
        with Publisher.from_url(redis_url) as publisher:
            publisher.publish(
                stream, [encode_cloud_event([change_event(Op.INSERT, element, now_ns)])]
            )
        app.wait_until_idle(60)
        seen: list[Any] = []

        def added() -> bool:
            seen.extend(diff for result in subscription.drain() for diff in result.results)
            return bool(seen)

        wait_until(added, 30, what="the trueFor to fire on the wall clock")
        assert seen == [{"type": "ADD", "data": {"id": "m1"}}]
        assert wall_ms() - now_ns // 1_000_000 >= 1_000
    finally:
        app.stop()
