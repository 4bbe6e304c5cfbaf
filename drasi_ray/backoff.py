"""Capped exponential backoff with full jitter: how the package's retry loops wait."""

from __future__ import annotations

import asyncio
import random

MAX_BACKOFF_S = 5.0
INITIAL_BACKOFF_S = 0.05


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
