"""Run a coroutine at once, in the caller's event-loop step, up to its first wait.

``asyncio.create_task`` runs nothing before the loop's next step; for work that usually
finishes without waiting (a query applying a delivery: its locks free, its subscriber buffers
with room) that costs a step and a task per call. :func:`start_eagerly` runs the coroutine now
and hands it to a task only if it has to wait, what Python 3.12's eager tasks do.

Contract: the returned future holds the coroutine's result or exception. If the coroutine
finished without waiting, the future is already done when the call returns; otherwise it is a
task that resumes the coroutine where it waits (the coroutine sees the outcome of what it
awaited as usual), and cancelling the task cancels what the coroutine waits on and raises
``CancelledError`` in it, as a task's cancellation does. The coroutine runs in the caller's
context (contextvars), not a copy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["start_eagerly"]

T = TypeVar("T")


def start_eagerly(coro: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
    """Run ``coro`` now up to its first wait (module docstring); its outcome as a future."""
    loop = asyncio.get_running_loop()
    try:
        awaited = coro.send(None)
    except StopIteration as stop:
        done: asyncio.Future[T] = loop.create_future()
        done.set_result(stop.value)
        return done
    except asyncio.CancelledError:
        done = loop.create_future()
        done.cancel()
        return done
    except Exception as exc:  # the coroutine's failure is its future's
        done = loop.create_future()
        done.set_exception(exc)
        return done
    return loop.create_task(_resume(coro, awaited))


async def _resume(coro: Coroutine[Any, Any, T], awaited: Any) -> T:
    """Go on with ``coro``, which waits on ``awaited`` (what it yielded: a future, or None
    for a bare yield such as ``asyncio.sleep(0)``), stepping it as a task would."""
    while True:
        thrown: BaseException | None = None
        try:
            await _settled(awaited)
        except asyncio.CancelledError as cancelled:  # this task's: raised where coro waits
            if awaited is not None:
                awaited.cancel()
            thrown = cancelled
        except RuntimeError as wrong:  # it yielded what is not a future: raised in it
            thrown = wrong
        try:
            awaited = coro.send(None) if thrown is None else coro.throw(thrown)
        except StopIteration as stop:
            result: T = stop.value
            return result


async def _settled(awaited: Any) -> None:
    """Wait until ``awaited`` is done, whatever its outcome (the coroutine reads it)."""
    if awaited is None:
        await asyncio.sleep(0)
        return
    if not asyncio.isfuture(awaited):
        raise RuntimeError(f"a coroutine run eagerly yielded {awaited!r}, not a future")
    awaited._asyncio_future_blocking = False  # taken, as a task takes what it waits on
    if not awaited.done():
        await asyncio.wait((awaited,))
