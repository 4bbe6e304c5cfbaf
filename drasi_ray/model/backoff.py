"""Capped exponential backoff with full jitter: how the package's retry loops wait."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

MAX_BACKOFF_S = 5.0
INITIAL_BACKOFF_S = 0.05

T = TypeVar("T")


class Backoff:
    """Capped exponential backoff with full jitter."""

    def __init__(self, initial_s: float = INITIAL_BACKOFF_S, cap_s: float = MAX_BACKOFF_S) -> None:
        self._initial = initial_s
        self._cap = cap_s
        self._attempt = 0

    def reset(self) -> None:
        self._attempt = 0

    async def wait(self) -> None:
        ceiling = min(self._cap, self._initial * (2**self._attempt))
        self._attempt += 1
        await asyncio.sleep(random.uniform(ceiling / 2, ceiling))


async def outlasting(
    call: Callable[[], Awaitable[T]],
    transient: tuple[type[BaseException], ...],
    what: str,
    log: logging.Logger,
    cap_s: float = MAX_BACKOFF_S,
) -> T:
    """Await ``call()`` until it returns, retrying with backoff while it raises ``transient``.

    For work that has no caller to hand a failure to and must not be abandoned: an actor
    loading its durable state after a restart, a delivery holding deltas. Any other exception
    propagates; ``what`` names the work in the warning logged per failed attempt.
    """
    backoff = Backoff(cap_s=cap_s)
    while True:
        try:
            return await call()
        except transient as exc:
            log.warning("%s failed (%s: %s); retrying", what, type(exc).__name__, exc)
            await backoff.wait()
