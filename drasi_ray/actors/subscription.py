"""Subscriptions to a query's results: the user's handle on a buffer inside its query host.

The buffer lives with the query in its host
(:class:`~drasi_ray.host.subscribers.SubscriberBuffer`); the user holds a
:class:`Subscription`, a handle that pulls from it over a line (Ray calls when the line is
down). Once ``wait_until_idle()`` returns, ``drain()`` sees every result of every change
published before it.

The coordinator keeps each subscription's spec, so a subscription outlives a restart of its
query's host: the restarted host opens the buffer again before its first result. What the lost
buffer held is gone (buffers are in memory; result streams are the durable output), and the
changes applied while the host was down give no diffs (the restarted query rebuilds its rows
from the store): with ``include_control=True`` the bootstrap signals of the host's new round
come first, the cue to read the query's results again; the next results are numbered above
the query's sequence lease.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator
from typing import Any

import ray

from drasi_ray.actors.line import SyncLine
from drasi_ray.model.errors import ComponentUnavailableError, SubscriptionLostError
from drasi_ray.model.registrations import SubscriberSpec
from drasi_ray.model.results import Delivered, QueryResult
from drasi_ray.shards.calls import HostCalls

RESTART_DEADLINE_S = 60.0
"""How long a read waits for the query's host to come back from a restart."""


class Subscription:
    """The user's handle on a query's result feed.

    ``drain()`` returns what has arrived so far without waiting; iterating blocks for the next
    result and ends when the subscription or the query is closed. Control signals (bootstrap
    started/completed) are delivered only if asked for with ``include_control=True``.
    """

    def __init__(
        self, spec: SubscriberSpec, host: Any, coordinator: Any, include_control: bool = False
    ) -> None:
        """``host``, ``coordinator``: the Ray handles of the query's host and of the
        coordinator, which opened the buffer and keeps ``spec``."""
        self.query_id = spec.query_id
        self._host = host
        self._coordinator = coordinator
        self._line = SyncLine[HostCalls](host)
        self._subscriber_id = spec.subscriber_id
        self._include_control = include_control
        self._closed = False
        self.restart_deadline_s = RESTART_DEADLINE_S

    def _keep(self, items: Iterable[Delivered]) -> list[Any]:
        if self._include_control:
            return list(items)
        return [item for item in items if isinstance(item, QueryResult)]

    def drain(self) -> list[QueryResult]:
        """Every result received since the last call, without blocking for new ones."""
        return self._keep(self._take(0.0))

    def next(self, timeout: float = 1.0) -> list[QueryResult]:
        """Wait up to ``timeout`` seconds for results; returns what arrived (maybe nothing)."""
        return self._keep(self._take(timeout))

    def _take(self, timeout: float) -> list[Delivered]:
        """Take from the buffer. While the query's host restarts the call is made again, for
        up to :data:`RESTART_DEADLINE_S`; then ComponentUnavailableError. A buffer that is gone
        for good raises SubscriptionLostError: a read never returns nothing in silence."""
        deadline = time.monotonic() + self.restart_deadline_s
        pause = 0.05
        while True:
            try:
                batch = self._line.call(
                    HostCalls.take, self.query_id, self._subscriber_id, None, timeout
                )
                return list(batch)
            except ray.exceptions.RayTaskError as exc:
                if isinstance(exc.cause, SubscriptionLostError):
                    raise exc.cause from None
                raise
            except ray.exceptions.RayActorError as exc:
                if time.monotonic() + pause > deadline:
                    raise ComponentUnavailableError(
                        f"the host of query {self.query_id!r} did not come back within "
                        f"{self.restart_deadline_s:g}s ({type(exc).__name__})"
                    ) from exc
                time.sleep(pause)
                pause = min(pause * 2, 1.0)

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
            ray.get(self._coordinator.unsubscribe.remote(self.query_id, self._subscriber_id))

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
