"""The change record: what a store shard forwards to the change log for one valid change.

Kept free of pyarrow, pyspark and Ray so a store shard can import it on its hot path. A record is
a frozen ``msgspec.Struct`` (cheap to build and to pickle across the Ray call that carries a whole
batch). ``op`` is ``insert``/``update``/``delete``. The element fields describe the element as the
store holds it *after* the change (its full, merged property map), or, for a delete that removed it,
as it was *before*; ``present`` says whether the element exists after the change (a delete can leave
an element standing when newer updates already arrived). So the newest record of an element is its
state, which is what ``latest_state`` relies on.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from drasi_ray.model.changes import Element, ElementChange, ElementDelta, Op


class ChangeRecord(msgspec.Struct, frozen=True, gc=False):
    """One applied change as the change log stores it (fields in its column order)."""

    stream_id: str
    version_ms: int
    version_seq: int
    change_index: int
    op: str
    kind: str
    element_id: str
    labels: tuple[str, ...]
    effective_from: int
    properties: dict[str, Any]
    start_id: str | None
    end_id: str | None
    present: bool


OP_NAMES: Final[dict[Op, str]] = {Op.INSERT: "insert", Op.UPDATE: "update", Op.DELETE: "delete"}


def change_record(
    stream_id: str, change: ElementChange, delta: ElementDelta | None
) -> ChangeRecord:
    """The record of one change (``delta`` is what the store returned for it). Without a delta
    (the change was overtaken by a newer one of its element, or is a duplicate, which the log
    drops) the element is the change's own, present unless the change is a delete."""
    if delta is None:
        return _record(stream_id, change, change.element, change.op is not Op.DELETE)
    element = delta.after if delta.after is not None else delta.before
    if element is None:  # the store never emits a delta with neither side
        element = change.element
    return _record(stream_id, change, element, delta.after is not None)


def _record(stream_id: str, change: ElementChange, element: Element, present: bool) -> ChangeRecord:
    version_ms, version_seq, change_index = change.version
    return ChangeRecord(
        stream_id,
        version_ms,
        version_seq,
        change_index,
        OP_NAMES[change.op],
        element.kind.value,
        element.id,
        element.labels,
        change.effective_from,
        element.properties,
        element.start_id,
        element.end_id,
        present,
    )
