"""Durable state in Redis: what must survive a restart of a store shard (the coordinator is
shard 0) or of a query host.

What lives where (key names from :mod:`drasi_ray.model.keys`):

- ``drasi:<app>:store:<source_id>`` (hash): element id -> the element's versioned record
  (:meth:`ElementStore.snapshot_element`, orjson). Every store shard writes its own
  elements' records into it, in one ``HSET`` per batch before it confirms the batch, so an
  acked entry is always in the durable store; a shard loads the records it owns.
- ``drasi:<app>:subscriptions`` (hash, field ``table``): the subscription table as JSON,
  rewritten whenever it changes (rare: registrations and control events).
- ``drasi:<app>:queries`` (hash): query id -> its registration (settings, host, labels) as JSON,
  and ``drasi:<app>:shards`` (string): the current shard count.
- ``drasi:<app>:seq-lease:<query_id>`` and ``drasi:<app>:seq:<query_id>`` (strings): a ceiling
  of the result sequences a query emitted and the last one, so a restarted query actor keeps
  its sequence strictly increasing (:class:`SequenceKeeper`).
- ``drasi:<app>:functions:<query_id>`` (hash): the state of a query's stateful functions, as
  :meth:`~drasi_ray.query.stateful.FunctionState.take_changes` gives it, plus the field
  :data:`QUERY_FIELD` (the digest of the query it belongs to). Written before the results of
  the change or due re-evaluation that changed it are published (:meth:`StateStore.
  save_function_state`), so a restarted query actor rebuilds what it published and no more.
- ``drasi:<app>:clock`` (string): the time of the app's manual clock, if it has one.
- ``drasi:<app>:history:<query_id>`` (hash) and ``drasi:<app>:history-limits`` (hash): the
  element history the store shards keep for a query that calls Drasi's past functions, one
  field per version, written with the batch's element records (before the batch is acked),
  and its limits (:mod:`drasi_ray.model.history`).

Only JSON is ever stored: never pickle.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from drasi_ray.model import keys
from drasi_ray.model.backoff import outlasting
from drasi_ray.model.history import ElementHistory, HistoryLimits, HistoryWrites, history_element
from drasi_ray.shards.store import ElementStore
from drasi_ray.streams import resp

SCAN_COUNT = 1000
FORGET_CHUNK = 5000
SEQUENCE_LEASE = 10_000
"""Result sequences reserved per durable write (see :class:`SequenceKeeper`)."""

_RETRY_CAP_S = 2.0
LATEST_WRITE_INTERVAL_S = 0.5
FLUSH_TIMEOUT_S = 5.0
"""How long :meth:`SequenceKeeper.flush` waits for Redis to take the last sequence."""
"""How often, at most, a query writes its last result sequence (see :class:`SequenceKeeper`)."""

QUERY_FIELD = "query"
"""The field of a function-state hash that holds the digest of its query's text."""

REDIS_TRANSIENT: tuple[type[BaseException], ...] = (RedisError, OSError)
"""Errors of an unreachable or restarting Redis: worth waiting out."""

logger = logging.getLogger("drasi_ray.state")


class StateStore:
    """Async access to one app's durable state. Create it inside the actor that uses it."""

    def __init__(self, client: aioredis.Redis, app_id: str) -> None:
        self._client = client
        self._app = app_id
        self._writes = resp.Pipe(client)  # save_elements' own connection (one writer)

    @classmethod
    def from_url(cls, url: str, app_id: str) -> StateStore:
        """A store over a client of ``url`` that retries a command once, on a new
        connection, when its pooled connection turns out dead (after a Redis restart): every
        command it sends through the pool is idempotent (SET, HSET, HDEL, DEL and reads)."""
        client = aioredis.Redis.from_url(url, decode_responses=False, retry=Retry(NoBackoff(), 1))
        return cls(client, app_id)

    async def close(self) -> None:
        self._writes.close()
        await self._client.aclose()

    # -- element stores -----------------------------------------------------------------

    async def save_elements(
        self,
        source_id: str,
        store: ElementStore,
        ids: set[str],
        counters: dict[str, int] | None = None,
    ) -> None:
        """Write the records of ``ids`` and add ``counters`` to the source's durable counters,
        in one pipeline. On failure the ids are marked dirty again (counters are lost with the
        batch, which will be retried). Called by one task at a time (a shard persists under
        its lock): the writes go over a connection of their own."""
        commands: list[bytes] = []
        if ids:  # hand-packed: redis-py would pack each of these arguments in Python
            args: list[resp.Arg] = ["HSET", keys.element_store(self._app, source_id)]
            snapshot = store.snapshot_element
            for element_id in ids:
                args += (element_id, snapshot(element_id))
            commands.append(resp.pack(args))
        for name, amount in (counters or {}).items():
            if amount:
                stats = keys.coordinator_stats(self._app, source_id)
                commands.append(resp.pack(("HINCRBY", stats, name, amount)))
        if not commands:
            return
        try:
            for reply in await self._writes.execute(commands):
                if isinstance(reply, Exception):
                    raise reply
        except BaseException:
            store.mark_dirty(ids)
            raise

    async def forget_elements(self, source_id: str, ids: list[str]) -> None:
        """Delete the records of ``ids`` (forgotten tombstones), a few thousand per ``HDEL``.

        A failure leaves some of them stored: harmless, they load back as the tombstones they
        are and are forgotten again later.
        """
        key = keys.element_store(self._app, source_id)
        for start in range(0, len(ids), FORGET_CHUNK):
            await self._client.hdel(key, *ids[start : start + FORGET_CHUNK])

    async def forget_source(self, source_id: str) -> None:
        """Delete a removed source's element store and durable counters."""
        await self._client.delete(
            keys.element_store(self._app, source_id), keys.coordinator_stats(self._app, source_id)
        )

    async def load_counters(self, source_id: str) -> dict[str, int]:
        raw: Any = await self._client.hgetall(keys.coordinator_stats(self._app, source_id))
        return {key.decode(): int(value) for key, value in raw.items()}

    async def load_store(
        self, source_id: str, owns: Callable[[str], bool] | None = None
    ) -> ElementStore:
        """The persisted store of ``source_id``; with ``owns``, only the records of the element
        ids it accepts (a store shard's slice: every shard writes its own elements' records
        into the one hash of the source)."""
        store = ElementStore()
        async for element_id, record in self._scan(keys.element_store(self._app, source_id)):
            if owns is None or owns(element_id):
                store.load_element(element_id, record)
        store.take_dirty()
        return store

    async def _scan(self, key: str) -> AsyncIterator[tuple[str, bytes]]:
        cursor = 0
        while True:
            reply: Any = await self._client.hscan(key, cursor, count=SCAN_COUNT)
            cursor, chunk = reply
            for field, value in chunk.items():
                yield field.decode(), value
            if cursor == 0:
                return

    async def stored_sources(self) -> list[str]:
        """Ids of the sources that have a persisted element store."""
        prefix = keys.element_store(self._app, "x")[:-1]
        found = [key async for key in self._client.scan_iter(match=f"{prefix}*", count=SCAN_COUNT)]
        return sorted(key.decode()[len(prefix) :] for key in found)

    # -- element histories --------------------------------------------------------------

    async def save_history(self, query_id: str, writes: HistoryWrites) -> None:
        """Apply a history's pending writes, in one pipeline."""
        if not writes:
            return
        key = keys.element_history(self._app, query_id)
        async with self._client.pipeline(transaction=False) as pipe:
            if writes.deletes:
                pipe.hdel(key, *writes.deletes)
            if writes.puts:
                pipe.hset(key, mapping=writes.puts)  # type: ignore[arg-type]
            await pipe.execute()

    async def load_histories(
        self, owns: Callable[[str], bool] | None = None
    ) -> dict[str, ElementHistory]:
        """Every kept history, by query id, with its limits; with ``owns``, only the versions
        of the element ids it accepts (a store shard's)."""
        raw: Any = await self._client.hgetall(keys.history_limits(self._app))
        histories = {}
        for query_id, limits in raw.items():
            history = ElementHistory(HistoryLimits(**orjson.loads(limits)), durable=True)
            key = keys.element_history(self._app, query_id.decode())
            history.load_versions(
                [
                    (field.encode(), row)
                    async for field, row in self._scan(key)
                    if owns is None or owns(history_element(field.encode()))
                ]
            )
            histories[query_id.decode()] = history
        return histories

    async def save_history_limits(self, query_id: str, limits: HistoryLimits | None) -> None:
        """Record that ``query_id`` keeps a history with ``limits`` (None: it keeps none any
        more, and its history is deleted)."""
        if limits is None:
            await self._client.hdel(keys.history_limits(self._app), query_id)
            await self._client.delete(keys.element_history(self._app, query_id))
            return
        fields = {"max_versions": limits.max_versions, "retention_ms": limits.retention_ms}
        await self._client.hset(keys.history_limits(self._app), query_id, orjson.dumps(fields))

    # -- the fused actor's consumers -----------------------------------------------------

    async def save_fused_consumers(self, records: dict[str, bytes], replace: bool = False) -> None:
        """Write the records of the consumers the fused actor runs, by source id (``replace``:
        these are all of them, any other record is deleted)."""
        key = keys.fused_consumers(self._app)
        async with self._client.pipeline(transaction=True) as pipe:
            if replace:
                pipe.delete(key)
            if records:
                pipe.hset(key, mapping=records)  # type: ignore[arg-type]
            await pipe.execute()

    async def forget_fused_consumer(self, source_id: str) -> None:
        await self._client.hdel(keys.fused_consumers(self._app), source_id)

    async def load_fused_consumers(self) -> list[bytes]:
        raw: Any = await self._client.hgetall(keys.fused_consumers(self._app))
        return list(raw.values())

    # -- subscription table -------------------------------------------------------------

    async def save_table(self, records: dict[str, Any]) -> None:
        await self._client.hset(keys.subscriptions(self._app), "table", orjson.dumps(records))

    async def load_table(self) -> dict[str, Any] | None:
        raw = await self._client.hget(keys.subscriptions(self._app), "table")
        return None if raw is None else dict(orjson.loads(raw))

    async def save_subscriber(self, subscriber_id: str, record: bytes | None) -> None:
        """Write (None: delete) a live subscription's spec."""
        key = keys.subscribers(self._app)
        if record is None:
            await self._client.hdel(key, subscriber_id)
        else:
            await self._client.hset(key, subscriber_id, record)

    async def load_subscribers(self) -> list[bytes]:
        raw: Any = await self._client.hgetall(keys.subscribers(self._app))
        return list(raw.values())

    # -- function state -----------------------------------------------------------------

    async def save_function_state(
        self, query_id: str, changes: dict[str, bytes | None], query_digest: str
    ) -> None:
        """Write and delete changed function-state fields (and the query's digest), in one
        round trip."""
        key = keys.function_state(self._app, query_id)
        written: dict[str | bytes, bytes] = {QUERY_FIELD: query_digest.encode()}
        written.update((name, raw) for name, raw in changes.items() if raw is not None)
        deleted = [name for name, raw in changes.items() if raw is None]
        pipe = self._client.pipeline(transaction=False)
        pipe.hset(key, mapping=written)  # type: ignore[arg-type]
        if deleted:
            pipe.hdel(key, *deleted)
        await pipe.execute()

    async def load_function_state(self, query_id: str, query_digest: str) -> dict[str, bytes]:
        """The persisted function-state fields of ``query_id``: empty if there are none, or if
        they belong to another query text (those are deleted: the call sites they name are not
        this query's)."""
        key = keys.function_state(self._app, query_id)
        raw: Any = await self._client.hgetall(key)
        fields = {name.decode(): value for name, value in raw.items()}
        owner = fields.pop(QUERY_FIELD, None)
        if owner is not None and owner.decode() != query_digest:
            await self._client.delete(key)
            return {}
        return fields

    async def save_manual_clock(self, millis: int) -> None:
        await self._client.set(keys.manual_clock(self._app), millis)

    async def load_manual_clock(self) -> int | None:
        raw = await self._client.get(keys.manual_clock(self._app))
        return None if raw is None else int(raw)

    # -- query registrations ------------------------------------------------------------

    async def save_registration(self, query_id: str, record: bytes | None) -> None:
        """Write (None: delete) the registration of ``query_id``."""
        key = keys.query_registry(self._app)
        if record is None:
            await self._client.hdel(key, query_id)
        else:
            await self._client.hset(key, query_id, record)

    async def load_registrations(self) -> list[bytes]:
        return [record async for _query_id, record in self._scan(keys.query_registry(self._app))]

    async def save_shard_count(self, shards: int) -> None:
        await self._client.set(keys.shard_count(self._app), shards)

    async def load_shard_count(self) -> int | None:
        raw = await self._client.get(keys.shard_count(self._app))
        return None if raw is None else int(raw)

    # -- result sequences ---------------------------------------------------------------

    async def save_sequence(self, query_id: str, sequence: int) -> None:
        await self._client.set(keys.result_sequence(self._app, query_id), sequence)

    async def load_sequence(self, query_id: str) -> int:
        raw = await self._client.get(keys.result_sequence(self._app, query_id))
        return 0 if raw is None else int(raw)

    async def save_sequence_lease(self, query_id: str, ceiling: int) -> None:
        await self._client.set(keys.result_sequence_lease(self._app, query_id), ceiling)

    async def load_sequence_lease(self, query_id: str) -> int:
        raw = await self._client.get(keys.result_sequence_lease(self._app, query_id))
        return 0 if raw is None else int(raw)

    async def forget_query(self, query_id: str) -> None:
        """Delete a removed query's result sequence, lease and function state (its
        registration and element history go when it is unregistered)."""
        await self._client.delete(
            keys.result_sequence(self._app, query_id),
            keys.result_sequence_lease(self._app, query_id),
            keys.function_state(self._app, query_id),
        )


class SequenceKeeper:
    """A query's result numbering, durable without a Redis write per delivery.

    Contract: every sequence the query emits is at or under a *lease* ceiling already written
    to Redis (:meth:`reserve` raises it by :data:`SEQUENCE_LEASE` when the numbers run out, so
    one write per ``lease`` results sits in the delivery path); :meth:`start` numbers a
    restarted query above that ceiling, so sequences strictly increase across restarts (with a
    gap of at most ``lease`` after one). The *last* sequence is written in the background, at
    most once per :data:`LATEST_WRITE_INTERVAL_S` (:meth:`note`; exact once :meth:`flush`
    returned), not once per delivery: it only lets a restart resume without a gap.
    """

    def __init__(self, state: StateStore, query_id: str, lease: int = SEQUENCE_LEASE) -> None:
        self._state = state
        self._query_id = query_id
        self._lease = max(lease, 1)
        self._ceiling = 0
        self._latest = 0
        self._written = 0
        self._writer: asyncio.Task[None] | None = None
        self._hurry: asyncio.Event | None = None  # set by flush: write now, do not wait

    async def start(self) -> int:
        """The sequence to number on from: above everything a previous life emitted.

        Waits out a Redis outage (a query actor restarted while Redis is down must come up
        once it is back, not fail for good).
        """
        last, lease = await outlasting(self._load, REDIS_TRANSIENT, self._what("load"), logger)
        self._ceiling = max(last, lease)
        self._latest = self._written = last
        return self._ceiling

    async def _load(self) -> tuple[int, int]:
        state, query_id = self._state, self._query_id
        return await state.load_sequence(query_id), await state.load_sequence_lease(query_id)

    def _what(self, verb: str) -> str:
        return f"query {self._query_id}: {verb} result sequences"

    async def reserve(self, current: int, wanted: int) -> None:
        """Make ``current + 1 .. current + wanted`` usable: under the durable ceiling.

        Waits out a Redis outage (retrying with capped backoff) rather than failing: the
        caller holds a delivery whose deltas must not be dropped, and the shard's
        bounded deliveries in flight turn the wait into backpressure.
        """
        if current + wanted <= self._ceiling:
            return
        ceiling = current + max(wanted, self._lease)
        await outlasting(
            lambda: self._state.save_sequence_lease(self._query_id, ceiling),
            REDIS_TRANSIENT,
            self._what("lease"),
            logger,
            cap_s=_RETRY_CAP_S,
        )
        self._ceiling = ceiling

    def note(self, sequence: int) -> None:
        """Record ``sequence`` as the last emitted; written soon, off the caller's path."""
        self._latest = max(self._latest, sequence)
        if self._latest != self._written and (self._writer is None or self._writer.done()):
            self._hurry = asyncio.Event()
            self._writer = asyncio.get_running_loop().create_task(self._write_latest(self._hurry))

    async def flush(self, timeout_s: float = FLUSH_TIMEOUT_S) -> bool:
        """Return once the last noted sequence is written; False if Redis did not take it
        within ``timeout_s`` (the write goes on in the background)."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while self._writer is not None and not self._writer.done():
            if self._hurry is not None:
                self._hurry.set()
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._writer), remaining)
        return self._written == self._latest

    async def _write_latest(self, hurry: asyncio.Event) -> None:
        """Write the latest sequence, again and again while Redis is unavailable: a write
        lost to an outage would leave the stored sequence behind the result stream until the
        next result (``drasi-ray status`` after a Redis restart)."""
        with contextlib.suppress(TimeoutError):  # gather the notes of the next interval
            await asyncio.wait_for(hurry.wait(), LATEST_WRITE_INTERVAL_S)
        pause = LATEST_WRITE_INTERVAL_S
        while self._written != self._latest:
            value = self._latest
            try:
                await self._state.save_sequence(self._query_id, value)
            except REDIS_TRANSIENT as exc:  # the lease keeps restarts correct meanwhile
                logger.warning(
                    "query %s: could not save sequence %d (retrying): %s",
                    self._query_id, value, exc,
                )  # fmt: skip
                await asyncio.sleep(pause)
                pause = min(pause * 2, _RETRY_CAP_S)
                continue
            self._written = value
