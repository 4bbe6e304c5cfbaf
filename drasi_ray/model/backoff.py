"""Capped exponential backoff with equal jitter: how every retry loop of the package waits.

Attempt ``n`` (from 0) waits a random time between half and all of
``min(cap, initial * 2**n)``: "equal jitter". Retries of many clients spread out (no
thundering herd when Redis comes back), and unlike full jitter a retry never comes at once
after a failure: a failing call is never hot-looped. Consumers, the durable state, the
reactions, the direct lines' reconnects and the chaos run's producer all wait this way.
"""

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
    """The delays of one retry loop (see the module docstring); :meth:`reset` on success."""

    def __init__(self, initial_s: float = INITIAL_BACKOFF_S, cap_s: float = MAX_BACKOFF_S) -> None:
        self._initial = initial_s
        self._cap = cap_s
        self._attempt = 0

    def reset(self) -> None:
        self._attempt = 0

    def next_delay(self) -> float:
        """The next wait, in seconds (counts as an attempt)."""
        ceiling = min(self._cap, self._initial * (2**self._attempt))
        self._attempt += 1
        return random.uniform(ceiling / 2, ceiling)

    async def wait(self) -> None:
        await asyncio.sleep(self.next_delay())


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
