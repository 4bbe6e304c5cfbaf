"""Element changes as stream entries whose ids are WAL positions.

A committed transaction's changes are written as consecutive entries ``<end LSN>-0``,
``<end LSN>-1``, ... (its end LSN, a 64-bit WAL position, is the entry id's first part): at
most ``max_changes_per_entry`` changes each, and each under :data:`MAX_ENTRY_BYTES`. The
snapshot is written the same way at the slot's consistent point, which every streamed
transaction ends after. So:

- a change's version (entry id, then its position in the entry: docs/semantics.md §2) is the
  LSN order, the order PostgreSQL committed;
- an entry written twice (a reader that crashed after ``XADD`` and before confirming the slot,
  then was sent the transaction again) has the same id; Redis refuses an id not above the
  stream's top, the reader skips what is at or below it, and were one to reach the stream
  again the element store would drop it as not newer than what it holds.

The element time (``ts_ns``) is the commit time, so a change re-sent is the same change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from drasi_ray.model.changes import Element, Op
from drasi_ray.source.decode import change_event, encode_cloud_event

MAX_ENTRY_BYTES: Final = 1024 * 1024
"""An entry is split below this size (the consumers refuse entries over
``max_payload_bytes``, 4 MiB by default)."""

EVENT_SOURCE: Final = "drasi-ray-postgres"
DB: Final = "postgresql"
"""``payload.source.db`` of every change (anything but ``drasi``, which marks control events)."""


def entry_id(lsn: int, index: int) -> str:
    return f"{lsn}-{index}"


def lsn_of(entry_id_text: str) -> int:
    """The LSN part of an entry id this module made (``"23456-2"`` -> 23456)."""
    return int(entry_id_text.partition("-")[0])


def entries(
    lsn: int,
    changes: Sequence[tuple[Op, Element]],
    ts_ns: int,
    max_changes: int,
    first_index: int = 0,
) -> list[tuple[str, bytes]]:
    """The entries ``(id, data)`` of ``changes`` at ``lsn``, numbered from ``first_index``."""
    payloads: list[bytes] = []
    for start in range(0, len(changes), max_changes):
        payloads += _payloads(changes[start : start + max_changes], ts_ns)
    return [(entry_id(lsn, first_index + index), data) for index, data in enumerate(payloads)]


def _payloads(chunk: Sequence[tuple[Op, Element]], ts_ns: int) -> list[bytes]:
    data = encode_cloud_event(
        [change_event(op, element, ts_ns, db=DB) for op, element in chunk], source=EVENT_SOURCE
    )
    if len(data) <= MAX_ENTRY_BYTES or len(chunk) == 1:
        return [data]
    half = len(chunk) // 2
    return _payloads(chunk[:half], ts_ns) + _payloads(chunk[half:], ts_ns)
