"""Subscriptions to a query's results.

The buffer lives in the query actor (:class:`SubscriberBuffer`); the user holds a
:class:`Subscription`, a handle that pulls from it with Ray calls. A result is in the buffer
before the query acknowledges the change to the coordinator, so once ``wait_until_idle()``
returns, ``drain()`` sees every result of every change published before it.

Dispatch modes (Drasi's): CHANNEL blocks the query when the buffer is full (backpressure that
travels back to the consumers: nothing is lost); BROADCAST never blocks and drops the oldest
buffered result, counting the drops.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

import ray

from drasi_ray.actors.line import SyncLine
from drasi_ray.config import DispatchMode
from drasi_ray.results import ControlResult, QueryResult

Delivered = QueryResult | ControlResult


class SubscriberBuffer:
    """A bounded FIFO of results for one subscriber, inside the query actor's event loop."""

    def __init__(self, capacity: int, mode: DispatchMode) -> None:
        self.capacity = capacity
        self.mode = mode
        self.dropped = 0
        self.closed = False
        self._items: collections.deque[Delivered] = collections.deque()
        self._changed = asyncio.Condition()

    def __len__(self) -> int:
        return len(self._items)

    async def put_many(self, items: list[Delivered]) -> None:
        """Append ``items`` in order: in CHANNEL mode wait for room (chunk by chunk), in
        BROADCAST mode keep the newest ``capacity`` and count the dropped ones."""
        position = 0
        async with self._changed:
            while position < len(items):
                if self.mode is DispatchMode.CHANNEL:
                    await self._changed.wait_for(
                        lambda: len(self._items) < self.capacity or self.closed
                    )
                    if self.closed:
                        return
                    room = self.capacity - len(self._items)
                else:
                    room = len(items) - position
                chunk = items[position : position + room]
                position += len(chunk)
                self._items.extend(chunk)
                overflow = len(self._items) - self.capacity
                if overflow > 0:  # broadcast: keep the newest, count what was dropped
                    for _ in range(overflow):
                        self._items.popleft()
                    self.dropped += overflow
                self._changed.notify_all()

    async def take(self, max_items: int | None, timeout_s: float) -> list[Delivered]:
        """Remove and return up to ``max_items`` results, waiting up to ``timeout_s`` for one."""
        async with self._changed:
            if not self._items and timeout_s > 0 and not self.closed:
                try:
                    await asyncio.wait_for(
                        self._changed.wait_for(lambda: bool(self._items) or self.closed),
                        timeout_s,
                    )
                except asyncio.TimeoutError:
                    return []
            count = len(self._items) if max_items is None else min(max_items, len(self._items))
            taken = [self._items.popleft() for _ in range(count)]
            self._changed.notify_all()
            return taken

    async def close(self) -> None:
        async with self._changed:
            self.closed = True
            self._changed.notify_all()


class Subscription:
    """The user's handle on a query's result feed.

    ``drain()`` returns what has arrived so far without waiting; iterating blocks for the next
    result and ends when the subscription or the query is closed. Control signals (bootstrap
    started/completed) are delivered only if asked for with ``include_control=True``.
    """

    def __init__(
        self, query_id: str, actor: Any, subscriber_id: str, include_control: bool = False
    ) -> None:
        self.query_id = query_id
        self._actor = actor
        self._line = SyncLine(actor)
        self._subscriber_id = subscriber_id
        self._include_control = include_control
        self._closed = False

    def _keep(self, items: Iterable[Delivered]) -> list[Any]:
        if self._include_control:
            return list(items)
        return [item for item in items if isinstance(item, QueryResult)]

    def drain(self) -> list[QueryResult]:
        """Every result received since the last call, without blocking for new ones."""
        items = self._line.call("take", self._subscriber_id, None, 0.0)
        return self._keep(items)

    def next(self, timeout: float = 1.0) -> list[QueryResult]:
        """Wait up to ``timeout`` seconds for results; returns what arrived (maybe nothing)."""
        items = self._line.call("take", self._subscriber_id, None, timeout, call_timeout_s=timeout)
        return self._keep(items)

    def __iter__(self) -> Iterator[QueryResult]:
        while not self._closed:
            try:
                batch = self.next(timeout=1.0)
            except ray.exceptions.RayActorError:
                return
            yield from batch

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._line.close()
        with contextlib.suppress(ray.exceptions.RayActorError):
            ray.get(self._actor.unsubscribe.remote(self._subscriber_id))

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
