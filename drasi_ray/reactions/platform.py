"""The Drasi platform reaction: CloudEvents on the Redis stream ``<queryId>-results``.

Every entry has one field, ``data``, holding a CloudEvent exactly as Drasi's platform reaction
writes it (:func:`~drasi_ray.model.results.platform_change_event` for results,
:func:`~drasi_ray.model.results.platform_control_event` for control signals), so existing Drasi
reactions can read the stream unchanged.

One batch = one ``MULTI``/``EXEC`` pipeline (one round trip, all or nothing). A retry after an
ambiguous failure first looks at the stream's last entry: if it is the batch's last CloudEvent,
the batch was written and is not written again. Change events whose sequence is not above the
last one written are skipped, so sequences in the stream strictly increase; the query actor
numbers above :meth:`PlatformStreamReaction.last_sequence` after a restart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import redis.asyncio as aioredis
from redis import exceptions as rexc

from drasi_ray.model import encoding, keys, urls
from drasi_ray.model.errors import StreamError
from drasi_ray.model.reaction_specs import PlatformReaction
from drasi_ray.model.results import (
    Delivered,
    QueryResult,
    platform_change_event,
    platform_control_event,
)
from drasi_ray.reactions.base import Reaction
from drasi_ray.streams import redis_errors

FIELD = "data"


@dataclass(frozen=True, slots=True)
class _Event:
    """One rendered CloudEvent: its id, its result sequence (changes only), its JSON."""

    event_id: str
    sequence: int | None
    payload: bytes


class PlatformStreamReaction(Reaction[list[_Event]]):
    """Writes a query's results to its result stream in Drasi's platform format."""

    kind = "platform"

    def __init__(
        self,
        query_id: str,
        spec: PlatformReaction,
        redis_url: str,
        grouping_keys: Sequence[str] = (),
    ) -> None:
        self.stream = spec.stream or keys.result_stream(query_id)
        self._spec = spec
        self._url = redis_url
        self._grouping_keys = tuple(grouping_keys)
        self._client: aioredis.Redis | None = None
        self._written: int | None = None  # last change sequence in the stream

    def _connect(self) -> aioredis.Redis:
        if self._client is None:
            self._client = aioredis.Redis.from_url(self._url, decode_responses=False)
        return self._client

    async def open(self) -> None:
        if self._written is None:
            self._written = await self.last_sequence() or 0

    def render(self, items: Sequence[Delivered]) -> list[_Event]:
        events: list[_Event] = []
        for item in items:
            if isinstance(item, QueryResult):
                event = platform_change_event(item, self._grouping_keys)
                sequence: int | None = item.sequence
            else:
                event = platform_control_event(item)
                sequence = None
            events.append(_Event(event["id"], sequence, encoding.dumps(event)))
        return events

    async def write(self, rendered: list[_Event], retry: bool) -> None:
        if not rendered:
            return
        try:
            if retry and await self._last_event_id() == rendered[-1].event_id:
                self._note_written(rendered)
                return
            await self._append(rendered)
        except (rexc.RedisError, OSError) as exc:
            raise self._error(exc) from exc

    async def _append(self, rendered: list[_Event]) -> None:
        floor = self._written or 0
        pipe = self._connect().pipeline(transaction=True)
        queued = 0
        for event in rendered:
            if event.sequence is not None:
                if event.sequence <= floor:
                    continue  # already in the stream: keep sequences strictly increasing
                floor = event.sequence
            pipe.xadd(
                self.stream, {FIELD: event.payload}, maxlen=self._spec.maxlen, approximate=True
            )
            queued += 1
        if queued:
            await pipe.execute()
        self._note_written(rendered)

    def _note_written(self, rendered: list[_Event]) -> None:
        sequences = [event.sequence for event in rendered if event.sequence is not None]
        if sequences:
            self._written = max(self._written or 0, *sequences)

    async def _last_entry(self) -> dict[str, Any] | None:
        reply: Any = await self._connect().xrevrange(self.stream, count=1)
        if not reply:
            return None
        fields = reply[0][1]
        raw = fields.get(FIELD.encode())
        if raw is None:
            return None
        try:
            event: dict[str, Any] = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
        return event

    async def _last_event_id(self) -> str | None:
        event = await self._last_entry()
        return None if event is None else str(event.get("id"))

    async def last_sequence(self) -> int | None:
        """The ``sequence`` of the stream's last CloudEvent (controls carry the last one)."""
        try:
            event = await self._last_entry()
        except (rexc.RedisError, OSError) as exc:
            raise self._error(exc) from exc
        if event is None:
            return None
        sequence = event.get("data", {}).get("sequence")
        return sequence if isinstance(sequence, int) else None

    def _error(self, exc: BaseException) -> StreamError:
        return redis_errors.translate(
            exc,
            f"XADD to {self.stream!r}",
            urls.redact_url(self._url),
            urls.url_secrets(self._url),
        )

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
