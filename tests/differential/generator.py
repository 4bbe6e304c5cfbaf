"""Seeded random graphs: sequences of node and relation inserts, updates and deletes.

A case starts from an empty graph. Nodes carry the labels ``A``, ``B``, ``C`` (sometimes two,
and an update may change them); relations ``R`` and ``S`` run between nodes that exist, and a
node's relations are deleted before it is. Property values are drawn from small pools so that
rows join, groups fill and empty, and equal values meet: integers and floats that are equal
by value (``2`` and ``2.0``), nulls, strings, booleans, lists and nested maps. Updates send a
part of the properties (Drasi merges the rest from the stored element), sometimes none that
change; there are upserts of unknown elements and deletes of unknown ones.

Each property keeps one kind of value (``x`` numeric, ``name`` text, ...), as a real source's
schema does, so a query that sums ``x`` never meets a string: a type error would only show
that both engines refuse it, each in its own way.

The same seed always gives the same case.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from tests.differential.model import SOURCE_ID, Case, GraphChange, Op

BASE_TIME_MS = 1_700_000_000_000
"""The first change's time (2023-11-14T22:13:20Z); each later change is about 1 s after."""

NODE_LABELS: tuple[tuple[str, ...], ...] = (("A",), ("B",), ("C",), ("A", "B"))
RELATION_LABELS = ("R", "S")
NAMES = ("b1", "b2", "b3", "Drasi One", "Query Tool")
TEXTS = ("alpha", "Beta", "gamma delta", "  pad  ", "", "DrasiQL", "x,y,z")
NUMBERS: tuple[Any, ...] = (0, 1, 2, 3, 5, -4, 2.0, 2.5, 0.5, -1.5, 10)
KINDS = ("fast", "slow", "Fast")


@dataclass(slots=True)
class _Graph:
    """What the generator knows of the graph so far: the live nodes' labels, the live
    relations' label and ends."""

    nodes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    relations: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    next_relation: int = 1


class CaseGenerator:
    """Draws one case from ``seed``; ``size`` changes, at most ``node_pool`` node ids."""

    def __init__(
        self,
        seed: int,
        size: int,
        node_pool: int = 10,
        source: str = SOURCE_ID,
        prefix: str = "n",
        label_changes: bool = True,
    ) -> None:
        """``source``: where the changes arrive; ``prefix``: of the node and relation ids (the
        ids of two sources must differ: an element id names one element of the graph)."""
        self.random = random.Random(seed)
        self.size = size
        self.node_pool = node_pool
        self.graph = _Graph()
        self.time = BASE_TIME_MS
        self.source = source
        self.prefix = prefix
        self.label_changes = label_changes

    def case(self, name: str) -> Case:
        changes = [self._change() for _ in range(self.size)]
        return Case(name, tuple(changes))

    # ------------------------------------------------------------------ one change

    def _change(self) -> GraphChange:
        self.time += 1000 + self.random.randrange(1000)
        graph, pick = self.graph, self.random.random()
        if pick < 0.28 or len(graph.nodes) < 3:
            return self._insert_node()
        if pick < 0.56:
            return self._update_node()
        if pick < 0.63:
            return self._delete_node()
        if pick < 0.80:
            return self._insert_relation()
        if pick < 0.90 and graph.relations:
            return self._update_relation()
        if graph.relations:
            return self._delete_relation()
        return self._insert_relation()

    def _node_id(self) -> str:
        return f"{self.prefix}{self.random.randrange(self.node_pool)}"

    def _insert_node(self) -> GraphChange:
        graph = self.graph
        ids = [f"{self.prefix}{i}" for i in range(self.node_pool)]
        free = [node_id for node_id in ids if node_id not in graph.nodes]
        if not free:
            return self._update_node()
        node_id = self.random.choice(free)
        labels = self.random.choice(NODE_LABELS)
        graph.nodes[node_id] = labels
        return self._node("insert", node_id, labels, self._node_properties(full=True))

    def _update_node(self) -> GraphChange:
        graph, rng = self.graph, self.random
        if rng.random() < 0.04:  # an upsert: the element may be unknown (Drasi inserts it)
            node_id = self._node_id()
            known = node_id in graph.nodes
            labels = graph.nodes[node_id] if known else rng.choice(NODE_LABELS)
        else:
            node_id = rng.choice(sorted(graph.nodes))
            known, labels = True, graph.nodes[node_id]
        if rng.random() < 0.08 and self.label_changes:
            labels = rng.choice(NODE_LABELS)
        graph.nodes[node_id] = labels
        properties = self._node_properties(full=not known)
        return self._node("update", node_id, labels, properties)

    def _delete_node(self) -> GraphChange:
        """Delete a node, after its relations (one change at a time), as a consistent source
        does: Drasi matches a relation whose end node is gone in an OPTIONAL MATCH, with that
        node null (docs/conformance.md), so a dangling relation would only show that."""
        graph, rng = self.graph, self.random
        if rng.random() < 0.05 or not graph.nodes:
            node_id = f"ghost{rng.randrange(3)}"  # never inserted: a no-op for both engines
            return self._node("delete", node_id, ("A",), {})
        node_id = rng.choice(sorted(graph.nodes))
        for relation_id, (label, start, end) in sorted(graph.relations.items()):
            if node_id in (start, end):
                del graph.relations[relation_id]
                return self._relation("delete", relation_id, label, start, end, {})
        labels = graph.nodes.pop(node_id)
        return self._node("delete", node_id, labels, {})

    def _insert_relation(self) -> GraphChange:
        graph, rng = self.graph, self.random
        nodes = sorted(graph.nodes)
        start = rng.choice(nodes) if nodes else self._node_id()
        end = rng.choice(nodes) if nodes else self._node_id()
        relation_id = f"{self.prefix}r{graph.next_relation}"
        graph.next_relation += 1
        label = rng.choice(RELATION_LABELS)
        graph.relations[relation_id] = (label, start, end)
        properties = self._relation_properties(full=True)
        return self._relation("insert", relation_id, label, start, end, properties)

    def _update_relation(self) -> GraphChange:
        relation_id = self.random.choice(sorted(self.graph.relations))
        label, start, end = self.graph.relations[relation_id]
        properties = self._relation_properties(full=False)
        return self._relation("update", relation_id, label, start, end, properties)

    def _delete_relation(self) -> GraphChange:
        relation_id = self.random.choice(sorted(self.graph.relations))
        label, start, end = self.graph.relations.pop(relation_id)
        return self._relation("delete", relation_id, label, start, end, {})

    # ------------------------------------------------------------------ values

    def _node_properties(self, full: bool) -> dict[str, Any]:
        rng = self.random
        values: dict[str, Any] = {
            "name": self._maybe_null(rng.choice(NAMES)),
            "x": self._maybe_null(rng.choice(NUMBERS)),
            "y": self._maybe_null(rng.choice((1, 2, 3, 0, 1.5, -2))),
            "flag": self._maybe_null(rng.random() < 0.5),
            "s": rng.choice(TEXTS),
            "l": self._list(),
            "m": {"k": rng.choice(NUMBERS), "tags": rng.sample(KINDS, rng.randrange(3))},
            "ts": 1_700_000_000 + rng.randrange(4) * 86_400 + rng.randrange(3) * 3_600,
        }
        if full:  # list and map values always: Drasi fails on many functions of a null list
            return {k: v for k, v in values.items() if k in "lm" or rng.random() < 0.9}
        count = rng.randrange(0, 4)
        return {k: values[k] for k in rng.sample(sorted(values), count)}

    def _relation_properties(self, full: bool) -> dict[str, Any]:
        rng = self.random
        values: dict[str, Any] = {
            "w": self._maybe_null(rng.choice(NUMBERS)),
            "kind": rng.choice(KINDS),
        }
        if full:
            return values
        return {k: values[k] for k in rng.sample(sorted(values), rng.randrange(1, 3))}

    def _maybe_null(self, value: Any) -> Any:
        return None if self.random.random() < 0.1 else value

    def _list(self) -> list[Any]:
        rng = self.random
        drawn = [rng.choice(NUMBERS) for _ in range(rng.randrange(4))]
        items: list[Any] = [n for n in drawn if not _float_beside_equal_integer(n, drawn)]
        if items and rng.random() < 0.1:
            items[rng.randrange(len(items))] = None
        return items

    # ------------------------------------------------------------------ records

    def _node(
        self, op: Op, node_id: str, labels: tuple[str, ...], properties: dict[str, Any]
    ) -> GraphChange:
        return GraphChange(op, node_id, labels, properties, self.time, source=self.source)

    def _relation(
        self, op: Op, relation_id: str, label: str, start: str, end: str, props: dict[str, Any]
    ) -> GraphChange:
        return GraphChange(op, relation_id, (label,), props, self.time, start, end, self.source)


def _float_beside_equal_integer(number: Any, items: list[Any]) -> bool:
    """A Float an Integer of the same list equals. Drasi's coll.distinct tosses a coin on such
    a pair (tests/differential/test_distinct_hashing.py pins both engines), so lists never
    hold one."""
    return isinstance(number, float) and any(
        type(other) is int and other == number for other in items
    )


def generate_case(seed: int, size: int, node_pool: int = 10) -> Case:
    """The case of ``seed``: ``size`` changes over at most ``node_pool`` node ids."""
    return CaseGenerator(seed, size, node_pool).case(f"seed{seed}")


SECOND_SOURCE = "t"
"""The other source of two-source cases (ids prefixed ``m``)."""


def generate_two_source_case(
    seed: int, size: int, node_pool: int = 8, label_changes: bool = True
) -> Case:
    """``size`` changes of two sources (``s``: ids ``n..``, ``t``: ids ``m..``), interleaved
    at random; each source's changes are a case of its own generator. ``label_changes``:
    whether an update may change a node's labels (an upsert of an unknown node still picks
    its labels)."""
    first = CaseGenerator(seed, size, node_pool, label_changes=label_changes)
    second = CaseGenerator(seed + 7919, size, node_pool, SECOND_SOURCE, "m", label_changes)
    pick = random.Random(seed * 31 + 1)
    changes = []
    for _ in range(size):
        generator = first if pick.random() < 0.5 else second
        generator.time = max(first.time, second.time)
        changes.append(generator._change())
    return Case(f"two-sources-{seed}", tuple(changes))
