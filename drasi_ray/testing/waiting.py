"""``wait_until``: wait on a condition instead of sleeping and hoping.

Tests, benchmarks and examples poll something that will become true (a line opened, a process
gone, a counter reached) with this one helper: it returns as soon as the condition holds, and
fails with a message naming what never happened, instead of a fixed sleep that is too short on
a loaded machine and wasted time on an idle one. :func:`wait_until_async` is the same inside an
event loop (the loop's tasks run while it waits).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL_S = 0.01


def wait_until(
    condition: Callable[[], T | None],
    timeout_s: float = 30.0,
    *,
    what: str = "the condition",
    poll_s: float = POLL_S,
) -> T:
    """Call ``condition`` until it returns a true value, and return that value (never None:
    a condition that returns a value or None gives the value's type).

    Polls every ``poll_s`` seconds; raises ``TimeoutError`` naming ``what`` if it is still
    false after ``timeout_s``. ``condition`` is called at least once, and once more after
    the deadline, so a condition that turns true at the last moment is not missed.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen within {timeout_s:g} s")
        time.sleep(poll_s)


async def wait_until_async(
    condition: Callable[[], T | None],
    timeout_s: float = 30.0,
    *,
    what: str = "the condition",
    poll_s: float = POLL_S,
) -> T:
    """:func:`wait_until` for a coroutine: awaits between the polls instead of blocking."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen within {timeout_s:g} s")
        await asyncio.sleep(poll_s)
