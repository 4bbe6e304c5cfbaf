"""Synthetic joins: relations between nodes whose key properties hold equal values.

A query declares a join ``J`` with keys ``(L1, p1), (L2, p2), ...``; a node labelled ``L1``
whose ``p1`` equals the ``p2`` of a node ``m`` labelled ``L2`` is linked to ``m`` by two
relations labelled ``J``, one each way, as Drasi's element index links them
(``core/src/in_memory_index/in_memory_element_index.rs``): ids ``"n:m"`` (start ``n``, end
``m``) and ``"m:n"``, no properties, the time of the change that made the link. Nodes of the
same key are not linked to each other. Nodes may come from any of the query's sources.

:class:`JoinIndex` keeps, per join and value, the nodes of each key, so a node change costs
work in proportion to the nodes sharing its old and new key values, never a scan. Values
match by kind and value as Drasi's ``ElementValue`` hashing does: ``1`` and ``1.0`` do not
join, ``null`` joins ``null``; lists and maps match by content. A node takes part while it has
the key's label and the key's property (an explicit ``null`` included).

Where Drasi keeps links it no longer should, drasi_ray drops them (each pinned by a test in
tests/query/test_joins.py): a node that loses the key's label or property, or is replaced by an
insert without it, leaves the join (Drasi keeps its old link); two joins linking the same pair
give one relation per direction carrying both labels (Drasi's second overwrites the first, whose
label is then lost); a node linked twice through one join (two of its keys match) keeps the
link until neither does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from drasi_ray.model.changes import Element, ElementKind, relation
from drasi_ray.model.query_specs import QueryJoin

_NODE = ElementKind.NODE

Registration = tuple[str, int, Hashable]
"""(join id, key position, value key): one way a node takes part in a join."""


@dataclass(slots=True)
class LinkChanges:
    """What a node change did to the join relations: relations to (re)index, ids to drop."""

    put: list[Element] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def active_joins(joins: Sequence[QueryJoin], relation_labels: frozenset[str]) -> list[QueryJoin]:
    """The joins whose id a pattern names as a relation label (Drasi ignores the others)."""
    return [join for join in joins if join.id in relation_labels]


def value_key(value: Any) -> Hashable:
    """A hashable key equal for two values exactly when Drasi joins them (kind and value)."""
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, (list, tuple)):
        return ("list", tuple(value_key(item) for item in value))
    if isinstance(value, dict):
        return ("map", tuple(sorted((key, value_key(item)) for key, item in value.items())))
    return ("other", repr(value))


class JoinIndex:
    """The join memberships of the nodes one query holds, and the relations they make.

    Contract: :meth:`node_changed` is told every change of a node the query holds (the indexed
    state before and the state after, either None), in order; it returns the relations to add,
    replace or drop, or None when the node's memberships did not change.
    """

    def __init__(self, joins: Sequence[QueryJoin]) -> None:
        self._joins = {join.id: join for join in joins}
        self._keys_by_label: dict[str, list[tuple[str, int, str]]] = {}
        for join in joins:
            for position, key in enumerate(join.keys):
                self._keys_by_label.setdefault(key.label, []).append(
                    (join.id, position, key.property)
                )
        # (join id, value key) -> per key position, the node ids holding that value
        self._buckets: dict[tuple[str, Hashable], dict[int, dict[str, None]]] = {}
        self._registered: dict[str, frozenset[Registration]] = {}
        # relation id -> the joins (with multiplicity) that link its endpoints
        self._links: dict[str, Counter[str]] = {}
        self._ends: dict[str, tuple[str, str]] = {}  # relation id -> (start, end)

    @property
    def labels(self) -> frozenset[str]:
        """Labels of the nodes that can take part in some join."""
        return frozenset(self._keys_by_label)

    def __len__(self) -> int:
        return len(self._links)

    def registrations(self, element: Element | None) -> frozenset[Registration]:
        """The (join, key, value) memberships ``element`` has by its labels and properties."""
        if element is None or element.kind is not _NODE:
            return frozenset()
        found: set[Registration] = set()
        properties = element.properties
        for label in element.labels:
            for join_id, position, name in self._keys_by_label.get(label, ()):
                if name in properties:
                    found.add((join_id, position, value_key(properties[name])))
        return frozenset(found)

    def node_changed(self, before: Element | None, after: Element | None) -> LinkChanges | None:
        """Move the node into the buckets of its new memberships; the link changes, if any."""
        subject = after if after is not None else before
        if subject is None or subject.kind is not _NODE or not self._keys_by_label:
            return None
        node_id = subject.id
        old = self._registered.get(node_id, frozenset())
        new = self.registrations(after)
        if old == new:
            return None
        touched: dict[str, None] = {}
        for registration in old - new:
            self._leave(node_id, registration, touched)
        for registration in new - old:
            self._enter(node_id, registration, touched)
        if new:
            self._registered[node_id] = new
        else:
            self._registered.pop(node_id, None)
        time = after.effective_from if after is not None else 0
        return self._changes(touched, time)

    # -- buckets ------------------------------------------------------------------------

    def _peers(
        self, join_id: str, position: int, bucket: dict[int, dict[str, None]]
    ) -> Iterable[str]:
        """Nodes holding the same value under the join's other keys (Drasi skips equal keys)."""
        key = self._joins[join_id].keys[position]
        for other, members in bucket.items():
            if self._joins[join_id].keys[other] != key:
                yield from members

    def _enter(self, node_id: str, registration: Registration, touched: dict[str, None]) -> None:
        join_id, position, value = registration
        bucket = self._buckets.setdefault((join_id, value), {})
        bucket.setdefault(position, {})[node_id] = None
        for peer in list(self._peers(join_id, position, bucket)):
            self._link(node_id, peer, join_id, +1, touched)

    def _leave(self, node_id: str, registration: Registration, touched: dict[str, None]) -> None:
        join_id, position, value = registration
        bucket = self._buckets.get((join_id, value))
        if bucket is None:
            return
        members = bucket.get(position)
        if members is not None:
            members.pop(node_id, None)
            if not members:
                del bucket[position]
        for peer in list(self._peers(join_id, position, bucket)):
            self._link(node_id, peer, join_id, -1, touched)
        if not bucket:
            del self._buckets[(join_id, value)]

    def _link(self, a: str, b: str, join_id: str, step: int, touched: dict[str, None]) -> None:
        for relation_id in {f"{a}:{b}", f"{b}:{a}"}:
            counts = self._links.setdefault(relation_id, Counter())
            counts[join_id] += step
            if counts[join_id] <= 0:
                del counts[join_id]
            if not counts:
                del self._links[relation_id]
            touched[relation_id] = None
            self._ends.setdefault(relation_id, (a, b) if relation_id == f"{a}:{b}" else (b, a))

    # -- results ------------------------------------------------------------------------

    def _changes(self, touched: dict[str, None], time: int) -> LinkChanges:
        changes = LinkChanges()
        for relation_id in touched:
            counts = self._links.get(relation_id)
            start, end = self._ends[relation_id]
            if not counts:
                del self._ends[relation_id]
                changes.dropped.append(relation_id)
                continue
            labels = tuple(sorted(counts))
            changes.put.append(relation(relation_id, labels, start, end, {}, time))
        return changes
