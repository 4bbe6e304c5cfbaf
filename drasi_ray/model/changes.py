"""The change model: typed, immutable values decoded at the stream boundary.

Every value here is a ``msgspec.Struct(frozen=True, gc=False)``: the one representation of a
change from the decoder to the query engine. Structs are built in C (a fraction of a frozen
dataclass's construction cost), compare and hash by field, pickle as themselves, and travel
between actors as MessagePack (:mod:`drasi_ray.model.wire`) with their field types kept.
``gc=False``: they hold no reference cycles, so the garbage collector never walks them.

A *change* is what a producer said happened to one graph element (docs/semantics.md §1). Where and
how often it was delivered (stream, entry id, delivery count) is the stream's business
(:class:`~drasi_ray.streams.records.StreamEntry`, the group's pending list) and is kept apart:
redelivery and reclaim change the delivery, never the change.

Every change carries a :data:`Version` = (entry-id milliseconds, entry-id sequence, position in
the entry's ``data`` array). Versions order changes exactly as in-order application of the
stream would, which is what lets several consumers apply changes out of order and still converge
(see :mod:`drasi_ray.shards.store`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any, NoReturn, TypeAlias

import msgspec

Version: TypeAlias = tuple[int, int, int]
"""(entry ms, entry seq, index in the entry's data array); compares as in-order application."""

ZERO_VERSION: Version = (0, 0, 0)


class Op(str, enum.Enum):
    """What happened to the element, with the wire codes of the platform format."""

    INSERT = "i"
    UPDATE = "u"
    DELETE = "d"


class ElementKind(str, enum.Enum):
    NODE = "node"
    RELATION = "relation"


class FrozenMap(dict[str, Any]):
    """A ``dict`` that refuses mutation: the property maps of immutable elements.

    It stays a real ``dict`` (fast lookups, ``orjson`` serialises it natively) and pickles as
    one, so it crosses Ray process boundaries cheaply.
    """

    __slots__ = ()

    def _refuse(self, *_args: Any, **_kwargs: Any) -> NoReturn:
        raise TypeError("element properties are immutable")

    __setitem__ = _refuse
    __delitem__ = _refuse
    __ior__ = _refuse  # type: ignore[assignment]
    clear = _refuse
    pop = _refuse
    popitem = _refuse
    setdefault = _refuse
    update = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenMap, (dict(self),))

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.keys()))

    def __repr__(self) -> str:
        return f"FrozenMap({dict.__repr__(self)})"


class Element(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """One node or relation as the graph holds it.

    ``effective_from`` is the element's time in milliseconds (``ts_ns // 1_000_000`` of the
    change that last set it). Relations have ``start_id``/``end_id``: ``(a)-[r]->(b)`` binds
    ``a`` to ``start_id`` and ``b`` to ``end_id``.
    """

    kind: ElementKind
    id: str
    labels: tuple[str, ...]
    properties: FrozenMap = msgspec.field(default_factory=FrozenMap)
    start_id: str | None = None
    end_id: str | None = None
    effective_from: int = 0

    @property
    def is_node(self) -> bool:
        return self.kind is ElementKind.NODE

    @property
    def is_relation(self) -> bool:
        return self.kind is ElementKind.RELATION


def node(
    element_id: str,
    labels: Iterable[str],
    properties: Mapping[str, Any] | None = None,
    effective_from: int = 0,
) -> Element:
    """Build a node element (a convenience for tests, examples and the engine)."""
    return Element(
        ElementKind.NODE,
        element_id,
        tuple(labels),
        FrozenMap(properties or {}),
        effective_from=effective_from,
    )


def relation(
    element_id: str,
    labels: Iterable[str],
    start_id: str,
    end_id: str,
    properties: Mapping[str, Any] | None = None,
    effective_from: int = 0,
) -> Element:
    """Build a relation element ``(start_id)-[labels]->(end_id)``."""
    return Element(
        ElementKind.RELATION,
        element_id,
        tuple(labels),
        FrozenMap(properties or {}),
        start_id,
        end_id,
        effective_from,
    )


class Timing(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """Profiling timestamps carried through the pipeline (nanoseconds since the epoch)."""

    source_ns: int
    reactivator_start_ns: int | None = None
    reactivator_end_ns: int | None = None


class ElementChange(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """A producer's statement that an element was inserted, updated (upserted) or deleted.

    ``element`` is the state *after* the change for inserts and updates (an update may carry
    only some properties: the store merges), and the state *before* it for deletes.
    """

    op: Op
    element: Element
    version: Version
    timing: Timing

    @property
    def effective_from(self) -> int:
        return self.element.effective_from


class SubscriptionControl(msgspec.Struct, frozen=True, gc=False, tag=True, array_like=True):
    """A ``SourceSubscription`` control event: a query (un)subscribing to labels.

    ``op`` INSERT subscribes, UPDATE replaces the label filters, DELETE unsubscribes.
    """

    op: Op
    query_id: str
    query_node_id: str
    node_labels: tuple[str, ...] = ()
    relation_labels: tuple[str, ...] = ()
    version: Version = ZERO_VERSION


class UnknownControl(msgspec.Struct, frozen=True, gc=False, tag=True, array_like=True):
    """A control event of a type drasi_ray does not define; logged and skipped."""

    control_type: str
    version: Version = ZERO_VERSION


ControlEvent: TypeAlias = SubscriptionControl | UnknownControl


class DecodedEntry(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """One stream entry, decoded: either element changes or control events, never both."""

    entry_id: str
    changes: tuple[ElementChange, ...] = ()
    controls: tuple[ControlEvent, ...] = ()


class ElementDelta(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """What applying one change did to the graph: the element before and after.

    ``before is None`` means the element did not exist; ``after is None`` means it no longer
    does. The store emits a delta only when something visible changed, so a redelivery or a
    duplicate produces none. ``source_time_ms`` is the change's ``effective_from``.
    ``inserted``: the change was an insert (op ``i``), not an update that upserted an unknown
    element; Drasi reports the OPTIONAL MATCH rows of the two differently.
    """

    before: Element | None
    after: Element | None
    version: Version
    source_time_ms: int
    inserted: bool = False

    @property
    def element(self) -> Element:
        """The element this delta is about (the after state when there is one)."""
        current = self.after if self.after is not None else self.before
        assert current is not None, "a delta has a before or an after"
        return current


def parse_entry_id(entry_id: str | bytes) -> tuple[int, int]:
    """``"1700000000000-3"`` -> ``(1700000000000, 3)``. Raises ValueError if malformed."""
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    ms, _, seq = text.partition("-")
    return int(ms), int(seq or 0)


class PipedChange(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """An applied change on its way to a query that sees its source through a middleware
    pipeline (:mod:`drasi_ray.host.pipelines`): the producer's change itself (the
    pipeline takes the change, not the merged element), its source, and its entry's id (a
    change the pipeline fails on is dead-lettered by entry)."""

    source_id: str
    entry_id: str
    change: ElementChange

    @property
    def version(self) -> Version:
        return self.change.version


class VersionedElement(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """An element and the version of the newest insert or update that set it: what a query
    with a pipeline rebuilds its view of a source from (each element passed through the
    pipeline as an insert at that version)."""

    element: Element
    version: Version
