"""Fast constructors of the change model's values, for the per-event hot paths.

The classes of :mod:`drasi_ray.model.changes` are frozen, slotted dataclasses. Their generated
``__init__`` sets each field through ``object.__setattr__`` by name, which made construction more
than half of the decode time. The decoder and the element store build only values they have already
validated, so they fill the slots directly through the slot descriptors, which is what the frozen
``__setattr__`` guard exists to stop *callers* from doing after construction.

The field lists are checked against the dataclasses at import: a field added to, removed from or
reordered in the model (or a ``__post_init__``) fails loudly here instead of leaving a slot unset.
Everyone else should keep using the ordinary constructors.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from drasi_ray.model.changes import (
    DecodedEntry,
    Element,
    ElementChange,
    ElementDelta,
    ElementKind,
    FrozenMap,
    Op,
    Timing,
    Version,
)

__all__ = [
    "KIND_BY_VALUE",
    "OP_BY_CODE",
    "ChangeRow",
    "change_from_row",
    "make_change",
    "make_delta",
    "make_element",
    "make_entry",
    "make_timing",
]

_Setter = Callable[[Any, Any], None]

ChangeRow = tuple[
    str, str, str, tuple[str, ...], dict[str, Any], str | None, str | None, int, Version,
    int, int | None, int | None,
]  # fmt: skip
"""A validated change as plain values, the wire form of a change between actors: ``(op code,
kind value, element id, labels, properties, start id, end id, effective_from, version,
source_ns, reactivator_start_ns, reactivator_end_ns)``. Plain strings, tuples and dicts pickle
at C speed; :func:`change_from_row` builds the :class:`ElementChange` it stands for."""

OP_BY_CODE: dict[str, Op] = {op.value: op for op in Op}
"""``"i"`` -> :attr:`Op.INSERT` ...: the wire codes of the rows."""
KIND_BY_VALUE: dict[str, ElementKind] = {kind.value: kind for kind in ElementKind}


def slot_setters(cls: type, names: tuple[str, ...]) -> tuple[_Setter, ...]:
    """The ``__set__`` of each slot of dataclass ``cls``; its fields must be exactly ``names``."""
    actual = tuple(f.name for f in dataclasses.fields(cls))
    if actual != names or hasattr(cls, "__post_init__"):
        raise RuntimeError(
            f"drasi_ray.model._construct builds {cls.__name__} from fields {names}, "
            f"but it has {actual}"
        )
    setters: tuple[_Setter, ...] = tuple(getattr(cls, name).__set__ for name in names)
    return setters


_new = object.__new__
(_E_KIND, _E_ID, _E_LABELS, _E_PROPS, _E_START, _E_END, _E_FROM) = slot_setters(
    Element, ("kind", "id", "labels", "properties", "start_id", "end_id", "effective_from")
)
(_C_OP, _C_ELEMENT, _C_VERSION, _C_TIMING) = slot_setters(
    ElementChange, ("op", "element", "version", "timing")
)
(_T_SOURCE, _T_START, _T_END) = slot_setters(
    Timing, ("source_ns", "reactivator_start_ns", "reactivator_end_ns")
)
(_D_ID, _D_CHANGES, _D_CONTROLS) = slot_setters(DecodedEntry, ("entry_id", "changes", "controls"))
(_DL_BEFORE, _DL_AFTER, _DL_VERSION, _DL_TIME) = slot_setters(
    ElementDelta, ("before", "after", "version", "source_time_ms")
)


def make_element(
    kind: ElementKind,
    element_id: str,
    labels: tuple[str, ...],
    properties: FrozenMap,
    start_id: str | None,
    end_id: str | None,
    effective_from: int,
) -> Element:
    element: Element = _new(Element)
    _E_KIND(element, kind)
    _E_ID(element, element_id)
    _E_LABELS(element, labels)
    _E_PROPS(element, properties)
    _E_START(element, start_id)
    _E_END(element, end_id)
    _E_FROM(element, effective_from)
    return element


def make_change(op: Op, element: Element, version: Version, timing: Timing) -> ElementChange:
    change: ElementChange = _new(ElementChange)
    _C_OP(change, op)
    _C_ELEMENT(change, element)
    _C_VERSION(change, version)
    _C_TIMING(change, timing)
    return change


def make_timing(source_ns: int, start_ns: int | None, end_ns: int | None) -> Timing:
    timing: Timing = _new(Timing)
    _T_SOURCE(timing, source_ns)
    _T_START(timing, start_ns)
    _T_END(timing, end_ns)
    return timing


def make_entry(entry_id: str, changes: tuple[ElementChange, ...]) -> DecodedEntry:
    """A decoded entry of element changes (no control events)."""
    entry: DecodedEntry = _new(DecodedEntry)
    _D_ID(entry, entry_id)
    _D_CHANGES(entry, changes)
    _D_CONTROLS(entry, ())
    return entry


def make_delta(
    before: Element | None, after: Element | None, version: Version, source_time_ms: int
) -> ElementDelta:
    delta: ElementDelta = _new(ElementDelta)
    _DL_BEFORE(delta, before)
    _DL_AFTER(delta, after)
    _DL_VERSION(delta, version)
    _DL_TIME(delta, source_time_ms)
    return delta


def change_from_row(row: ChangeRow) -> ElementChange:
    """The :class:`ElementChange` a :data:`ChangeRow` (already validated) stands for."""
    op, kind, element_id, labels, properties, start, end, effective, version, ts, t0, t1 = row
    element = make_element(
        KIND_BY_VALUE[kind], element_id, labels, FrozenMap(properties), start, end, effective
    )
    return make_change(OP_BY_CODE[op], element, version, make_timing(ts, t0, t1))
