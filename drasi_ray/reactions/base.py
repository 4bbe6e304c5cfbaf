"""The reaction protocol and the worker that runs one reaction beside a query.

A :class:`Reaction` writes batches of results somewhere (a Redis stream, a file, the log, a
callback). It never runs on the query's path: the query actor *offers* each result to a
:class:`ReactionWorker`, which queues it (bounded) and returns at once. The worker's background
task takes whatever is queued (up to ``max_batch``), renders it once and writes it; a failed
write is retried with capped exponential backoff until it succeeds, while new results keep
queueing. When the queue is full a result is dropped and counted (``dropped`` in status): a
reaction that cannot keep up costs only itself, never the query or the other reactions.

Contract for implementations: :meth:`Reaction.render` is pure and called once per batch (a
batch it raises on is rendered again result by result, and only the results it cannot represent
are dropped and counted);
:meth:`Reaction.write` may be called again with the same rendered value after it raised
(``retry=True``) and must then not write twice what the failed attempt already wrote.
"""

from __future__ import annotations

import abc
import asyncio
import collections
import contextlib
import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from drasi_ray.model.backoff import Backoff
from drasi_ray.model.reaction_specs import AnyReaction
from drasi_ray.model.results import ControlResult, Delivered

logger = logging.getLogger("drasi_ray.reaction")

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class ReactionReport:
    """One reaction's live status: ``state`` is starting, running, retrying or stopped."""

    kind: str
    state: str
    delivered: int
    queued: int
    dropped: int
    failures: int
    last_error: str | None
    name: str | None = None
    """The Reaction resource the reaction belongs to (its spec's ``name``), if any."""

    def as_dict(self) -> dict[str, Any]:
        """The plain-data form (``status()``, JSON)."""
        return dataclasses.asdict(self)


class Reaction(abc.ABC, Generic[R]):
    """Somewhere a query's results go. Created and used inside the query actor."""

    kind: str = "reaction"

    async def open(self) -> None:
        """Prepare (connect, open files). Retried with backoff while it raises."""

    @abc.abstractmethod
    def render(self, items: Sequence[Delivered]) -> R:
        """Turn a batch into what :meth:`write` writes (called once per batch)."""

    @abc.abstractmethod
    async def write(self, rendered: R, retry: bool) -> None:
        """Write one rendered batch; raise to have it retried (then ``retry`` is True)."""

    async def close(self) -> None:
        """Release what :meth:`open` acquired."""

    async def last_sequence(self) -> int | None:
        """The highest result sequence already written where the reaction keeps results.

        Lets a restarted query actor continue numbering above it. None: not known.
        """
        return None


class Pending:
    """The signals between code that queues work and the one task that does it.

    The queuing side calls :meth:`queued` after each item; the task awaits :meth:`next_work`
    at the top of its loop, which marks it idle while nothing is queued and returns once
    something is; :meth:`flush` returns once the task is idle: everything queued before it was
    done.
    """

    def __init__(self) -> None:
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    def queued(self) -> None:
        self._idle.clear()
        self._wakeup.set()

    async def next_work(self, queued: int) -> None:
        """Return at once if ``queued`` items wait, else when :meth:`queued` is next called."""
        if not queued:
            self._idle.set()
            self._wakeup.clear()
            await self._wakeup.wait()

    async def flush(self, timeout_s: float) -> bool:
        """Wait until the task is idle; False if ``timeout_s`` passed first."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout_s)
        except asyncio.TimeoutError:
            return False
        return True


async def stop_task(task: asyncio.Task[None] | None) -> None:
    """Cancel ``task`` and wait for it to end, whatever it raises."""
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


async def end_tasks(tasks: list[asyncio.Task[None]], grace_s: float) -> None:
    """Give ``tasks`` (told to stop by a flag they check) ``grace_s`` to end by themselves,
    then cancel what is left and wait up to 1 s more.

    Letting a loop blocked in a Redis read (XREAD BLOCK) end by itself is the clean way out:
    a task cancelled inside that read can take long to end (redis-py closes the connection on
    the way out), so cancelling comes second; closing the client afterwards ends it for sure.
    """
    if not tasks:
        return
    _done, pending = await asyncio.wait(tasks, timeout=grace_s)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending, timeout=1.0)


class ReactionWorker:
    """Runs one :class:`Reaction`: bounded queue, background writes, retry with backoff."""

    def __init__(self, name: str, reaction: Reaction[Any], spec: AnyReaction) -> None:
        self.name = name
        self.reaction = reaction
        self.spec = spec
        self.delivered = 0
        self.dropped = 0
        self.failures = 0
        self.state = "starting"
        self.last_error: str | None = None
        self._queue: collections.deque[Delivered] = collections.deque()
        self._pending = Pending()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the background task on the running event loop."""
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    def offer(self, item: Delivered) -> None:
        """Queue ``item`` without waiting; drop it (counted) when the queue is full."""
        if isinstance(item, ControlResult) and not self.spec.include_control:
            return
        if len(self._queue) >= self.spec.queue_capacity:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                logger.warning(
                    "reaction %s: queue full, %d result(s) dropped", self.name, self.dropped
                )
            return
        self._queue.append(item)
        self._pending.queued()

    async def _run(self) -> None:
        await self._with_retry(self.reaction.open, "open")
        self.state = "running"
        while True:
            await self._pending.next_work(len(self._queue))
            count = min(len(self._queue), self.spec.max_batch)
            await self._deliver([self._queue.popleft() for _ in range(count)])

    async def _deliver(self, batch: list[Delivered]) -> None:
        outcome = self._render(batch)
        if outcome is None:
            return
        kept, rendered = outcome
        attempts = 0

        async def attempt() -> None:
            nonlocal attempts
            attempts += 1
            await self.reaction.write(rendered, retry=attempts > 1)

        await self._with_retry(attempt, "write")
        self.delivered += len(kept)

    def _render(self, batch: list[Delivered]) -> tuple[list[Delivered], Any] | None:
        """``(the results kept, their rendered form)``, or None if none can be rendered.

        A result the reaction cannot represent (an integer beyond 64 bits for JSON) is dropped,
        counted and logged on its own: no retry would help it, and the rest of its batch is
        rendered again without it rather than lost with it.
        """
        try:
            return batch, self.reaction.render(batch)
        except Exception:
            kept = [item for item in batch if self._renders(item)]
        return (kept, self.reaction.render(kept)) if kept else None

    def _renders(self, item: Delivered) -> bool:
        try:
            self.reaction.render([item])
        except Exception as exc:
            self.dropped += 1
            self.last_error = f"render: {type(exc).__name__}: {exc}"
            logger.error("reaction %s: dropping result %s: %s", self.name, item.sequence, exc)
            return False
        return True

    async def _with_retry(self, action: Any, what: str) -> None:
        """Await ``action()`` until it succeeds, backing off between attempts (from
        ``retry_initial_ms`` up to ``retry_max_ms``: :class:`~drasi_ray.model.backoff.Backoff`)."""
        backoff = Backoff(self.spec.retry_initial_ms / 1000, self.spec.retry_max_ms / 1000)
        while True:
            try:
                await action()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.failures += 1
                self.state = "retrying"
                self.last_error = f"{type(exc).__name__}: {exc}"
                logger.warning("reaction %s: %s failed (%s); retrying", self.name, what, exc)
                await backoff.wait()
            else:
                if self.state == "retrying":
                    self.state = "running"
                return

    async def flush(self, timeout_s: float) -> bool:
        """Wait until everything queued so far is written; False if ``timeout_s`` passed."""
        return await self._pending.flush(timeout_s)

    async def close(self, timeout_s: float) -> None:
        """Flush (up to ``timeout_s``), stop the task and close the reaction."""
        await self.flush(timeout_s)
        await stop_task(self._task)
        with contextlib.suppress(Exception):
            await self.reaction.close()
        self.state = "stopped"

    def status(self) -> ReactionReport:
        return ReactionReport(
            kind=self.reaction.kind,
            state=self.state,
            delivered=self.delivered,
            queued=len(self._queue),
            dropped=self.dropped,
            failures=self.failures,
            last_error=self.last_error,
            name=self.spec.name,
        )
