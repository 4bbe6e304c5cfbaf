"""Reading a query's result stream (``<queryId>-results``) back: what the app's reactions follow.

The platform reaction writes each result of a query as one entry, a CloudEvent in Drasi's
format (docs/semantics.md §4), in sequence order. A reaction that runs apart from the query
(HTTP, SSE) follows that stream from a position (an entry id) of its own, so it never slows
the query and a restart of it goes on where it stopped. :func:`decode_entry` turns an entry
into a :class:`ResultEntry`, keeping a malformed one (with the reason) for the reader to
dead-letter rather than stop on; :class:`ResultFeed` reads entries over ``redis.asyncio``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import redis.asyncio as aioredis

from drasi_ray.model.results import diffs_from_platform_event

FIELD = b"data"
START = "0-0"
"""The position before every entry."""


@dataclass(frozen=True, slots=True)
class ResultEntry:
    """One entry of a result stream: a change (``diffs`` in the order Drasi's format lists
    them: added, updated, deleted) or a control signal (``control`` its kind). ``error`` says
    why an entry could not be read (then the rest is empty)."""

    entry_id: str
    query_id: str
    sequence: int
    source_time_ms: int = 0
    control: str | None = None
    diffs: tuple[dict[str, Any], ...] = ()
    error: str | None = None
    raw: bytes = b""


def decode_entry(entry_id: str, fields: Mapping[bytes, bytes], query_id: str) -> ResultEntry:
    """The entry as a :class:`ResultEntry`; never raises (a malformed one carries ``error``)."""
    raw = fields.get(FIELD, b"")
    try:
        data = orjson.loads(raw)["data"]
        sequence = data["sequence"]
        if not isinstance(sequence, int):
            raise TypeError("sequence is not an integer")
        source_time = int(data.get("sourceTimeMs") or 0)
        if data.get("kind") == "control":
            control = str(data["controlSignal"]["kind"])
            return ResultEntry(entry_id, query_id, sequence, source_time, control=control)
        diffs = tuple(diffs_from_platform_event({"data": data}))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        reason = f"unreadable result entry ({type(exc).__name__}: {exc})"
        return ResultEntry(entry_id, query_id, 0, error=reason, raw=bytes(raw))
    return ResultEntry(entry_id, query_id, sequence, source_time, diffs=diffs)


def id_order(entry_id: str) -> tuple[int, int]:
    """An entry id as a comparable pair (``1700000000000-3`` -> (1700000000000, 3))."""
    millis, _, number = entry_id.partition("-")
    return int(millis), int(number or 0)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class ResultFeed:
    """Reads result streams of one Redis; the client is made on first use (in the actor)."""

    def __init__(self, redis_url: str) -> None:
        self._url = redis_url
        self._client: aioredis.Redis | None = None

    @property
    def client(self) -> aioredis.Redis:
        if self._client is None:
            self._client = aioredis.Redis.from_url(self._url, decode_responses=False)
        return self._client

    async def last(self, stream: str, query_id: str) -> ResultEntry | None:
        """The stream's newest entry (None: the stream is empty or absent)."""
        reply: Any = await self.client.xrevrange(stream, count=1)
        if not reply:
            return None
        entry_id, fields = reply[0]
        return decode_entry(_text(entry_id), fields, query_id)

    async def last_id(self, stream: str) -> str:
        """The id of the stream's newest entry, :data:`START` if there is none."""
        reply: Any = await self.client.xrevrange(stream, count=1)
        return _text(reply[0][0]) if reply else START

    async def read_after(
        self, stream: str, query_id: str, position: str, count: int, block_ms: int | None
    ) -> list[ResultEntry]:
        """Up to ``count`` entries after ``position``, oldest first; waits up to ``block_ms``
        for one when there are none (None: does not wait)."""
        reply: Any = await self.client.xread({stream: position}, count=count, block=block_ms)
        return [
            decode_entry(_text(entry_id), fields, query_id)
            for _stream, items in reply or ()
            for entry_id, fields in items
        ]

    async def read_at(self, stream: str, entry_id: str, query_id: str) -> ResultEntry | None:
        """The entry ``entry_id`` itself (None: trimmed away)."""
        reply: Any = await self.client.xrange(stream, min=entry_id, max=entry_id, count=1)
        if not reply:
            return None
        return decode_entry(_text(reply[0][0]), reply[0][1], query_id)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def kind_of(diff: Mapping[str, Any]) -> tuple[str, Any, Any]:
    """``(change kind, row before, row after)`` of a diff: ``added`` (no before), ``updated``
    (an UPDATE, or an aggregation diff, whose before may be null) or ``deleted`` (no after)."""
    kind = diff["type"]
    if kind == "ADD":
        return "added", None, diff["data"]
    if kind == "DELETE":
        return "deleted", diff["data"], None
    return "updated", diff.get("before"), diff["after"]
