"""What one hosted query does with what the store shards send it: bootstrap rounds, buffering.

A query's graph is spread over the K store shards, so its bootstrap comes in K parts
(:class:`~drasi_ray.model.shards.BootstrapPart`), one per shard, each a snapshot of that shard's
elements taken when the shard registered the query, and followed on the same link by that
shard's later deltas. :class:`QueryInbox` receives, in each link's order (the host's
:class:`~drasi_ray.host.merge.DeliveryMerger` guarantees it), parts and deltas, and says what
the query must apply:

- while the parts of the latest *round* are not all in, a delta from a shard whose part is in
  is newer than that part: it is held, and applied after the bootstrap; a delta from a shard
  whose part has not come yet is older than that part, which will include it: it is dropped
  (*superseded*);
- once every part of the round is in, the query bootstraps from their union (a re-bootstrap
  in the same process emits the difference from what it had reported as one catch-up
  result), then applies the held deltas in the order they came;
- a part of a newer round (a shard restarted, the query's host restarted, the shards were
  rescaled) starts over: the parts and held deltas of the unfinished round are dropped (the
  new parts, sent after them on each link, include them); a part of an older round is ignored.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter

from drasi_ray.model.changes import Element, ElementDelta, PipedChange, VersionedElement
from drasi_ray.model.shards import BootstrapPart

_VERSION = attrgetter("version")

Item = ElementDelta | PipedChange
"""What a shard hands a query: a delta, or an applied change of a source it pipes."""


def merge_by_version(lists: Iterable[Sequence[Item]]) -> list[Item]:
    """Deltas of several shards' parts of one batch, in the batch's order (each list is in
    version order already; versions order changes as the stream does)."""
    present = [deltas for deltas in lists if deltas]
    if len(present) <= 1:
        return list(present[0]) if present else []
    return list(heapq.merge(*present, key=_VERSION))


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The graph a round's parts make together, the element history they carry, and per
    source the query pipes, every element with its version."""

    elements: list[Element]
    history: dict[str, bytes]
    piped: dict[str, list[VersionedElement]]


class QueryInbox:
    """Bootstrap rounds and held deltas of one query (module docstring)."""

    def __init__(self) -> None:
        self.round: int | None = None
        self._shards = 0
        self._parts: dict[int, tuple[Element, ...]] = {}
        self._history: dict[str, bytes] = {}
        self._piped: dict[str, list[VersionedElement]] = {}
        self._held: list[Item] = []
        self.bootstrapped = False
        """True once a round was complete (the query has a graph)."""
        self.superseded = 0
        """Deltas dropped because a bootstrap part that includes them was still to come."""

    @property
    def loading(self) -> bool:
        """A round is under way: some shard's part has not come yet."""
        return self.round is not None and len(self._parts) < self._shards

    def part(self, part: BootstrapPart) -> Snapshot | None:
        """Take one shard's part; the round's whole graph once its last part is in."""
        if self.round is not None and part.round < self.round:
            return None
        if self.round is None or part.round > self.round:
            self.round, self._shards = part.round, part.shards
            self._parts, self._history, self._piped, self._held = {}, {}, {}, []
        elif part.shard in self._parts or not self.loading:
            return None
        self._parts[part.shard] = part.elements
        self._history.update(part.history)
        for source_id, items in part.piped.items():
            self._piped.setdefault(source_id, []).extend(items)
        if self.loading:
            return None
        elements = [element for shard in sorted(self._parts) for element in self._parts[shard]]
        snapshot = Snapshot(elements, self._history, self._piped)
        self._parts = {shard: () for shard in self._parts}  # the graph now lives in the engine
        self._history, self._piped = {}, {}
        self.bootstrapped = True
        return snapshot

    def deltas(self, by_shard: Mapping[int, Sequence[Item]]) -> list[Item]:
        """The deltas of one unit (per shard, each in order) that the query applies now, in
        the batch's order; the others are held or dropped (module docstring)."""
        if not self.loading:
            if not self.bootstrapped:
                self.superseded += sum(len(deltas) for deltas in by_shard.values())
                return []
            return merge_by_version(by_shard.values())
        held = []
        for shard, deltas in by_shard.items():
            if shard in self._parts:
                held.append(deltas)
            else:
                self.superseded += len(deltas)
        self._held.extend(merge_by_version(held))
        return []

    def take_held(self) -> list[Item]:
        """The deltas held while the round loaded, in order (call right after bootstrapping)."""
        held, self._held = self._held, []
        return held
