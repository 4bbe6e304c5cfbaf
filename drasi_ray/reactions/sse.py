"""The SSE reaction: queries' current results and their changes as Server-Sent Events, and the
dashboard page that shows them (the actor shell is :mod:`drasi_ray.actors.reaction`).

:class:`SseServer` follows each watched query's result stream (:mod:`.feed`) into a
:class:`~drasi_ray.reactions.mirror.ResultMirror`. To start, and whenever the stream says the
query was bootstrapped again (its host restarted: rows may have changed without diffs) or a
result is missing or names a row it does not hold, it takes a *snapshot*: the stream's last
entry id first, then the query's rows and the sequence they are at (from the query host, taken
atomically), then the stream from that entry on, skipping the results the snapshot includes.
Nothing is missed and nothing applied twice.

HTTP (aiohttp, on ``host``:``port``; 127.0.0.1 unless configured):

- ``GET /events[?query=<id>...]``: an event stream. First ``queries`` (the list below), then
  per query a ``snapshot`` event (``{queryId, sequence, rows: [[key, row], ...],
  lastChangeMs}``), then ``diff`` events (``{queryId, sequence, timeMs, sourceTimeMs,
  changes: [{op: add|update|delete, key, row}]}``). Every event's ``id`` is the position the
  client has reached (per query its sequence, and the server's epoch): a client reconnecting
  with ``Last-Event-ID`` (browsers do) gets the changes after it from the last ``history``
  kept per query, or a fresh snapshot when they are not kept (or the server restarted), so
  there is never a gap. A client more than ``client_buffer`` events behind is cut off (it
  reconnects the same way): a slow browser never holds up the server or the queries.
- ``GET /api/queries``: ``[{id, columns, groupingKeys, aggregating, rows, sequence,
  lastChangeMs}]``.
- ``GET /`` and ``/static/...``: the dashboard page (``reactions/dashboard/``: plain HTML,
  CSS and JavaScript shipped in the package, no build step; every value is written as text,
  and the page's Content-Security-Policy allows no inline script).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import orjson
from aiohttp import web

from drasi_ray.model import encoding
from drasi_ray.model.backoff import Backoff
from drasi_ray.model.reaction_specs import SseReaction
from drasi_ray.model.results import ControlSignal, now_ms
from drasi_ray.reactions.base import end_tasks
from drasi_ray.reactions.feed import ResultEntry, ResultFeed, id_order
from drasi_ray.reactions.mirror import OutOfSync, ResultMirror, RowChange

logger = logging.getLogger("drasi_ray.reaction")

KEEPALIVE_S = 15.0
WRITE_EVENTS = 256
"""Events queued for a client that go out in one write, at most."""
RECONNECT_MS = 1000
PAGE = 500
BLOCK_MS = 1000
STATIC = {
    "dashboard.js": "text/javascript",
    "dashboard.css": "text/css",
}
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


@dataclass(frozen=True, slots=True)
class WatchedQuery:
    """What the server needs of one query: its result stream, its columns, and the query host
    that can give a snapshot of its rows (``host``: the host actor's name)."""

    query_id: str
    stream: str
    redis_url: str
    columns: tuple[str, ...]
    grouping_keys: tuple[str, ...]
    aggregating: bool
    host: str

    def describe(self, channel: Channel) -> dict[str, Any]:
        return {
            "id": self.query_id,
            "columns": list(self.columns),
            "groupingKeys": list(self.grouping_keys),
            "aggregating": self.aggregating,
            "rows": len(channel.mirror.rows),
            "sequence": channel.mirror.sequence,
            "lastChangeMs": channel.last_change_ms,
        }


Snapshotter = Callable[[WatchedQuery], Awaitable[tuple[list[dict[str, Any]], int]]]
"""Gives a query's rows and the sequence of the last result they include (from its host)."""


@dataclass(slots=True)
class Channel:
    """One query on the server: its mirror, the changes kept for resuming, its position in
    the result stream."""

    query: WatchedQuery
    mirror: ResultMirror
    history: collections.deque[tuple[int, bytes]]
    floor: int = 0
    """Every result after this sequence is in :attr:`history`."""
    position: str = "0-0"
    last_change_ms: int | None = None
    snapshots: int = 0
    synced: asyncio.Event = field(default_factory=asyncio.Event)

    def can_resume(self, sequence: int) -> bool:
        return self.synced.is_set() and self.floor <= sequence <= self.mirror.sequence

    def events_after(self, sequence: int) -> list[tuple[int, bytes]]:
        return [(seq, data) for seq, data in self.history if seq > sequence]


@dataclass(eq=False)
class Client:
    """One connected event stream: what it asked for and how far it got."""

    queries: set[str] | None
    queue: asyncio.Queue[bytes]
    sent: dict[str, int] = field(default_factory=dict)
    cut_off: bool = False

    def wants(self, query_id: str) -> bool:
        return self.queries is None or query_id in self.queries


@dataclass(frozen=True, slots=True)
class SseReport:
    """The server's status (``DrasiRay.status().reactions[id]``)."""

    reaction_id: str
    kind: str
    state: str
    url: str | None
    clients: int
    cut_off: int
    last_error: str | None
    queries: dict[str, dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def sse_event(kind: str, event_id: str | None, data: Any) -> bytes:
    """One event in the text/event-stream format."""
    head = f"event: {kind}\n" + ("" if event_id is None else f"id: {event_id}\n")
    return head.encode() + b"data: " + encoding.dumps(data) + b"\n\n"


def parse_event_id(text: str | None) -> tuple[str, dict[str, int]]:
    """``(epoch, {query: sequence})`` from a ``Last-Event-ID``; empty when unreadable."""
    if not text:
        return "", {}
    try:
        value = orjson.loads(text)
        epoch, sequences = value["e"], value["s"]
        if isinstance(epoch, str) and isinstance(sequences, dict):
            return epoch, {str(k): int(v) for k, v in sequences.items()}
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        pass
    return "", {}


class SseServer:
    """The SSE reaction (module docstring). Create it in the event loop it runs in."""

    def __init__(self, spec: SseReaction, snapshot: Snapshotter) -> None:
        self.spec = spec
        self._snapshot = snapshot
        self.epoch = uuid.uuid4().hex[:12]
        self.channels: dict[str, Channel] = {}
        self._feeds: dict[str, ResultFeed] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._clients: set[Client] = set()
        self._cut_off = 0
        self._runner: web.AppRunner | None = None
        self.url: str | None = None
        self.last_error: str | None = None
        self._stopping = False

    # -- the HTTP server ------------------------------------------------------------------

    async def start(self) -> str:
        """Listen on the configured address; the base URL. Raises OSError when it cannot."""
        app = web.Application()
        app.router.add_get("/events", self._events)
        app.router.add_get("/api/queries", self._queries)
        if self.spec.dashboard:
            app.router.add_get("/", self._page)
            app.router.add_get("/static/{name}", self._static)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.spec.host, self.spec.port, reuse_address=True)
        try:
            await site.start()
        except OSError:
            await self._runner.cleanup()
            self._runner = None
            raise
        server = site._server
        assert server is not None
        port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        host = self.spec.host if ":" not in self.spec.host else f"[{self.spec.host}]"
        self.url = f"http://{host}:{port}/"
        return self.url

    async def _page(self, _request: web.Request) -> web.Response:
        text = _resource("index.html")
        return web.Response(text=text, content_type="text/html", headers=PAGE_HEADERS)

    async def _static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in STATIC:
            raise web.HTTPNotFound(text=f"no such file: {name}")
        return web.Response(text=_resource(name), content_type=STATIC[name], headers=PAGE_HEADERS)

    async def _queries(self, _request: web.Request) -> web.Response:
        return web.json_response(self._query_list(None), dumps=_json_text)

    def _query_list(self, wanted: set[str] | None) -> list[dict[str, Any]]:
        return [
            channel.query.describe(channel)
            for query_id, channel in self.channels.items()
            if wanted is None or query_id in wanted
        ]

    async def _events(self, request: web.Request) -> web.StreamResponse:
        asked = request.query.getall("query", [])
        unknown = [query_id for query_id in asked if query_id not in self.channels]
        if unknown:
            raise web.HTTPNotFound(text=f"unknown query: {', '.join(unknown)}")
        client = Client(set(asked) or None, asyncio.Queue(self.spec.client_buffer))
        last_id = request.headers.get("Last-Event-ID") or request.query.get("lastEventId")
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            }
        )
        await response.prepare(request)
        await response.write(f"retry: {RECONNECT_MS}\n\n".encode())
        self._join(client, last_id)
        try:
            await self._stream_to(client, response)
        finally:
            self._clients.discard(client)
        return response

    def _join(self, client: Client, last_id: str | None) -> None:
        """Register ``client`` and queue what it lacks, without yielding to the event loop
        (so no change is broadcast in between)."""
        epoch, reached = parse_event_id(last_id)
        self._clients.add(client)
        self._offer(client, sse_event("queries", None, self._query_list(client.queries)))
        for query_id, channel in self.channels.items():
            if not client.wants(query_id) or not channel.synced.is_set():
                continue
            sequence = reached.get(query_id)
            if epoch == self.epoch and sequence is not None and channel.can_resume(sequence):
                client.sent[query_id] = sequence
                for later, data in channel.events_after(sequence):
                    self._offer_diff(client, query_id, later, data)
            else:
                self._offer_snapshot(client, channel)

    async def _stream_to(self, client: Client, response: web.StreamResponse) -> None:
        """Write the client's events as they come: what queued meanwhile goes in one write
        (one chunk, one send) rather than one each."""
        while not client.cut_off:
            try:
                event = await asyncio.wait_for(client.queue.get(), KEEPALIVE_S)
            except asyncio.TimeoutError:
                event = b": keepalive\n\n"
            chunk = [event]
            while event and not client.queue.empty() and len(chunk) < WRITE_EVENTS:
                event = client.queue.get_nowait()
                chunk.append(event)
            if not event:  # cut off or stopping: what is before it still goes
                await response.write(b"".join(chunk))
                break
            await response.write(b"".join(chunk))

    # -- queueing events for clients -------------------------------------------------------

    def _event_id(self, client: Client) -> str:
        return encoding.dumps({"e": self.epoch, "s": client.sent}).decode()

    def _offer(self, client: Client, event: bytes) -> None:
        if client.cut_off:
            return
        try:
            client.queue.put_nowait(event)
        except asyncio.QueueFull:
            client.cut_off = True
            self._cut_off += 1
            logger.warning(
                "sse %s: a client fell %d events behind: cut off",
                self.spec.id,
                self.spec.client_buffer,
            )
            with contextlib.suppress(asyncio.QueueEmpty):
                client.queue.get_nowait()
            client.queue.put_nowait(b"")  # wakes its writer, which then ends the response

    def _offer_diff(self, client: Client, query_id: str, sequence: int, data: bytes) -> None:
        """Queue a diff event whose data is already encoded (as kept in the history)."""
        client.sent[query_id] = sequence
        head = f"event: diff\nid: {self._event_id(client)}\n".encode()
        self._offer(client, head + b"data: " + data + b"\n\n")

    def _offer_snapshot(self, client: Client, channel: Channel) -> None:
        query_id = channel.query.query_id
        client.sent[query_id] = channel.mirror.sequence
        data = {
            "queryId": query_id,
            "sequence": channel.mirror.sequence,
            "rows": channel.mirror.snapshot(),
            "lastChangeMs": channel.last_change_ms,
        }
        self._offer(client, sse_event("snapshot", self._event_id(client), data))

    def _broadcast_diff(self, channel: Channel, sequence: int, data: bytes) -> None:
        query_id = channel.query.query_id
        for client in list(self._clients):
            if client.wants(query_id):
                self._offer_diff(client, query_id, sequence, data)

    def _broadcast_snapshot(self, channel: Channel) -> None:
        for client in list(self._clients):
            if client.wants(channel.query.query_id):
                self._offer_snapshot(client, channel)

    # -- following the queries -----------------------------------------------------------

    def watch(self, query: WatchedQuery) -> None:
        """Serve ``query`` from now on (again: nothing happens)."""
        if query.query_id in self.channels:
            return
        mirror = ResultMirror(query.grouping_keys if query.aggregating else None)
        channel = Channel(query, mirror, collections.deque(maxlen=self.spec.history))
        self.channels[query.query_id] = channel
        if query.redis_url not in self._feeds:
            self._feeds[query.redis_url] = ResultFeed(query.redis_url)
        task = asyncio.get_running_loop().create_task(self._follow(channel))
        self._tasks[query.query_id] = task
        for client in list(self._clients):
            if client.wants(query.query_id):
                self._offer(client, sse_event("queries", None, self._query_list(client.queries)))

    async def _follow(self, channel: Channel) -> None:
        """Follow one query's stream for ever; failures (Redis, the host restarting) are
        waited out with backoff, then the query is snapshotted again."""
        backoff = Backoff()
        while not self._stopping:
            try:
                await self._follow_once(channel, backoff)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.last_error = f"{channel.query.query_id}: {type(exc).__name__}: {exc}"
                logger.warning("sse %s: %s; snapshot again", self.spec.id, self.last_error)
                await backoff.wait()

    async def _follow_once(self, channel: Channel, backoff: Backoff) -> None:
        query = channel.query
        feed = self._feeds[query.redis_url]
        await self._sync(channel, await feed.last_id(query.stream))
        backoff.reset()
        while not self._stopping:
            entries = await feed.read_after(
                query.stream, query.query_id, channel.position, PAGE, BLOCK_MS
            )
            for entry in entries:
                await self._take(channel, entry)

    async def _sync(self, channel: Channel, position: str) -> None:
        """Take a snapshot that the stream after ``position`` continues."""
        rows, sequence = await self._snapshot(channel.query)
        channel.mirror.reset(rows, sequence)
        channel.history.clear()
        channel.floor = sequence
        channel.position = position
        channel.snapshots += 1
        if channel.last_change_ms is None:
            channel.last_change_ms = now_ms() if rows else None
        channel.synced.set()
        self._broadcast_snapshot(channel)

    async def _take(self, channel: Channel, entry: ResultEntry) -> None:
        mirror = channel.mirror
        if entry.error is not None:
            self.last_error = f"{entry.query_id}: {entry.error}"
            channel.position = entry.entry_id
            return
        bootstrapped = entry.control == ControlSignal.BOOTSTRAP_COMPLETED.value
        if bootstrapped and entry.sequence >= mirror.sequence:
            await self._sync(channel, entry.entry_id)  # rows may have changed without diffs
            return
        if entry.control is not None or entry.sequence <= mirror.sequence:
            channel.position = entry.entry_id
            return
        if entry.sequence != mirror.sequence + 1:  # a result is missing: start over
            await self._sync(channel, entry.entry_id)
            return
        try:
            changes = mirror.apply(entry.sequence, entry.diffs)
        except OutOfSync as exc:
            self.last_error = f"{entry.query_id}: {exc}"
            await self._sync(channel, entry.entry_id)
            return
        channel.position = entry.entry_id
        channel.last_change_ms = now_ms()
        data = self._diff_data(channel, entry, changes)
        history = channel.history
        if len(history) == history.maxlen:  # full (or keeping nothing): the oldest goes
            channel.floor = history[0][0] if history else entry.sequence
        history.append((entry.sequence, data))
        self._broadcast_diff(channel, entry.sequence, data)

    def _diff_data(
        self, channel: Channel, entry: ResultEntry, changes: Iterable[RowChange]
    ) -> bytes:
        return encoding.dumps(
            {
                "queryId": entry.query_id,
                "sequence": entry.sequence,
                "timeMs": channel.last_change_ms,
                "sourceTimeMs": entry.source_time_ms,
                "changes": [change.as_dict() for change in changes],
            }
        )

    # -- barriers, status, stop ------------------------------------------------------------

    async def flush(self, timeout_s: float) -> bool:
        """Wait until every query's mirror took in what its stream holds now."""
        deadline = time.monotonic() + timeout_s
        targets = {}
        for query_id, channel in self.channels.items():
            feed = self._feeds[channel.query.redis_url]
            targets[query_id] = id_order(await feed.last_id(channel.query.stream))
        while not all(self._reached(query_id, target) for query_id, target in targets.items()):
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    def _reached(self, query_id: str, target: tuple[int, int]) -> bool:
        channel = self.channels[query_id]
        return channel.synced.is_set() and id_order(channel.position) >= target

    def report(self) -> SseReport:
        queries = {
            query_id: {
                "state": "running" if channel.synced.is_set() else "starting",
                "sequence": channel.mirror.sequence,
                "rows": len(channel.mirror.rows),
                "snapshots": channel.snapshots,
                "last_change_ms": channel.last_change_ms,
            }
            for query_id, channel in self.channels.items()
        }
        return SseReport(
            reaction_id=self.spec.id,
            kind=self.spec.kind,
            state="running" if self.url else "starting",
            url=self.url,
            clients=len(self._clients),
            cut_off=self._cut_off,
            last_error=self.last_error,
            queries=queries,
        )

    async def stop(self) -> None:
        self._stopping = True
        await end_tasks(list(self._tasks.values()), BLOCK_MS / 1000 + 0.5)
        for client in list(self._clients):
            client.cut_off = True
            with contextlib.suppress(asyncio.QueueFull):
                client.queue.put_nowait(b"")
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        for feed in self._feeds.values():
            await feed.close()


def _resource(name: str) -> str:
    return resources.files("drasi_ray.reactions").joinpath("dashboard", name).read_text("utf-8")


def _json_text(value: Any) -> str:
    return encoding.dumps(value).decode()
