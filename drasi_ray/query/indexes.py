"""Per-query graph indexes: the elements one continuous query needs, and how to reach them.

A :class:`GraphIndex` holds only the elements whose labels the query's patterns mention (or
every node / relation when a pattern leaves its labels open). It answers the questions the
path solver asks while walking outwards from a changed element:

- the element with a given id (``element``),
- the relations leaving / entering a node (``outgoing`` / ``incoming``),
- the nodes carrying a label, or all nodes (``nodes_with_label`` / ``all_nodes``) for patterns
  made of disconnected parts.

A relation is indexed by its endpoint ids even while those nodes are absent, so a relation that
arrives before its nodes is found when they do. Every update costs O(labels of the element).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from drasi_ray.model.changes import Element, ElementKind
from drasi_ray.query.joins import JoinIndex, LinkChanges

_EMPTY: frozenset[str] = frozenset()
_NODE = ElementKind.NODE


class LabelFilter:
    """Which labels a query needs for one element kind; ``labels is None`` means all."""

    __slots__ = ("labels",)

    def __init__(self, labels: frozenset[str] | None) -> None:
        self.labels = labels

    def wants(self, element: Element) -> bool:
        """True if the query may bind ``element`` somewhere in its patterns."""
        if self.labels is None:
            return True
        return not self.labels.isdisjoint(element.labels)


class GraphIndex:
    """The part of the graph one query needs, indexed for path solving.

    Contract: :meth:`apply` receives every change of an element the query may need (before and
    after states), and keeps exactly the wanted after-state. Lookups never scan the whole
    graph, except :meth:`nodes_with_label` / :meth:`all_nodes`, whose cost is the size of
    their answer.
    """

    def __init__(
        self,
        node_filter: LabelFilter,
        relation_filter: LabelFilter,
        joins: JoinIndex | None = None,
    ) -> None:
        """``joins``: the query's synthetic joins; their relations are indexed like any
        relation, made and dropped as the nodes' key values change (:mod:`.joins`)."""
        self._joins = joins
        self._node_filter = node_filter
        self._relation_filter = relation_filter
        self._elements: dict[str, Element] = {}
        self._nodes_by_label: dict[str, dict[str, None]] = {}
        self._nodes: dict[str, None] = {}
        self._outgoing: dict[str, dict[str, None]] = {}
        self._incoming: dict[str, dict[str, None]] = {}

    # ------------------------------------------------------------------ queries

    def wants(self, element: Element) -> bool:
        """True if ``element`` belongs in this index (its kind and labels are needed)."""
        if element.kind is _NODE:
            return self._node_filter.wants(element)
        return self._relation_filter.wants(element)

    def element(self, element_id: str) -> Element | None:
        return self._elements.get(element_id)

    def node(self, element_id: str) -> Element | None:
        found = self._elements.get(element_id)
        return found if found is not None and found.kind is _NODE else None

    def outgoing(self, node_id: str) -> Collection[str]:
        """Ids of the indexed relations whose ``start_id`` is ``node_id``."""
        return self._outgoing.get(node_id, _EMPTY)

    def incoming(self, node_id: str) -> Collection[str]:
        """Ids of the indexed relations whose ``end_id`` is ``node_id``."""
        return self._incoming.get(node_id, _EMPTY)

    def nodes_with_label(self, label: str) -> Collection[str]:
        return self._nodes_by_label.get(label, _EMPTY)

    def all_nodes(self) -> Collection[str]:
        return self._nodes

    def __len__(self) -> int:
        return len(self._elements)

    def elements(self) -> Iterable[Element]:
        return self._elements.values()

    # ------------------------------------------------------------------ updates

    def apply(self, before: Element | None, after: Element | None) -> None:
        """Replace ``before`` (if indexed) by ``after`` (if wanted)."""
        self.replace(
            None if before is None else self._elements.get(before.id),
            after if after is not None and self.wants(after) else None,
        )

    def replace(self, current: Element | None, after: Element | None) -> bool:
        """Replace the indexed ``current`` (None: nothing indexed under that id) by ``after``,
        which the caller has checked is wanted (None: drop it).

        Returns True when the element kept its kind, labels and endpoints (only properties
        changed) and made or broke no join: it is then swapped in place, one dict store, and
        every adjacency and label answer stays as it was."""
        same_shape = self._replace(current, after)
        if self._joins is not None:
            links = self._joins.node_changed(current, after)
            if links is not None:
                self._relink(links)
                return False
        return same_shape

    def _relink(self, links: LinkChanges) -> None:
        for relation_id in links.dropped:
            dropped = self._elements.get(relation_id)
            if dropped is not None:
                self._remove(dropped)
        for relation in links.put:
            self._replace(self._elements.get(relation.id), relation)

    def _replace(self, current: Element | None, after: Element | None) -> bool:
        if current is not None:
            if (
                after is not None
                and after.labels == current.labels
                and after.kind is current.kind
                and after.start_id == current.start_id
                and after.end_id == current.end_id
                and after.id == current.id
            ):
                self._elements[after.id] = after
                return True
            self._remove(current)
        if after is not None:
            self._add(after)
        return False

    def _add(self, element: Element) -> None:
        self._elements[element.id] = element
        if element.kind is _NODE:
            self._nodes[element.id] = None
            for label in element.labels:
                self._nodes_by_label.setdefault(label, {})[element.id] = None
            return
        assert element.start_id is not None and element.end_id is not None
        self._outgoing.setdefault(element.start_id, {})[element.id] = None
        self._incoming.setdefault(element.end_id, {})[element.id] = None

    def _remove(self, element: Element) -> None:
        del self._elements[element.id]
        if element.kind is _NODE:
            self._nodes.pop(element.id, None)
            for label in element.labels:
                _discard(self._nodes_by_label, label, element.id)
            return
        assert element.start_id is not None and element.end_id is not None
        _discard(self._outgoing, element.start_id, element.id)
        _discard(self._incoming, element.end_id, element.id)


def _discard(buckets: dict[str, dict[str, None]], bucket: str, member: str) -> None:
    """Remove ``member`` from ``buckets[bucket]``, dropping the bucket when it empties."""
    entries = buckets.get(bucket)
    if entries is None:
        return
    entries.pop(member, None)
    if not entries:
        del buckets[bucket]
