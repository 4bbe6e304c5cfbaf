"""Following result streams and delivering every diff elsewhere: the core of the app's
reactions that leave the process (HTTP; the actor shell is :mod:`drasi_ray.actors.reaction`).

A :class:`StreamRelay` runs one task per query. Each reads its query's result stream
(:mod:`drasi_ray.reactions.feed`) from its own position, turns every diff of a change into a
:class:`Call` (the :class:`Endpoint` renders it) and sends the calls in result order. After
each call, delivered or dead-lettered, it records its position in Redis (hash
``drasi:<app>:reaction:<id>:positions``, :func:`~drasi_ray.model.keys.reaction_positions`):
the entry and how many of its diffs are done. So a restarted relay resumes at the first call
not known done; the one in flight when it died is sent again, with the same idempotency key
(``<queryId>:<sequence>:<index>``), which is how a receiver recognises it: delivery is at least
once, and exactly once for a receiver that drops a repeated key.

Failures: a call the endpoint answers with a retryable failure is retried with capped
exponential backoff up to ``max_attempts``, then dead-lettered; a refused one (and one that
cannot be rendered) is dead-lettered at once. The dead-letter stream
(``drasi:<app>:reaction:<id>:dlq``, :mod:`drasi_ray.reactions.dead_letters`) holds per diff
its query, sequence, key, kind, the diff, the request and the reason: enough to render and
send it again (``drasi-ray dlq replay --reaction``). A query whose results are more than
``max_lag`` behind the newest has the calls of the results it is behind on dead-lettered
unsent: the stream, not memory, buffers what the endpoint has not taken, and that buffer is
bounded. Redis being down stops the relay (with
backoff) but loses nothing: it resumes from its recorded position. Nothing of this blocks a
query: the query only writes its result stream.

A query's first start (no position recorded) begins at the end of its stream as it is then,
recorded at once: results the query emits after the reaction started are delivered.
"""

from __future__ import annotations

import abc
import asyncio
import dataclasses
import enum
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
from redis import exceptions as rexc

from drasi_ray.model import keys
from drasi_ray.model.backoff import Backoff
from drasi_ray.reactions.base import end_tasks
from drasi_ray.reactions.dead_letters import ReactionDeadLetter
from drasi_ray.reactions.feed import ResultEntry, ResultFeed, id_order

logger = logging.getLogger("drasi_ray.reaction")

IDLE_POLL_S = 0.01
REDIS_FAILURES: tuple[type[BaseException], ...] = (rexc.RedisError, OSError)


@dataclass(frozen=True, slots=True)
class RelaySettings:
    """What a relay needs besides its endpoint: where the streams and its keys are, and its
    retry policy (from the reaction's spec)."""

    reaction_id: str
    kind: str
    app_id: str
    redis_url: str
    streams: Mapping[str, str]
    """query id -> its result stream"""
    max_attempts: int = 5
    retry_initial_ms: int = 200
    retry_max_ms: int = 5000
    max_lag: int = 10_000
    dead_letter_maxlen: int = 100_000
    page: int = 200
    block_ms: int = 1000


@dataclass(frozen=True, slots=True)
class Call:
    """One diff to deliver: ``payload`` as the endpoint rendered it (None: the reaction sends
    nothing for this kind of change), or ``error`` when it could not be rendered."""

    key: str
    query_id: str
    sequence: int
    kind: str
    diff: Mapping[str, Any]
    payload: Any = None
    error: str | None = None
    source_time_ms: int = 0


class Verdict(enum.Enum):
    DELIVERED = "delivered"
    RETRY = "retry"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one send gave; ``reason`` says why it failed."""

    verdict: Verdict
    reason: str = ""


class Endpoint(Protocol):
    """Where a relay delivers: renders calls, sends them (``batch_size`` at a time)."""

    batch_size: int

    def calls(self, entry: ResultEntry) -> list[Call]:
        """One call per diff of ``entry``, in order (pure): :meth:`render` of each."""
        ...

    def render(
        self, query_id: str, sequence: int, index: int, diff: Mapping[str, Any], source_time_ms: int
    ) -> Call:
        """The call of the ``index``-th diff of a query's result ``sequence`` (pure)."""
        ...

    async def send(self, calls: Sequence[Call]) -> Outcome:
        """Deliver ``calls`` (one request, or one batch); never raises for a failed delivery."""
        ...

    def describe(self, call: Call) -> str:
        """The request of ``call`` in a dead letter (``PUT http://host/path``), no secrets."""
        ...

    async def close(self) -> None: ...


class RendersEachDiff(abc.ABC):
    """An endpoint's :meth:`Endpoint.calls`, written once: its ``render`` of each diff."""

    def calls(self, entry: ResultEntry) -> list[Call]:
        return [
            self.render(entry.query_id, entry.sequence, index, diff, entry.source_time_ms)
            for index, diff in enumerate(entry.diffs)
        ]

    @abc.abstractmethod
    def render(
        self, query_id: str, sequence: int, index: int, diff: Mapping[str, Any], source_time_ms: int
    ) -> Call:
        """The call of the ``index``-th diff of a query's result ``sequence`` (pure)."""


@dataclass(frozen=True, slots=True)
class Position:
    """How far a query's delivery got: ``done`` of the ``total`` diffs of the entry."""

    entry_id: str
    sequence: int
    done: int = 0
    total: int = 0

    @property
    def complete(self) -> bool:
        return self.done >= self.total

    def dumps(self) -> bytes:
        return orjson.dumps([self.entry_id, self.sequence, self.done, self.total])

    @classmethod
    def loads(cls, raw: bytes) -> Position:
        entry_id, sequence, done, total = orjson.loads(raw)
        return cls(str(entry_id), int(sequence), int(done), int(total))


@dataclass(slots=True)
class QueryProgress:
    """One query's live figures: its position and the newest sequence seen in its stream."""

    position: Position | None = None
    latest_sequence: int = 0
    delivered: int = 0
    dead_lettered: int = 0
    failures: int = 0
    state: str = "starting"
    last_error: str | None = None

    @property
    def lag(self) -> int:
        done = 0 if self.position is None else self.position.sequence
        return max(0, self.latest_sequence - done)

    def as_dict(self) -> dict[str, Any]:
        position = self.position
        return {
            "state": self.state,
            "sequence": None if position is None else position.sequence,
            "latest_sequence": self.latest_sequence,
            "lag": self.lag,
            "delivered": self.delivered,
            "dead_lettered": self.dead_lettered,
            "failures": self.failures,
            "last_error": self.last_error,
        }


@dataclass(frozen=True, slots=True)
class RelayReport:
    """A relay's status (``DrasiRay.status().reactions[id]``): the sums over its queries
    (``lag`` in results), and each query's figures."""

    reaction_id: str
    kind: str
    state: str
    lag: int
    delivered: int
    dead_lettered: int
    failures: int
    last_error: str | None
    queries: dict[str, dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_STATE_ORDER = ("redis-unavailable", "retrying", "starting", "running", "stopped")


class StreamRelay:
    """Delivers the queries' result streams to an :class:`Endpoint` (module docstring)."""

    def __init__(self, settings: RelaySettings, endpoint: Endpoint) -> None:
        self.settings = settings
        self.endpoint = endpoint
        self.feed = ResultFeed(settings.redis_url)
        self.progress = {query_id: QueryProgress() for query_id in settings.streams}
        self._positions_key = keys.reaction_positions(settings.app_id, settings.reaction_id)
        self._dead_letters = keys.reaction_dead_letters(settings.app_id, settings.reaction_id)
        self._dlq_maxlen = settings.dead_letter_maxlen
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False

    def start(self) -> None:
        """One task per query on the running event loop."""
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._follow(query_id), name=f"{self.settings.reaction_id}/{query_id}")
            for query_id in self.settings.streams
        ]

    async def _follow(self, query_id: str) -> None:
        """Follow one query's stream for ever; Redis trouble is waited out with backoff."""
        progress = self.progress[query_id]
        backoff = Backoff(cap_s=self.settings.retry_max_ms / 1000)
        while not self._stopping:
            try:
                await self._follow_once(query_id)
            except asyncio.CancelledError:
                raise
            except REDIS_FAILURES as exc:
                progress.state = "redis-unavailable"
                progress.last_error = f"redis: {type(exc).__name__}: {exc}"
                logger.warning("reaction %s: %s", self.settings.reaction_id, progress.last_error)
                await backoff.wait()

    async def _follow_once(self, query_id: str) -> None:
        stream = self.settings.streams[query_id]
        progress = self.progress[query_id]
        await self._resume(query_id)
        progress.state = "running"
        while not self._stopping:
            position = progress.position
            assert position is not None
            entries = await self.feed.read_after(
                stream, query_id, position.entry_id, self.settings.page, self.settings.block_ms
            )
            if entries:
                progress.latest_sequence = max(progress.latest_sequence, entries[-1].sequence)
            if entries:
                await self._relay(entries)

    async def _resume(self, query_id: str) -> None:
        """Take the recorded position (first start: the stream's end, recorded at once) and
        finish the entry it stopped in."""
        progress = self.progress[query_id]
        stream = self.settings.streams[query_id]
        raw: Any = await self.feed.client.hget(self._positions_key, query_id)
        last = await self.feed.last(stream, query_id)
        progress.latest_sequence = 0 if last is None else last.sequence
        if raw is None:
            start = Position("0-0", 0) if last is None else Position(last.entry_id, last.sequence)
            await self._record(query_id, start)
            return
        position = Position.loads(raw)
        progress.position = position
        if not position.complete:
            entry = await self.feed.read_at(stream, position.entry_id, query_id)
            if entry is not None:
                await self._relay([entry], position.done)

    async def _relay(self, entries: Sequence[ResultEntry], skip: int = 0) -> None:
        """Deliver the calls of ``entries`` (of one query, in order; the first entry's from
        the ``skip``-th on), ``batch_size`` at a time across entries, recording the position
        after each send and at the last entry."""
        query_id = entries[0].query_id
        pending: list[tuple[ResultEntry, int, int, Call]] = []  # entry, index, its calls, call
        for number, entry in enumerate(entries):
            if entry.error is not None:
                await self._dead_letter_entry(entry)
            elif entry.control is None:
                calls = self.endpoint.calls(entry)
                start = skip if number == 0 else 0
                pending += [(entry, i, len(calls), calls[i]) for i in range(start, len(calls))]
        size = self.endpoint.batch_size
        for at in range(0, len(pending), size):
            chunk = pending[at : at + size]
            await self._deliver([call for _entry, _index, _total, call in chunk])
            entry, index, total, _call = chunk[-1]
            await self._record(query_id, Position(entry.entry_id, entry.sequence, index + 1, total))
        last = entries[-1]
        if not pending or pending[-1][0] is not last:
            await self._record(query_id, Position(last.entry_id, last.sequence))

    async def _deliver(self, chunk: Sequence[Call]) -> None:
        """Send ``chunk`` until delivered, refused or out of attempts (then dead-letter it)."""
        broken = [call for call in chunk if call.error is not None]
        for call in broken:
            await self._dead_letter([call], call.error or "", 0)
        sendable = [call for call in chunk if call.error is None and call.payload is not None]
        if not sendable:
            return
        first = sendable[0]
        progress = self.progress[first.query_id]
        backoff = Backoff(self.settings.retry_initial_ms / 1000, self.settings.retry_max_ms / 1000)
        attempts = 0
        while True:
            if progress.latest_sequence - first.sequence > self.settings.max_lag:
                reason = f"more than max_lag ({self.settings.max_lag}) results behind the newest"
                await self._dead_letter(sendable, reason, attempts)
                return
            outcome = await self.endpoint.send(sendable)
            attempts += 1
            if outcome.verdict is Verdict.DELIVERED:
                progress.delivered += len(sendable)
                progress.state = "running"
                return
            self._failed(progress, outcome, sendable[0])
            if outcome.verdict is Verdict.REFUSED or attempts >= self.settings.max_attempts:
                await self._dead_letter(sendable, outcome.reason, attempts)
                return
            progress.state = "retrying"
            await backoff.wait()
            last = await self.feed.last(self.settings.streams[first.query_id], first.query_id)
            if last is not None:
                progress.latest_sequence = max(progress.latest_sequence, last.sequence)

    def _failed(self, progress: QueryProgress, outcome: Outcome, call: Call) -> None:
        progress.failures += 1
        progress.last_error = outcome.reason
        if progress.failures == 1 or progress.failures % 100 == 0:
            logger.warning(
                "reaction %s: %s failed (%s); %d failure(s) so far",
                self.settings.reaction_id,
                call.key,
                outcome.reason,
                progress.failures,
            )

    async def _record(self, query_id: str, position: Position) -> None:
        await self.feed.client.hset(self._positions_key, query_id, position.dumps())
        self.progress[query_id].position = position

    async def _dead_letter(self, calls: Sequence[Call], reason: str, attempts: int) -> None:
        pipe = self.feed.client.pipeline(transaction=False)
        for call in calls:
            letter = ReactionDeadLetter.for_call(
                self.settings.reaction_id,
                call.query_id,
                call.sequence,
                call.key,
                call.kind,
                call.diff,
                reason=reason,
                attempts=attempts,
                request=self.endpoint.describe(call) if call.payload is not None else "",
                source_time_ms=call.source_time_ms,
            )
            fields: Any = letter.to_fields()
            pipe.xadd(self._dead_letters, fields, maxlen=self._dlq_maxlen, approximate=True)
        await pipe.execute()
        self.progress[calls[0].query_id].dead_lettered += len(calls)
        logger.warning(
            "reaction %s: %d call(s) of %s dead-lettered: %s",
            self.settings.reaction_id,
            len(calls),
            calls[0].key,
            reason,
        )

    async def _dead_letter_entry(self, entry: ResultEntry) -> None:
        letter = ReactionDeadLetter.for_entry(
            self.settings.reaction_id, entry.query_id, entry.entry_id, entry.error or "", entry.raw
        )
        fields: Any = letter.to_fields()
        await self.feed.client.xadd(
            self._dead_letters, fields, maxlen=self._dlq_maxlen, approximate=True
        )
        self.progress[entry.query_id].dead_lettered += 1

    async def flush(self, timeout_s: float) -> bool:
        """Wait until every query delivered (or dead-lettered) what its stream holds now;
        False if ``timeout_s`` passed first."""
        deadline = time.monotonic() + timeout_s
        targets = {
            query_id: id_order(await self.feed.last_id(stream))
            for query_id, stream in self.settings.streams.items()
        }
        while not all(self._reached(query_id, target) for query_id, target in targets.items()):
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(IDLE_POLL_S)
        return True

    def _reached(self, query_id: str, target: tuple[int, int]) -> bool:
        position = self.progress[query_id].position
        if position is None:
            return False
        return id_order(position.entry_id) >= target and position.complete

    def report(self) -> RelayReport:
        queries = {query_id: progress.as_dict() for query_id, progress in self.progress.items()}
        values = list(self.progress.values())
        states = [progress.state for progress in values] or ["running"]
        errors = [progress.last_error for progress in values if progress.last_error]
        return RelayReport(
            reaction_id=self.settings.reaction_id,
            kind=self.settings.kind,
            state=min(states, key=_STATE_ORDER.index),
            lag=sum(progress.lag for progress in values),
            delivered=sum(progress.delivered for progress in values),
            dead_lettered=sum(progress.dead_lettered for progress in values),
            failures=sum(progress.failures for progress in values),
            last_error=errors[-1] if errors else None,
            queries=queries,
        )

    async def stop(self) -> None:
        """Stop following (the positions are recorded) and release the endpoint and Redis."""
        self._stopping = True
        await end_tasks(self._tasks, self.settings.block_ms / 1000 + 0.5)
        for progress in self.progress.values():
            progress.state = "stopped"
        await self.endpoint.close()
        await self.feed.close()
