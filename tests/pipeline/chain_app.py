"""The chaining composition check end to end: pairs of catalogue queries in one app on Ray and
Redis (tests/differential/composition.py says what is checked and why).

:class:`ChainApp` runs the upstreams of some pairs on the sources ``s`` and ``t`` (their
consumers as many as asked), each pair's downstream reading its upstream with
``.from_query``, two shared query hosts (the upstreams on one, the downstreams on the other,
so a kill takes one side), and a manual clock that follows the changes' times, so Drasi's future
functions come due mid-stream and, at the end, all of them. A change stream is published in
chunks; after each chunk the clock moves to the chunk's last change. :meth:`ChainApp.verify`
then compares, per pair, the chain's rows hash with the upstream's results, and the
downstream's results with the downstream run in process over the hash's rows; and, unless a
process was killed (a restarted query host rebuilds its rows without diffs, as in Drasi), each
downstream's diffs, replayed, with its results.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ray
import redis

from drasi_ray import DrasiRay, PlatformSource, Query
from drasi_ray.model import keys
from drasi_ray.model.clock import ManualClock
from drasi_ray.model.config import QueryConfig, RayConfig, ScalingConfig
from drasi_ray.reactions.chain import NodeChange
from drasi_ray.source.decode import encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.waiting import wait_until
from tests.differential.composition import (
    HISTORY,
    Pair,
    carried_changes,
    compose,
    diffs_of,
    judge,
    mismatches,
    oracle_results,
    replay_of,
    row_mismatches,
    upstream_rows,
)
from tests.differential.generator import BASE_TIME_MS
from tests.oracle.model import Case, QuerySpec

SOURCES = ("s", "t")
END_MS = 10 * 86_400_000
"""How far past the last change the clock moves at the end."""


def query_config(spec: QuerySpec, reads_query: bool = False) -> QueryConfig:
    """The app's query for a catalogue spec (its joins, middleware and pipelines)."""
    builder = Query.cypher(spec.id).query(spec.text)
    for source in spec.sources:
        if reads_query:
            builder.from_query(source)
        else:
            builder.from_source(source, pipeline=spec.pipelines.get(source, ()))
    for join in spec.joins:
        builder.with_join(join["id"], *((key["label"], key["property"]) for key in join["keys"]))
    for middleware in spec.middleware:
        builder.with_middleware(middleware["name"], middleware["kind"], middleware["config"])
    return builder.build()


@dataclass(slots=True)
class ChainOutcome:
    """What :meth:`ChainApp.verify` found, and what the run did."""

    pairs: int = 0
    changes: int = 0
    chain_entries: int = 0
    downstream_diffs: int = 0
    kills: list[str] = field(default_factory=list)
    history_dependent: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class ChainApp:
    """Pairs with distinct upstreams in one app (module docstring)."""

    def __init__(self, pairs: Sequence[Pair], redis_url: str, consumers: int) -> None:
        assert len({pair.upstream.id for pair in pairs}) == len(pairs), "one pair per upstream"
        self.pairs = list(pairs)
        self.url = redis_url
        self.clock = ManualClock(BASE_TIME_MS)
        self.app = DrasiRay(
            f"chains-{uuid.uuid4().hex[:8]}",
            clock=self.clock,
            ray_config=RayConfig(include_dashboard=False),
            scaling_config=ScalingConfig(query_hosts=2),
        )
        self.streams = {source: f"{self.app.app_id}-{source}" for source in SOURCES}
        for source in SOURCES:
            self.app.add_source(
                PlatformSource.builder(source)
                .with_redis_url(redis_url)
                .with_stream_key(self.streams[source])
                .with_consumers(consumers)
                .with_block_ms(100)
                .with_claim_idle_ms(2_000)
                .with_reclaim_interval_ms(500)
                .build()
            )
        for pair in self.pairs:  # alternately: the least loaded host takes each in turn
            self.app.add_query(query_config(pair.upstream))
            self.app.add_query(query_config(pair.downstream, reads_query=True))
        self.outcome = ChainOutcome(pairs=len(self.pairs))
        self._subscriptions: dict[str, Any] = {}
        self._replays = {pair.downstream.id: replay_of(pair.downstream) for pair in self.pairs}

    def start(self) -> None:
        self.app.start()
        hosts = {self.app.host_of(pair.upstream.id) for pair in self.pairs}
        downstream_hosts = {self.app.host_of(pair.downstream.id) for pair in self.pairs}
        assert len(hosts) == len(downstream_hosts) == 1 and hosts != downstream_hosts
        for pair in self.pairs:
            down = pair.downstream.id
            self._subscriptions[down] = self.app.subscribe(down, capacity=1_000_000)

    def stop(self) -> None:
        self.app.stop()

    def publish(
        self, case: Case, chunk: int = 40, between: Callable[[int], None] | None = None
    ) -> None:
        """Publish ``case`` in chunks, the clock moved to each chunk's last change once it is
        applied; ``between(number)`` runs after chunk ``number`` (a kill)."""
        changes = case.changes
        with Publisher.from_url(self.url) as publisher:
            for number, start in enumerate(range(0, len(changes), chunk)):
                part = changes[start : start + chunk]
                for source in SOURCES:
                    payloads = [
                        encode_cloud_event([change.platform_event()])
                        for change in part
                        if change.source == source
                    ]
                    if payloads:
                        publisher.publish(self.streams[source], payloads)
                self._settle()
                self._move_clock(part[-1].effective_from)
                self._drain()
                if between is not None:
                    between(number)
        self.outcome.changes += len(changes)
        if changes:
            self._move_clock(changes[-1].effective_from + END_MS)

    def _move_clock(self, millis: int) -> None:
        if millis > self.clock.now_ms():
            _restartable(lambda: self.clock.set(millis))

    def _settle(self) -> None:
        _restartable(lambda: self.app.wait_until_idle(timeout=120))

    # -- kills ------------------------------------------------------------------------------

    def upstream_host(self) -> Any:
        return self.app.query_actor(self.pairs[0].upstream.id)

    def downstream_host(self) -> Any:
        return self.app.query_actor(self.pairs[0].downstream.id)

    # -- verification -----------------------------------------------------------------------

    def verify(self, replay: bool = True, timeout_s: float = 180.0) -> ChainOutcome:
        """Wait until every chain holds its upstream's results and its stream composes to
        them (restarted actors catch up), then until every downstream equals its composition;
        a downstream that does not is judged (:func:`judge`: Drasi over the chain's changes).
        The outcome has what still differs in ``errors``."""
        self._settle()
        self.outcome.errors.extend(self._until(self._chain_problems, timeout_s))
        unjudged = self._until(lambda: self._composition_problems(judged=False), 30.0)
        if unjudged:
            self.outcome.errors.extend(_restartable(lambda: self._composition_problems(True)))
        if replay:
            self._replay()
        client = redis.Redis.from_url(self.url)
        self.outcome.chain_entries = sum(
            int(client.xlen(keys.chain_stream(self.app.app_id, pair.upstream.id)))
            for pair in self.pairs
        )
        return self.outcome

    @staticmethod
    def _until(problems_now: Callable[[], list[str]], timeout_s: float) -> list[str]:
        """Poll ``problems_now`` until it finds none; what it found last (empty: none)."""
        found: list[str] = []

        def settled() -> bool:
            found[:] = _restartable(problems_now)
            return not found

        try:
            wait_until(settled, timeout_s, what="no problems", poll_s=0.5)
        except TimeoutError:
            return found
        return []

    def _rows(self, upstream_id: str) -> dict[str, dict[str, Any]]:
        client = redis.Redis.from_url(self.url)
        raw: Any = client.hgetall(keys.chain_rows(self.app.app_id, upstream_id))
        return upstream_rows(raw)

    def _carried(self, upstream_id: str) -> list[NodeChange]:
        client = redis.Redis.from_url(self.url)
        entries: Any = client.xrange(keys.chain_stream(self.app.app_id, upstream_id))
        return carried_changes(entries)

    def _chain_problems(self) -> list[str]:
        """Each chain's rows hash against its upstream's results, and its stream against the
        hash (the stream's changes, applied in order, leave exactly its rows)."""
        found: list[str] = []
        for pair in self.pairs:
            up = pair.upstream.id
            rows = self._rows(up)
            problem = row_mismatches(up, self.app.results(up), list(rows.values()))
            if problem:
                found.append(f"the chain of {problem}")
            composed = compose(self._carried(up))
            problem = row_mismatches(up, list(rows.values()), list(composed.values()))
            if problem or composed.keys() != rows.keys():
                found.append(f"the stream of the chain of {up} does not compose to its rows")
        return found

    def _composition_problems(self, judged: bool) -> list[str]:
        found: list[str] = []
        for pair in self.pairs:
            up, down = pair.upstream.id, pair.downstream
            rows = {up: self._rows(up)}
            actual = self.app.results(down.id)
            if not judged:
                problem = mismatches(down, oracle_results(down, rows), actual)
            else:
                problem = judge(down, rows, actual, functools.partial(self._carried, up))
                if problem == HISTORY:
                    self.outcome.history_dependent.append(down.id)
                    problem = ""
            if problem:
                found.append(f"composition: {problem}")
        return found

    def _drain(self) -> None:
        """Take the downstreams' diffs delivered so far (their buffers never fill up)."""
        for down_id, subscription in self._subscriptions.items():
            diffs = diffs_of(subscription.drain())
            self._replays[down_id].apply(diffs)
            self.outcome.downstream_diffs += len(diffs)

    def _replay(self) -> None:
        self._drain()
        for pair in self.pairs:
            replay = self._replays[pair.downstream.id]
            self.outcome.errors.extend(f"diffs: {error}" for error in replay.errors)
            problem = replay.mismatch(self.app.results(pair.downstream.id))
            if problem:
                self.outcome.errors.append(f"diffs: {problem}")


def _restartable(action: Callable[[], Any], timeout_s: float = 120.0) -> Any:
    """``action``, again while an actor it calls is restarting."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return action()
        except (ray.exceptions.RayError, redis.RedisError, TimeoutError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
