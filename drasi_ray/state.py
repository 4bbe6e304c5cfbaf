"""Durable state in Redis: what must survive a coordinator or query actor restart.

What lives where (key names from :mod:`drasi_ray.streams.keys`):

- ``drasi:<app>:store:<source_id>`` (hash): element id -> the element's versioned record
  (:meth:`ElementStore.snapshot_element`, orjson). Written in one pipelined ``HSET`` per batch,
  before the coordinator confirms the batch, so an acked entry is always in the durable store.
- ``drasi:<app>:subscriptions`` (hash, field ``table``): the subscription table as JSON,
  rewritten whenever it changes (rare: registrations and control events).
- ``drasi:<app>:seq:<query_id>`` (string): the last result sequence a query emitted, so a
  restarted query actor keeps its sequence strictly increasing.

Only JSON is ever stored: never pickle.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import redis.asyncio as aioredis

from drasi_ray.store import ElementStore
from drasi_ray.streams import keys

SCAN_COUNT = 1000


class StateStore:
    """Async access to one app's durable state. Create it inside the actor that uses it."""

    def __init__(self, client: aioredis.Redis, app_id: str) -> None:
        self._client = client
        self._app = app_id

    @classmethod
    def from_url(cls, url: str, app_id: str) -> StateStore:
        return cls(aioredis.Redis.from_url(url, decode_responses=False), app_id)

    async def close(self) -> None:
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
        batch, which will be retried)."""
        pipe = self._client.pipeline(transaction=False)
        if ids:
            mapping: dict[Any, Any] = {
                element_id: store.snapshot_element(element_id) for element_id in ids
            }
            pipe.hset(keys.element_store(self._app, source_id), mapping=mapping)
        for name, amount in (counters or {}).items():
            if amount:
                pipe.hincrby(keys.coordinator_stats(self._app, source_id), name, amount)
        if not pipe.command_stack:
            return
        try:
            await pipe.execute()
        except BaseException:
            store.mark_dirty(ids)
            raise

    async def load_counters(self, source_id: str) -> dict[str, int]:
        raw: Any = await self._client.hgetall(keys.coordinator_stats(self._app, source_id))
        return {key.decode(): int(value) for key, value in raw.items()}

    async def load_store(self, source_id: str) -> ElementStore:
        store = ElementStore()
        async for element_id, record in self._scan(keys.element_store(self._app, source_id)):
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

    # -- subscription table -------------------------------------------------------------

    async def save_table(self, records: dict[str, Any]) -> None:
        await self._client.hset(keys.subscriptions(self._app), "table", orjson.dumps(records))

    async def load_table(self) -> dict[str, Any] | None:
        raw = await self._client.hget(keys.subscriptions(self._app), "table")
        return None if raw is None else dict(orjson.loads(raw))

    # -- result sequences ---------------------------------------------------------------

    async def save_sequence(self, query_id: str, sequence: int) -> None:
        await self._client.set(keys.result_sequence(self._app, query_id), sequence)

    async def load_sequence(self, query_id: str) -> int:
        raw = await self._client.get(keys.result_sequence(self._app, query_id))
        return 0 if raw is None else int(raw)
