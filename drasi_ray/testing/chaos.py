"""The chaos run: nothing lost, nothing applied twice, while processes die and Redis restarts.

    python -m drasi_ray.testing.chaos --changes 100000          # the full run (bench/chaos.py too)
    python -m drasi_ray.testing.chaos --changes 5000 --redis-restarts 1   # the short CI version

It publishes a sensor workload (1% malformed entries, ~1% producer retries duplicating earlier
entries) into 3 consumers feeding several queries, SIGKILLs an actor process every ~2 s (the
kinds in turn: a store shard, the coordinator or another, then a query host, then a consumer;
a random actor of the kind) and restarts the Redis server
(AOF on) while the changes flow. ``--shards`` and ``--query-hosts`` set how many store shards
and query hosts the app runs; ``--streams P`` makes the source read P streams (one per
partition: each change on its element's stream, :func:`drasi_ray.model.partitions.stream_for`;
a malformed entry on the stream of its position), and the oracle replays each stream in entry
order, one after the other. Retention is on (``trim_acked``) and tombstones are forgotten as
soon as the sweep allows (``tombstone_ttl_ms=0``, every 500 ms), so trimming and forgetting
race the kills too.
A tap copies every entry through a consumer group of its own (the trim waits for it); at the
end the copied streams are replayed in entry order through a fresh single-process store and
engine (the oracle) and every query's results, and the element store, are compared with the
app's. ``lost`` and ``mismatched rows`` must both be 0.
"""

from __future__ import annotations

import argparse
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import ray
import redis

from drasi_ray.app import DrasiRay
from drasi_ray.model import keys
from drasi_ray.model.backoff import Backoff
from drasi_ray.model.changes import Op, node, parse_entry_id, relation
from drasi_ray.model.config import RayConfig, ScalingConfig
from drasi_ray.model.errors import DecodeError, DrasiRayError
from drasi_ray.model.partitions import stream_for
from drasi_ray.query.definition import Query
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.shards.store import ElementStore
from drasi_ray.source.decode import change_event, decode_entry, encode_cloud_event
from drasi_ray.source.platform import PlatformSource
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing import drills
from drasi_ray.testing.embedded_redis import EmbeddedRedis

QUERIES = {
    "hot": "MATCH (s:Sensor) WHERE s.temperature > 30 "
    "RETURN s.id AS id, s.temperature AS temperature",
    "by_zone": "MATCH (s:Sensor)-[:IN]->(z:Zone) RETURN z.name AS zone, count(s) AS sensors, "
    "avg(s.temperature) AS avg_temp, max(s.temperature) AS max_temp",
    "zone_hot": "MATCH (s:Sensor)-[:IN]->(z:Zone) WHERE s.temperature > 35 "
    "RETURN s.id AS sensor, z.name AS zone",
}
STREAM = "chaos-changes"
SOURCE = "plant"
TAP_GROUP = "chaos-tap"


@dataclass(frozen=True, slots=True)
class ChaosSettings:
    changes: int = 100_000
    consumers: int = 3
    sensors: int = 2_000
    zones: int = 20
    malformed_rate: float = 0.01
    duplicate_rate: float = 0.01
    kill_every_s: float = 2.0
    redis_restarts: int = 2
    chunk: int = 250
    rate_per_s: float = 4_000.0
    seed: int = 7
    idle_timeout_s: float = 600.0
    shards: int = 1
    query_hosts: int | None = None
    streams: int = 1

    @property
    def stream_keys(self) -> list[str]:
        """The source's streams: :data:`STREAM`, or ``STREAM-0 .. STREAM-<P-1>``."""
        if self.streams == 1:
            return [STREAM]
        return [f"{STREAM}-{index}" for index in range(self.streams)]


@dataclass(slots=True)
class ChaosReport:
    published: int = 0
    malformed: int = 0
    duplicated: int = 0
    applied: int = 0
    applied_in_order: int = 0
    dead_lettered: int = 0
    duplicates_suppressed: int = 0
    trimmed: int = 0
    tombstones_forgotten: int = 0
    kills: int = 0
    redis_restarts: int = 0
    lost: int = 0
    mismatched_rows: int = 0
    wall_s: float = 0.0
    kill_log: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Nothing lost, every result right, and exactly the malformed entries dead-lettered."""
        return self.lost == 0 and self.mismatched_rows == 0 and self.dead_lettered == self.malformed

    def lines(self) -> list[str]:
        return drills.report_lines(self, hidden="kill_log")


# --------------------------------------------------------------------------- the workload


def workload(settings: ChaosSettings) -> Iterator[bytes]:
    """Entries in publish order: the graph, then updates, malformed entries and retries."""
    rng = random.Random(settings.seed)
    yield from _initial_graph(settings)
    sent: list[bytes] = []
    for number in range(settings.changes):
        roll = rng.random()
        if roll < settings.malformed_rate:
            yield _malformed(rng, number)
        elif roll < settings.malformed_rate + settings.duplicate_rate and sent:
            yield rng.choice(sent[-500:])  # a producer retrying an earlier write
        else:
            payload = _change(rng, settings, number)
            sent.append(payload)
            yield payload


def _initial_graph(settings: ChaosSettings) -> Iterator[bytes]:
    for zone in range(settings.zones):
        yield _entry(Op.INSERT, node(f"zone-{zone}", ["Zone"], {"name": f"zone-{zone}"}), 0)
    for sensor in range(settings.sensors):
        properties = {"id": sensor, "temperature": 20.0}
        yield _entry(Op.INSERT, node(f"s-{sensor}", ["Sensor"], properties), 0)
        zone_id = f"zone-{sensor % settings.zones}"
        yield _entry(Op.INSERT, relation(f"in-{sensor}", ["IN"], f"s-{sensor}", zone_id), 0)


def _change(rng: random.Random, settings: ChaosSettings, number: int) -> bytes:
    sensor = rng.randrange(settings.sensors)
    ts = (number + 1) * 1_000_000
    roll = rng.random()
    if roll < 0.05:  # move the sensor to another zone (the relation's end changes)
        zone = f"zone-{rng.randrange(settings.zones)}"
        return _entry(Op.UPDATE, relation(f"in-{sensor}", ["IN"], f"s-{sensor}", zone), ts)
    if roll < 0.07:  # delete it, or bring it back
        op = Op.DELETE if rng.random() < 0.5 else Op.INSERT
        properties = {"id": sensor, "temperature": round(rng.uniform(10, 45), 2)}
        return _entry(op, node(f"s-{sensor}", ["Sensor"], properties), ts)
    temperature = round(rng.uniform(10, 45), 2)
    return _entry(Op.UPDATE, node(f"s-{sensor}", ["Sensor"], {"temperature": temperature}), ts)


def _entry(op: Op, element: Any, ts_ns: int) -> bytes:
    return encode_cloud_event([change_event(op, element, ts_ns, db="plant")])


def _malformed(rng: random.Random, number: int) -> bytes:
    return rng.choice(
        [
            b"{not json",
            b'{"data": "not a list"}',
            b'{"data": [{"op": "x", "payload": {}}]}',
            b'{"data": [{"op": "u", "payload": {"after": {"id": "m%d", "labels": []},' % number
            + b' "source": {"db": "plant", "table": "node", "ts_ns": 1}}}]}',
        ]
    )


# --------------------------------------------------------------------------- the run


class Chaos:
    """Publishes the workload while killing actors and restarting Redis."""

    def __init__(self, settings: ChaosSettings, echo: Callable[[str], Any] = print) -> None:
        self.settings = settings
        self.echo = echo
        self.report = ChaosReport()
        self._rng = random.Random(settings.seed + 1)

    def run(self) -> ChaosReport:
        started = time.monotonic()
        with EmbeddedRedis(appendonly=True, appendfsync="always") as server:
            tap = StreamTap(server.url, self.settings.stream_keys).start()
            app = self._app(server.url)
            app.start()
            try:
                self._publish_under_fire(app, server)
                self._wait_idle(app)
                self._verify(app, server.url, tap.finish())
            finally:
                tap.stop()
                app.stop()
        self.report.wall_s = round(time.monotonic() - started, 1)
        return self.report

    def _app(self, url: str) -> DrasiRay:
        app = DrasiRay(
            f"chaos-{uuid.uuid4().hex[:6]}",
            ray_config=RayConfig(include_dashboard=False),
            scaling_config=ScalingConfig(
                shards=self.settings.shards, query_hosts=self.settings.query_hosts
            ),
        )
        app.add_source(
            PlatformSource.builder(SOURCE)
            .with_redis_url(url)
            .with_stream_keys(self.settings.stream_keys)
            .with_consumers(self.settings.consumers)
            .with_batch_size(200)
            .with_block_ms(200)
            .with_claim_idle_ms(3_000)
            .with_reclaim_interval_ms(500)
            .with_dead_letter_maxlen(None)
            .with_dispatch_buffer_capacity(1_000)
            .with_trim_acked(True, interval_ms=500)
            .with_tombstone_ttl(0, sweep_ms=500)
            .build()
        )
        for query_id, text in QUERIES.items():
            app.add_query(Query.cypher(query_id).query(text).from_source(SOURCE).build())
        return app

    def _publish_under_fire(self, app: DrasiRay, server: EmbeddedRedis) -> None:
        entries = list(workload(self.settings))
        restarts_at = set(drills.evenly_spaced(len(entries), self.settings.redis_restarts))
        interval = self.settings.chunk / self.settings.rate_per_s
        next_kill = time.monotonic() + self.settings.kill_every_s
        publisher = Publisher.from_url(server.url)
        for start in range(0, len(entries), self.settings.chunk):
            chunk = entries[start : start + self.settings.chunk]
            publisher = self._publish_chunk(publisher, server.url, chunk)
            if any(start <= at < start + len(chunk) for at in restarts_at):
                self._restart_redis(server)
            if time.monotonic() >= next_kill:
                self._kill_one(app)
                next_kill = time.monotonic() + self.settings.kill_every_s
            time.sleep(interval)
        publisher.close()

    def _publish_chunk(self, publisher: Publisher, url: str, chunk: Sequence[bytes]) -> Publisher:
        """Publish each stream's part of ``chunk`` (in order), retrying through Redis outages
        like a real producer would."""
        parts: dict[str, list[bytes]] = {}
        for payload in chunk:
            parts.setdefault(self._stream_of(payload), []).append(payload)
        for stream, part in parts.items():
            publisher = self._publish_part(publisher, url, stream, part)
        return publisher

    def _stream_of(self, payload: bytes) -> str:
        """The element's stream; a malformed entry's by its length (it names no element)."""
        streams = self.settings.stream_keys
        if len(streams) == 1:
            return streams[0]
        try:
            entry = decode_entry("1-0", {b"data": payload})
        except DecodeError:
            return streams[len(payload) % len(streams)]
        return stream_for(entry.changes[0].element.id, streams)

    def _publish_part(
        self, publisher: Publisher, url: str, stream: str, part: Sequence[bytes]
    ) -> Publisher:
        backoff = Backoff(0.1, 2.0)
        for _attempt in range(100):
            try:
                publisher.publish(stream, part)
                return publisher
            except DrasiRayError:
                time.sleep(backoff.next_delay())
                publisher.close()
                publisher = Publisher.from_url(url)
        raise RuntimeError("could not publish through the Redis outage")

    def _restart_redis(self, server: EmbeddedRedis) -> None:
        self.echo(f"  restarting redis (pid {server.pid})")
        server.restart()
        self.report.redis_restarts += 1

    def _kill_one(self, app: DrasiRay) -> None:
        """SIGKILL one actor: the kinds in turn (a store shard, a query host, a consumer; so
        even a short run kills a shard first), a random actor of the kind."""
        shards = app.shard_actors()
        kinds: list[list[tuple[str, Any]]] = [
            [("coordinator", shards[0])]
            + [(f"shard {index}", actor) for index, actor in enumerate(shards) if index],
            [(f"query host {name}", actor) for name, actor in app.query_host_actors().items()],
            [(f"consumer {i}", actor) for i, actor in enumerate(app.consumer_actors(SOURCE))],
        ]
        name, actor = self._rng.choice(kinds[self.report.kills % len(kinds)])
        pid = drills.sigkill(actor)
        if pid is None:
            return  # still restarting from an earlier kill
        self.report.kills += 1
        self.report.kill_log.append(f"{name} pid {pid}")
        self.echo(f"  SIGKILL {name} (pid {pid})")

    def _wait_idle(self, app: DrasiRay) -> None:
        deadline = time.monotonic() + self.settings.idle_timeout_s
        while True:
            try:
                app.wait_until_idle(timeout=max(1.0, deadline - time.monotonic()))
                return
            except (redis.RedisError, ray.exceptions.RayError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    # -- verification -------------------------------------------------------------------

    def _verify(
        self, app: DrasiRay, url: str, entries: dict[str, dict[str, dict[bytes, bytes]]]
    ) -> None:
        client = redis.Redis.from_url(url)
        oracle = Oracle.replay_streams(entries)
        streams = self.settings.stream_keys
        report = self.report
        report.published = oracle.entries
        report.malformed = oracle.malformed
        report.duplicated = len(oracle.payload_hashes) - len(set(oracle.payload_hashes))
        report.applied_in_order = oracle.applied
        status = app.status()
        counters = status.totals.durable.get(SOURCE, {})
        report.applied = counters.get("applied", 0)
        report.duplicates_suppressed = counters.get("duplicates", 0)
        dead: Any = client.xrange(f"{streams[0]}:dlq")
        report.dead_lettered = len(dead)
        wrongly_dead = [
            f
            for _, f in dead
            if (f[b"stream"].decode(), f[b"entry_id"].decode()) not in oracle.malformed_ids
        ]
        pending = sum(
            int(client.xpending(s, keys.consumer_group(app.app_id))["pending"]) for s in streams
        )
        store_diff = oracle.store_mismatches(app.elements(SOURCE))
        report.trimmed = sum(c.stats.trimmed for c in status.consumers(SOURCE))
        report.tombstones_forgotten = status.totals.tombstones_forgotten
        report.lost = len(wrongly_dead) + pending + store_diff
        report.mismatched_rows = sum(
            drills.row_mismatches(oracle.results(query_id), app.results(query_id))
            for query_id in QUERIES
        )


class Oracle:
    """The stream replayed in entry order through a fresh store and engine, in-process."""

    def __init__(self) -> None:
        self.store = ElementStore()
        self.queries = {qid: ContinuousQuery(qid, text) for qid, text in QUERIES.items()}
        self.entries = 0
        self.malformed = 0
        self.applied = 0
        self.malformed_ids: set[tuple[str, str]] = set()
        """(stream, entry id) of every malformed entry"""
        self.payload_hashes: list[int] = []

    @classmethod
    def replay(cls, entries: dict[str, dict[bytes, bytes]], stream: str = STREAM) -> Oracle:
        """Apply ``entries`` (entry id -> fields) of ``stream`` in stream order."""
        return cls.replay_streams({stream: entries})

    @classmethod
    def replay_streams(cls, streams: dict[str, dict[str, dict[bytes, bytes]]]) -> Oracle:
        """Apply each stream's entries (stream -> entry id -> fields) in its order, one stream
        after the other: what a partitioned source must end at, each element's changes being
        on one stream."""
        oracle = cls()
        for stream, entries in streams.items():
            for entry_id in sorted(entries, key=parse_entry_id):
                oracle.apply(entry_id, entries[entry_id], stream)
        return oracle

    def apply(self, entry_id: str, fields: dict[bytes, bytes], stream: str = STREAM) -> None:
        self.entries += 1
        try:
            entry = decode_entry(entry_id, fields)
        except DecodeError:
            self.malformed += 1
            self.malformed_ids.add((stream, entry_id))
            return
        self.payload_hashes.append(hash(fields.get(b"data")))
        for change in entry.changes:
            delta = self.store.apply(change)
            if delta is None:
                continue
            self.applied += 1
            for query in self.queries.values():
                query.apply(delta)

    def results(self, query_id: str) -> list[dict[str, Any]]:
        return self.queries[query_id].results()

    def store_mismatches(self, elements: Sequence[Any]) -> int:
        theirs = {element.id: element for element in elements}
        ours = {element.id: element for element in self.store.elements()}
        return drills.store_mismatches(ours, theirs, also=lambda element: element.labels)


class StreamTap:
    """Copies every entry of the streams as it arrives, through a consumer group of its own.

    Retention trims only what every group acked, so the tap's group keeps each entry in the
    stream until it is copied: the oracle sees the whole stream however much the app trims.
    Rides out Redis restarts: after an error it reconnects and re-reads its own pending
    entries before new ones.
    """

    def __init__(self, url: str, streams: Sequence[str] = (STREAM,)) -> None:
        self._url = url
        self._streams = list(streams)
        self.entries: dict[str, dict[str, dict[bytes, bytes]]] = {s: {} for s in streams}
        """stream -> entry id -> fields"""
        self._draining = threading.Event()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-tap", daemon=True)

    def start(self) -> StreamTap:
        client = redis.Redis.from_url(self._url)
        for stream in self._streams:
            client.xgroup_create(stream, TAP_GROUP, id="0", mkstream=True)
        client.close()
        self._thread.start()
        return self

    def finish(self, timeout_s: float = 120.0) -> dict[str, dict[str, dict[bytes, bytes]]]:
        """Copy what is left (everything is published by now) and return all entries."""
        self._draining.set()
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            raise RuntimeError("the stream tap did not drain the stream in time")
        return self.entries

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                if self._copy():
                    return
            except (redis.RedisError, OSError):
                time.sleep(0.2)  # Redis restarting: reconnect, own pending first

    def _copy(self) -> bool:
        """Copy until drained after :meth:`finish` (True) or stopped; raises on Redis errors."""
        client = redis.Redis.from_url(self._url)
        try:
            start = "0"  # own pending first (after a reconnect), then new entries
            while not self._stopped.is_set():
                positions: Any = {stream: start for stream in self._streams}
                reply: Any = client.xreadgroup(TAP_GROUP, "tap", positions, 1000, 200)
                copied = 0
                for raw_stream, rows in reply or ():
                    stream = raw_stream.decode()
                    for entry_id, fields in rows:
                        self.entries[stream][entry_id.decode()] = fields
                    if rows:
                        client.xack(stream, TAP_GROUP, *(entry_id for entry_id, _ in rows))
                        copied += len(rows)
                if copied:
                    continue
                if start == "0":
                    start = ">"
                elif self._draining.is_set():
                    return True
            return False
        finally:
            client.close()


def main(argv: Sequence[str] | None = None) -> int:
    defaults = ChaosSettings()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--changes", type=int, default=defaults.changes)
    parser.add_argument("--consumers", type=int, default=defaults.consumers)
    parser.add_argument("--kill-every", type=float, default=defaults.kill_every_s)
    parser.add_argument("--redis-restarts", type=int, default=defaults.redis_restarts)
    parser.add_argument("--rate", type=float, default=defaults.rate_per_s)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--shards", type=int, default=defaults.shards)
    parser.add_argument("--query-hosts", type=int, default=defaults.query_hosts)
    parser.add_argument("--streams", type=int, default=defaults.streams)
    args = parser.parse_args(argv)
    settings = ChaosSettings(
        changes=args.changes,
        consumers=args.consumers,
        kill_every_s=args.kill_every,
        redis_restarts=args.redis_restarts,
        rate_per_s=args.rate,
        seed=args.seed,
        shards=args.shards,
        query_hosts=args.query_hosts,
        streams=args.streams,
    )
    report = Chaos(settings).run()
    print("\n".join(report.lines()))
    print("PASSED" if report.passed else "FAILED: lost or mismatched rows")
    return 0 if report.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
