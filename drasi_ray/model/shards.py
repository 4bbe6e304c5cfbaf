"""The shard map: which store shard owns an element, and how a consumer batch is split.

The element store and its versioning are partitioned by element id over K store shards
(``docs/architecture.md``, "Store shards"). Shard ``k`` owns the elements with
``shard_of(id, K) == k`` and is their single writer, so the store's versioning and convergence
rule (docs/semantics.md §2) hold per element exactly as with one store.

``shard_of`` is CRC-32 of the id's UTF-8 bytes modulo K: the same in every process and Python
version (the built-in ``hash`` of a string is salted per process, so two actors would disagree),
computed in C, and even enough over the ids producers use (a test checks the spread).

A consumer splits each decoded batch by shard (:func:`split_by_shard`) and sends each shard its
part in one call, with a :class:`BatchTag` when the batch touches more than one shard: the query
hosts use it to apply the parts of one batch together, in the batch's order
(:mod:`drasi_ray.host.merge`).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import msgspec

from drasi_ray.model.changes import DecodedEntry, Element, ElementChange, VersionedElement

__all__ = ["BatchTag", "BootstrapPart", "shard_of", "split_by_shard"]


def shard_of(element_id: str, shards: int) -> int:
    """The index (``0 .. shards - 1``) of the shard that owns ``element_id``."""
    if shards == 1:
        return 0
    return zlib.crc32(element_id.encode("utf-8", "surrogatepass")) % shards


def split_by_shard(entries: Sequence[DecodedEntry], shards: int) -> dict[int, list[DecodedEntry]]:
    """Each shard's part of a batch: per entry, the changes of the elements it owns, in order.

    An entry appears in a shard's part only if it has changes there; the parts keep the
    entries' order, so each shard applies its changes in stream order. Control entries are not
    split here (the consumer sends them to the coordinator, which gives every shard the same
    subscription table).
    """
    if shards == 1:
        return {0: [entry for entry in entries if entry.changes]}
    parts: dict[int, list[DecodedEntry]] = {}
    for entry in entries:
        changes = entry.changes
        if not changes:
            continue
        if len(changes) == 1:
            owner = shard_of(changes[0].element.id, shards)
            parts.setdefault(owner, []).append(entry)
            continue
        by_shard: dict[int, list[ElementChange]] = {}
        for change in changes:
            by_shard.setdefault(shard_of(change.element.id, shards), []).append(change)
        entry_id = entry.entry_id
        for owner, owned in by_shard.items():
            parts.setdefault(owner, []).append(DecodedEntry(entry_id, tuple(owned)))
    return parts


class BatchTag(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """Names one consumer batch across the shards it touches.

    ``consumer``: the consumer actor's incarnation (its name and a random token drawn when the
    actor starts, so a restarted consumer's numbers never meet its previous life's);
    ``number``: the batch's number in that incarnation; ``shards``: every shard that received
    a part of the batch, sorted. Each of those shards sends every query host that has a query
    on the batch's source its part of the batch (an empty one if nothing of it is routed
    there), so a host knows which parts to wait for.
    """

    consumer: str
    number: int
    shards: tuple[int, ...]


class BootstrapPart(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """One shard's share of a query's bootstrap: the elements of ``query_id``'s subscriptions
    it owns (and their history), as of the moment it registered the query for bootstrap round
    ``round``.

    A query is bootstrapped once it holds the parts of every one of the ``shards`` shards for
    its latest round (:mod:`drasi_ray.host.inbox`). Rounds are numbered by the coordinator,
    increasing (a new round after a restart or a rescale replaces the previous one).
    """

    query_id: str
    round: int
    shard: int
    shards: int
    elements: tuple[Element, ...]
    history: dict[str, bytes] = msgspec.field(default_factory=dict)
    """For a query that calls Drasi's past functions, the element history the shard keeps of
    these elements (element id -> record, :meth:`~drasi_ray.model.history.ElementHistory.
    records`)."""
    piped: dict[str, tuple[VersionedElement, ...]] = msgspec.field(default_factory=dict)
    """Per source the query sees through a middleware pipeline, every element of it the shard
    owns, with the version that set it (the query rebuilds its view of the source from
    them); ``elements`` leaves those sources out."""
