"""The future queue: re-evaluations that Drasi's future functions schedule for later.

When ``drasi.trueFor(cond, duration)`` (or another future function) cannot answer yet, it
returns :data:`~drasi_ray.query.values.AWAITING` and pushes an entry: re-evaluate the rows of
*anchor* element at *due* time. Entries are keyed by (call site, row signature), as Drasi keys
them by (position in query, input grouping hash), and each key holds at most one entry per due
time. How a push treats the entries already under its key is its :class:`PushType`.

The queue is plain data (no clock, no IO): the engine pops what is due for the time it is
given, and the owner of the query persists the keys :meth:`FutureQueue.take_dirty` reports.
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TypeAlias

QueueKey: TypeAlias = tuple[int, str]
"""(call site, row signature): the unit a push replaces or a condition turning false clears."""


class PushType(enum.Enum):
    """What a push does when its key already holds entries (Drasi's push types)."""

    ALWAYS = "always"
    """Add the entry beside the others (``drasi.future``)."""
    IF_NOT_EXISTS = "if_not_exists"
    """Add it only if the key holds nothing: the first due time wins (``trueFor``,
    ``trueUntil``)."""
    OVERWRITE = "overwrite"
    """Replace whatever the key holds: the last due time wins (``trueLater``,
    ``trueNowOrLater``, ``slidingWindow``)."""


@dataclass(frozen=True, slots=True)
class FutureEntry:
    """One scheduled re-evaluation: the rows of element ``anchor_id`` at ``due_ms``.

    ``original_ms`` is the transaction time of the change that scheduled it: the
    re-evaluation runs with that transaction time and ``due_ms`` as its realtime.
    """

    site: int
    signature: str
    anchor_id: str
    original_ms: int
    due_ms: int

    @property
    def key(self) -> QueueKey:
        return (self.site, self.signature)


@dataclass(frozen=True, slots=True)
class _Slot:
    """What a key holds for one due time, and the heap ticket that stands for it."""

    anchor_id: str
    original_ms: int
    ticket: int


class FutureQueue:
    """Scheduled re-evaluations ordered by due time (ties: first pushed first).

    A min-heap of tickets over a map key -> due time -> slot; a ticket whose slot was replaced
    or removed is skipped when it reaches the top, so every operation is O(log n).
    """

    def __init__(self) -> None:
        self._slots: dict[QueueKey, dict[int, _Slot]] = {}
        self._heap: list[tuple[int, int, QueueKey]] = []
        self._tickets = 0
        self._dirty: set[QueueKey] = set()

    def __len__(self) -> int:
        return sum(len(slots) for slots in self._slots.values())

    def push(
        self,
        push_type: PushType,
        key: QueueKey,
        anchor_id: str,
        original_ms: int,
        due_ms: int,
    ) -> bool:
        """Schedule ``anchor_id`` for ``due_ms`` under ``key``; False if ``push_type`` said no."""
        held = self._slots.get(key)
        if push_type is PushType.IF_NOT_EXISTS and held:
            return False
        if push_type is PushType.OVERWRITE and held:
            held.clear()
        self._tickets += 1
        slot = _Slot(anchor_id, original_ms, self._tickets)
        self._slots.setdefault(key, {})[due_ms] = slot
        heapq.heappush(self._heap, (due_ms, slot.ticket, key))
        self._dirty.add(key)
        return True

    def remove(self, key: QueueKey) -> None:
        """Drop every entry under ``key`` (the condition that scheduled them turned false)."""
        if self._slots.pop(key, None):
            self._dirty.add(key)

    def next_due(self) -> int | None:
        """The earliest due time held, or None when the queue is empty."""
        self._skip_stale()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int) -> FutureEntry | None:
        """Take the earliest entry if it is due at ``now_ms`` (due time <= now), else None."""
        self._skip_stale()
        if not self._heap or self._heap[0][0] > now_ms:
            return None
        due_ms, _ticket, key = heapq.heappop(self._heap)
        held = self._slots[key]
        slot = held.pop(due_ms)
        if not held:
            del self._slots[key]
        self._dirty.add(key)
        return FutureEntry(key[0], key[1], slot.anchor_id, slot.original_ms, due_ms)

    def _skip_stale(self) -> None:
        heap = self._heap
        while heap:
            due_ms, ticket, key = heap[0]
            slot = self._slots.get(key, {}).get(due_ms)
            if slot is not None and slot.ticket == ticket:
                return
            heapq.heappop(heap)

    def entries(self, key: QueueKey) -> list[FutureEntry]:
        """The entries under ``key``, by due time."""
        held = self._slots.get(key, {})
        return [
            FutureEntry(key[0], key[1], slot.anchor_id, slot.original_ms, due_ms)
            for due_ms, slot in sorted(held.items())
        ]

    def __iter__(self) -> Iterator[FutureEntry]:
        for key in list(self._slots):
            yield from self.entries(key)

    def take_dirty(self) -> set[QueueKey]:
        """The keys changed since the last call (their entries are :meth:`entries`)."""
        dirty, self._dirty = self._dirty, set()
        return dirty

    def load(self, entries: Iterable[FutureEntry]) -> None:
        """Add persisted entries (after a restart) without marking them changed."""
        for entry in entries:
            self._tickets += 1
            slot = _Slot(entry.anchor_id, entry.original_ms, self._tickets)
            self._slots.setdefault(entry.key, {})[entry.due_ms] = slot
            heapq.heappush(self._heap, (entry.due_ms, slot.ticket, entry.key))
