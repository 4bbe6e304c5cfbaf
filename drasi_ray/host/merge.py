"""How a query host orders what the store shards deliver to it.

Each shard sends a host its deliveries on a *link*: numbered from 0 within an *epoch* (a new
epoch each time the shard, or its link to this host, starts over). The host must apply

- each link's deliveries in number order (a shard's deliveries carry its elements' changes in
  the order it applied them: per-element order), and
- the parts of one consumer batch that touched several shards together, in the batch's order,
  so that with one consumer a query sees the stream's order exactly as with one shard.

The parts of a batch carry the same :class:`~drasi_ray.model.shards.BatchTag`, which names
every shard that got a part; each of them sends a part (empty if need be) to every host with a
query on the batch's source, so the host knows what to wait for. :class:`DeliveryMerger` turns
arrivals into *units* to apply, in order:

- an untagged delivery (a bootstrap part, a batch that touched one shard) is a unit alone, as
  soon as it is at the head of its link;
- a tagged part waits at the head of its link until the parts of every other shard of its tag
  are at the heads of theirs, and then they form one unit;
- with several consumers, two shards can apply two batches in opposite orders, and each batch
  would wait behind the other: such a cycle of waits is broken by letting one head go alone
  (*split*: its batch's parts are then applied separately, each in its link's order, which is
  what per-element order needs);
- a part whose sibling never comes (a consumer died between its calls to the shards, a shard
  restarted) is let go alone after ``wait_s``; a new epoch on a link excuses that link from the
  batches it had not delivered yet.

Splits and expiries lose only the cross-shard order of one batch, never per-element order.
Nothing here does I/O: the host's actor shell offers arrivals and applies the units.
"""

from __future__ import annotations

import collections
import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from drasi_ray.model.shards import BatchTag

WAIT_S = 2.0
"""How long a batch's part waits for a sibling that has not arrived before going alone."""


@dataclass(frozen=True, slots=True)
class Arrival:
    """One delivery from shard ``link``: its place in the link and what it carries."""

    link: int
    epoch: int
    number: int
    tag: BatchTag | None
    payload: Any


@dataclass(frozen=True, slots=True)
class Unit:
    """Deliveries to apply together: one alone, or every part of one batch (``merged``)."""

    parts: tuple[Arrival, ...]
    merged: bool = False


class Offered(enum.Enum):
    """What became of an arrival."""

    ACCEPTED = "accepted"
    DUPLICATE = "duplicate"
    """Already accepted once (a call made again after its line broke)."""
    STALE = "stale"
    """From an epoch the link has left: never applied."""


@dataclass(slots=True)
class _Link:
    epoch: int
    expected: int = 0
    early: dict[int, Arrival] = field(default_factory=dict)
    queue: collections.deque[Arrival] = field(default_factory=collections.deque)


@dataclass(slots=True)
class _Batch:
    tag: BatchTag
    first_seen: float
    arrived: dict[int, Arrival] = field(default_factory=dict)
    excused: set[int] = field(default_factory=set)
    resolved: bool = False
    emitted: int = 0

    def waits_for(self, link: int) -> bool:
        return link not in self.excused

    def finished(self) -> bool:
        return self.resolved and self.emitted >= len(self.tag.shards) - len(self.excused)


def _key(tag: BatchTag) -> tuple[str, int]:
    return tag.consumer, tag.number


class DeliveryMerger:
    """Orders one host's deliveries from every shard (module docstring)."""

    def __init__(self, wait_s: float = WAIT_S, clock: Callable[[], float] = time.monotonic):
        self._wait_s = wait_s
        self._clock = clock
        self._links: dict[int, _Link] = {}
        self._future: dict[int, dict[int, dict[int, Arrival]]] = {}  # link -> epoch -> number
        self._batches: dict[tuple[str, int], _Batch] = {}
        self.splits = 0
        """Batches whose parts went separately (a cycle of waits, or a sibling that never came)."""

    # -- arrivals -----------------------------------------------------------------------

    def offer(self, arrival: Arrival) -> tuple[Offered, list[Unit]]:
        """Take one delivery; returns what became of it and the units now ready, in order."""
        link = self._links.get(arrival.link)
        if link is None or arrival.epoch > link.epoch:
            return self._offer_new_epoch(link, arrival)
        if arrival.epoch < link.epoch:
            return Offered.STALE, []
        if arrival.number < link.expected or arrival.number in link.early:
            return Offered.DUPLICATE, []
        link.early[arrival.number] = arrival
        self._admit(link)
        return Offered.ACCEPTED, self._drain()

    def _offer_new_epoch(self, link: _Link | None, arrival: Arrival) -> tuple[Offered, list[Unit]]:
        if arrival.number != 0:  # its epoch opens with number 0, which may come later
            held = self._future.setdefault(arrival.link, {}).setdefault(arrival.epoch, {})
            if arrival.number in held:
                return Offered.DUPLICATE, []
            held[arrival.number] = arrival
            return Offered.ACCEPTED, []
        units = [] if link is None else self._close(arrival.link, link)
        opened = self._links[arrival.link] = _Link(arrival.epoch)
        later = self._future.pop(arrival.link, {})
        opened.early = {**later.get(arrival.epoch, {}), 0: arrival}
        self._future[arrival.link] = {
            epoch: held for epoch, held in later.items() if epoch > arrival.epoch
        }
        self._admit(opened)
        return Offered.ACCEPTED, units + self._drain()

    def epoch(self, link: int) -> int | None:
        """The epoch ``link`` is in (None: it never opened one here). Deliveries of older
        epochs that were held are never applied: the caller fails whoever waits on them."""
        opened = self._links.get(link)
        return None if opened is None else opened.epoch

    def _close(self, index: int, link: _Link) -> list[Unit]:
        """A link starts a new epoch: what its old epoch queued goes alone, and the batches it
        had not delivered its part of stop waiting for it."""
        units = [Unit((arrival,)) for arrival in link.queue]
        for arrival in link.queue:
            self._resolve_alone(arrival)
        link.queue.clear()
        for batch in self._batches.values():
            if index in batch.tag.shards and index not in batch.arrived:
                batch.excused.add(index)
        return units

    def _admit(self, link: _Link) -> None:
        """Move the link's consecutive early arrivals into its queue."""
        while link.expected in link.early:
            arrival = link.early.pop(link.expected)
            link.expected += 1
            link.queue.append(arrival)
            if arrival.tag is not None:
                batch = self._batches.get(_key(arrival.tag))
                if batch is None:
                    batch = self._batches[_key(arrival.tag)] = _Batch(arrival.tag, self._clock())
                batch.arrived.setdefault(arrival.link, arrival)

    # -- units --------------------------------------------------------------------------

    def _drain(self) -> list[Unit]:
        units: list[Unit] = []
        while True:
            progressed = False
            for link in list(self._links.values()):
                while link.queue:
                    unit = self._take_head(link)
                    if unit is None:
                        break
                    units.append(unit)
                    progressed = True
            if not progressed:
                unit = self._break_cycle()
                if unit is None:
                    return units
                units.append(unit)

    def _take_head(self, link: _Link) -> Unit | None:
        head = link.queue[0]
        batch = None if head.tag is None else self._batches.get(_key(head.tag))
        if batch is None or batch.resolved:
            link.queue.popleft()
            if batch is not None:
                self._count_emitted(batch, 1)
            return Unit((head,))
        parts = [head]
        for shard in batch.tag.shards:
            if shard == head.link or not batch.waits_for(shard):
                continue
            part = batch.arrived.get(shard)
            if part is None or self._head(shard) is not part:
                return None
            parts.append(part)
        for part in parts:
            self._links[part.link].queue.popleft()
        batch.resolved = True
        self._count_emitted(batch, len(parts))
        return Unit(tuple(parts), merged=len(parts) > 1)

    def _head(self, index: int) -> Arrival | None:
        link = self._links.get(index)
        return link.queue[0] if link is not None and link.queue else None

    def _break_cycle(self) -> Unit | None:
        """If heads wait on each other in a cycle, let one of them go alone."""
        waits: dict[int, list[int]] = {}
        for index, link in self._links.items():
            behind = self._blocked_behind(link)
            if behind:
                waits[index] = behind
        cycle = _find_cycle(waits)
        if cycle is None:
            return None
        link = self._links[cycle]
        head = link.queue.popleft()
        self._resolve_alone(head)
        return Unit((head,))

    def _blocked_behind(self, link: _Link) -> list[int]:
        """The links whose heads must move for this link's head to go; empty when it waits
        for nothing, or for a part that has not arrived (that wait is not a cycle)."""
        if not link.queue:
            return []
        head = link.queue[0]
        batch = None if head.tag is None else self._batches.get(_key(head.tag))
        if batch is None or batch.resolved:
            return []
        behind = []
        for shard in batch.tag.shards:
            if shard == head.link or not batch.waits_for(shard):
                continue
            part = batch.arrived.get(shard)
            if part is None:
                return []
            if self._head(shard) is not part:
                behind.append(shard)
        return behind

    def _resolve_alone(self, arrival: Arrival) -> None:
        if arrival.tag is None:
            return
        batch = self._batches.get(_key(arrival.tag))
        if batch is None:
            return
        if not batch.resolved:
            batch.resolved = True
            self.splits += 1
        self._count_emitted(batch, 1)

    def _count_emitted(self, batch: _Batch, parts: int) -> None:
        batch.emitted += parts
        if batch.finished():
            del self._batches[_key(batch.tag)]

    # -- time ---------------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        """When :meth:`expire` next has something to let go (None: nothing waits)."""
        waiting = [b.first_seen for b in self._batches.values() if not b.resolved]
        return min(waiting) + self._wait_s if waiting else None

    def expire(self) -> list[Unit]:
        """Let go alone the parts whose siblings did not come within ``wait_s``."""
        now = self._clock()
        for batch in self._batches.values():
            if not batch.resolved and batch.first_seen + self._wait_s <= now:
                batch.resolved = True
                self.splits += 1
        return self._drain()

    @property
    def waiting(self) -> int:
        """Deliveries accepted and not yet handed out as units."""
        queued = sum(len(link.queue) + len(link.early) for link in self._links.values())
        held = sum(len(h) for epochs in self._future.values() for h in epochs.values())
        return queued + held


def _find_cycle(waits: dict[int, list[int]]) -> int | None:
    """A node on a cycle of ``waits`` (node -> the nodes it waits on), or None."""
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    for start in waits:
        if state.get(start):
            continue
        stack: list[tuple[int, int]] = [(start, 0)]
        state[start] = 1
        while stack:
            node, position = stack[-1]
            nexts = waits.get(node, [])
            if position == len(nexts):
                state[node] = 2
                stack.pop()
                continue
            stack[-1] = (node, position + 1)
            following = nexts[position]
            if state.get(following) == 1:
                return following
            if not state.get(following) and following in waits:
                state[following] = 1
                stack.append((following, 0))
    return None
