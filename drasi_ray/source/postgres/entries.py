"""Element changes as stream entries whose ids are WAL positions.

The reader writes what it read as entries ``<LSN>-0``, ``<LSN>-1``, ...: the LSN is the end
position of the last transaction they hold (a 64-bit WAL position, the entry id's first part).
Consecutive transactions read together (a backlog) share entries, whole transactions each, up
to ``max_changes_per_entry`` changes and :data:`MAX_ENTRY_BYTES` an entry; a transaction larger
than that spans consecutive entries of its own. The snapshot is written the same way at the
slot's consistent point, which every streamed transaction ends after. So:

- a change's version (entry id, then its position in the entry: docs/semantics.md §2) follows
  the LSN order, the order PostgreSQL committed;
- a transaction written twice (a reader that crashed after ``XADD`` and before confirming the
  slot, then was sent it again) ends at or below the stream's top: the reader skips it, Redis
  would refuse its id, and the element store would drop its changes as not newer than what it
  holds.

Each change's time (``ts_ns``) is its transaction's commit time, so a change re-sent is the
same change. The entry is a CloudEvent whose ``id`` is its entry id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, TypeAlias

import orjson

from drasi_ray.model.changes import Element, ElementKind, Op

MAX_ENTRY_BYTES: Final = 1024 * 1024
"""An entry is split below this size (the consumers refuse entries over
``max_payload_bytes``, 4 MiB by default)."""

EVENT_SOURCE: Final = "drasi-ray-postgres"
DB: Final = "postgresql"
"""``payload.source.db`` of every change (anything but ``drasi``, which marks control events)."""

TimedChange: TypeAlias = tuple[Op, Element, int]
"""A change and its transaction's commit time (ns)."""


def entry_id(lsn: int, index: int) -> str:
    return f"{lsn}-{index}"


def lsn_of(entry_id_text: str) -> int:
    """The LSN part of an entry id this module made (``"23456-2"`` -> 23456)."""
    return int(entry_id_text.partition("-")[0])


def entries(
    lsn: int, changes: Sequence[TimedChange], max_changes: int, first_index: int = 0
) -> list[tuple[str, bytes]]:
    """The entries ``(id, data)`` of ``changes`` at ``lsn``, numbered from ``first_index``."""
    payloads: list[bytes] = []
    for start in range(0, len(changes), max_changes):
        payloads += _payloads(changes[start : start + max_changes])
    return [
        (entry_id(lsn, first_index + index), _with_id(data, lsn, first_index + index))
        for index, data in enumerate(payloads)
    ]


def _payloads(chunk: Sequence[TimedChange]) -> list[bytes]:
    data = orjson.dumps([event(op, element, ts_ns) for op, element, ts_ns in chunk])
    if len(data) <= MAX_ENTRY_BYTES or len(chunk) == 1:
        return [data]
    half = len(chunk) // 2
    return _payloads(chunk[:half]) + _payloads(chunk[half:])


def _with_id(events: bytes, lsn: int, index: int) -> bytes:
    """The CloudEvent around the events' JSON array (spliced: the array is encoded once)."""
    head = (
        b'{"id":"' + entry_id(lsn, index).encode() + b'","source":"' + EVENT_SOURCE.encode()
        + b'","type":"com.dapr.event.sent","specversion":"1.0",'
        b'"datacontenttype":"application/json","data":'
    )  # fmt: skip
    return head + events + b"}"


def event(op: Op, element: Element, ts_ns: int) -> dict[str, Any]:
    """The platform event of one change (the shape :func:`~drasi_ray.source.decode.
    change_event` writes; built here directly: it is on every row the reader writes)."""
    data: dict[str, Any] = {
        "id": element.id,
        "labels": list(element.labels),
        "properties": element.properties,
    }
    table = "node"
    if element.kind is ElementKind.RELATION:
        data["startId"] = element.start_id
        data["endId"] = element.end_id
        table = "rel"
    side = "before" if op is Op.DELETE else "after"
    return {
        "op": op.value,
        "payload": {side: data, "source": {"db": DB, "table": table, "ts_ns": ts_ns}},
    }
