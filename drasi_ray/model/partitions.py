"""Which stream of a partitioned source an element's changes go to.

A platform source may read several streams, one per partition (``stream_keys``). The consumers
apply each stream in its order, and the streams side by side; the element store's versions
(entry ids) decide between changes of one element only as in-order application of ONE stream
would (docs/semantics.md §2). So the contract for producers is: **every change of one element
goes to the same stream.** :func:`stream_for` is the partitioner drasi_ray's own publishers use
(``drasi-ray publish`` over several streams, the benchmarks, the tests); a producer of its own
may use any rule that keeps an element on one stream.

The rule is CRC-32 of the element id's UTF-8 bytes modulo the number of streams: the same in
every process (the built-in ``hash`` of a string is salted per process) and the same hash as
the store shards' (:func:`~drasi_ray.model.shards.shard_of`), so with as many streams as shards
each stream's changes belong to one shard.

Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from drasi_ray.model.errors import ConfigError
from drasi_ray.model.shards import shard_of

__all__ = ["event_element_id", "stream_for"]


def stream_for(element_id: str, streams: Sequence[str]) -> str:
    """The stream of ``streams`` that carries every change of ``element_id``.

    ``streams`` in the source's order (``stream_keys``): the same list gives the same answer
    everywhere. ConfigError if ``streams`` is empty.
    """
    if not streams:
        raise ConfigError("a partitioned source needs at least one stream")
    return streams[shard_of(element_id, len(streams))]


def event_element_id(event: Mapping[str, Any]) -> str | None:
    """The id of the element a platform change event is about (``payload.after.id`` for an
    insert or update, ``payload.before.id`` for a delete), or None if it names none (a
    malformed event: it goes to the first stream, where the consumers dead-letter it)."""
    payload = event.get("payload")
    if not isinstance(payload, Mapping):
        return None
    side = payload.get("before" if event.get("op") == "d" else "after")
    if not isinstance(side, Mapping):
        return None
    element_id = side.get("id")
    return element_id if isinstance(element_id, str) else None
