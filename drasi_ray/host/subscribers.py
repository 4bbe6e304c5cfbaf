"""A subscriber's buffer of query results, inside the query actor's event loop.

A result is in the buffer before the query acknowledges the change to its store shard, so once
``wait_until_idle()`` returns, a subscription's ``drain()`` sees every result of every change
published before it. The user's handle that pulls from it is
:class:`drasi_ray.actors.subscription.Subscription`.

Dispatch modes (Drasi's): CHANNEL blocks the query when the buffer is full (backpressure that
travels back to the consumers: nothing is lost); BROADCAST never blocks and drops the oldest
buffered result, counting the drops.
"""

from __future__ import annotations

import asyncio
import collections

from drasi_ray.model.config import DispatchMode
from drasi_ray.model.results import Delivered


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

    def items(self) -> tuple[Delivered, ...]:
        """The results waiting, oldest first (a copy)."""
        return tuple(self._items)

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
                    async with asyncio.timeout(timeout_s):  # no task, unlike wait_for
                        await self._changed.wait_for(lambda: bool(self._items) or self.closed)
                except TimeoutError:
                    return []
            count = len(self._items) if max_items is None else min(max_items, len(self._items))
            taken = [self._items.popleft() for _ in range(count)]
            self._changed.notify_all()
            return taken

    async def close(self) -> None:
        async with self._changed:
            self.closed = True
            self._changed.notify_all()
