"""A real HTTP server that records what it receives: the HTTP reaction's tests and benchmark.

:class:`HttpSink` runs an aiohttp server on 127.0.0.1 in a thread of its own (its own event
loop), so a test drives it from plain synchronous code. It records every request, answers
200 by default, and can be told to misbehave for the next requests: answer with a status
(``fail(3, 500)``), hold the answer for a while (``stall(1, 2.0)``: the client times out), or
go away altogether (:meth:`HttpSink.go_away`: the port refuses connections until
:meth:`HttpSink.come_back`, on the same port).

:meth:`HttpSink.first_receipts` is what an idempotent receiver would keep: each
``Idempotency-Key`` once, in the order first received.
"""

from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from drasi_ray.testing.waiting import wait_until

KEY_HEADER = "Idempotency-Key"


@dataclass(frozen=True, slots=True)
class Received:
    """One request as the sink got it (``status``: what it answered)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    status: int

    @property
    def key(self) -> str | None:
        return self.headers.get(KEY_HEADER)

    def json(self) -> Any:
        return orjson.loads(self.body)


class HttpSink:
    """A recording HTTP server (module docstring). Use as a context manager."""

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self._lock = threading.Lock()
        self._received: list[Received] = []
        self._plan: collections.deque[tuple[str, float]] = collections.deque()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self.on_request: Callable[[Received], None] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> HttpSink:
        self._thread.start()
        self._call(self._start())
        return self

    def __exit__(self, *_exc: object) -> None:
        self._call(self._stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def _call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=30)

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.1)
        await self._runner.setup()
        self._site = web.TCPSite(self._runner, "127.0.0.1", self.port, reuse_address=True)
        await self._site.start()
        server = self._site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            self._site = None

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        with self._lock:
            action, value = self._plan.popleft() if self._plan else ("status", 200)
        if action == "stall":
            await asyncio.sleep(value)
            status = 200
        else:
            status = int(value)
        received = Received(request.method, request.path_qs, dict(request.headers), body, status)
        with self._lock:
            self._received.append(received)
        if self.on_request is not None:
            self.on_request(received)
        return web.Response(status=status, text="ok" if status < 300 else "sink says no")

    # -- misbehaving ----------------------------------------------------------------------

    def fail(self, count: int, status: int = 500) -> None:
        """Answer the next ``count`` requests with ``status``."""
        with self._lock:
            self._plan.extend([("status", status)] * count)

    def stall(self, count: int, seconds: float) -> None:
        """Hold the answer to the next ``count`` requests for ``seconds``."""
        with self._lock:
            self._plan.extend([("stall", seconds)] * count)

    def go_away(self) -> None:
        """Close the server: connections to its port are refused until :meth:`come_back`."""
        self._call(self._stop())

    def come_back(self) -> None:
        """Listen again, on the same port."""
        self._call(self._start())

    # -- what was received ----------------------------------------------------------------

    @property
    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    def delivered(self) -> list[Received]:
        """The requests answered 2xx, in order."""
        return [item for item in self.received if item.status < 300]

    def first_receipts(self) -> list[Received]:
        """Each idempotency key's first 2xx request, in the order received."""
        seen: set[str | None] = set()
        kept = []
        for item in self.delivered():
            if item.key not in seen:
                seen.add(item.key)
                kept.append(item)
        return kept

    def wait_for(self, count: int, timeout: float = 30.0) -> list[Received]:
        """Wait until ``count`` distinct keys were delivered; return their first receipts."""
        wait_until(
            lambda: len(self.first_receipts()) >= count,
            timeout_s=timeout,
            what=f"{count} distinct deliveries to the sink",
        )
        return self.first_receipts()

    def clear(self) -> None:
        with self._lock:
            self._received.clear()
            self._plan.clear()
