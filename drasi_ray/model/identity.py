"""Element identity across sources: an element is its source and its id, as in Drasi.

Drasi names an element by an ``ElementReference`` (source id, element id): two sources may
each hold an element ``"1"``, and they are two elements, each matched, counted and joined on its
own; a relation's ends are nodes of the relation's own source; ``elementId()`` returns the
element id alone (checked through drasi-lib: tests/query/test_identity.py).

drasi_ray keeps that identity where elements live: every store shard holds one store per
source (:class:`~drasi_ray.shards.core.ShardCore`), persisted per source
(``drasi:<app>:store:<source_id>``), so the store, its versions, its recovery and its shard
moves are per (source, id) already; which shard owns an element is decided by its id alone
(:mod:`drasi_ray.model.shards`), which puts equal ids of several sources on one shard, in their
separate stores. A query's graph, though, is one index keyed by element id
(:mod:`drasi_ray.query`): a query that reads several sources gets each element under its
*graph id*, :func:`graph_id`, which names the source too; a query of one source gets the ids as
they are (nothing can collide there, and it pays nothing). The graph id is given where the
source is known, and nowhere else: by the store shard routing a delta or snapshotting a
bootstrap (:meth:`~drasi_ray.shards.core.ShardCore.apply_entries`,
:meth:`~drasi_ray.shards.core.ShardCore.snapshot`), and by the query host for what a
pipeline derives from a source (:mod:`drasi_ray.host.hosted`). So the query's element history,
function state and join relations are keyed by graph ids as its index is.

A graph id is ``"\\x1f<source>\\x1f<id>"`` (the ASCII unit separator around the source id):
never an id a producer sends (an element id or source id with that character is not supported
in a query of several sources), and reversible: :func:`user_element_id` takes every
``\\x1f<source>\\x1f`` out of a graph id, so ``elementId()`` of a node gives its id and of a join
relation (``"<a>:<b>"`` of two graph ids, :mod:`drasi_ray.query.joins`) gives ``"a:b"``, as
Drasi's.
"""

from __future__ import annotations

from collections.abc import Iterable

from drasi_ray.model.changes import Element, ElementDelta

__all__ = [
    "graph_delta",
    "graph_element",
    "graph_id",
    "reads_several",
    "user_element_id",
]

SEPARATOR = "\x1f"
"""What encloses the source id in a graph id (ASCII unit separator)."""


def reads_several(sources: Iterable[str]) -> bool:
    """Whether a query of ``sources`` names its elements by graph ids (it reads more than one
    source)."""
    return len(set(sources)) > 1


def graph_id(source_id: str, element_id: str) -> str:
    """The id of element ``element_id`` of ``source_id`` in the graph of a query of several
    sources."""
    return f"{SEPARATOR}{source_id}{SEPARATOR}{element_id}"


def user_element_id(graph_element_id: str) -> str:
    """The id a user sees (``elementId()``): the graph id without its sources."""
    if SEPARATOR not in graph_element_id:
        return graph_element_id
    return "".join(graph_element_id.split(SEPARATOR)[0::2])


def graph_element(source_id: str, element: Element) -> Element:
    """``element`` of ``source_id`` under its graph id (a relation's ends too: they are nodes
    of the relation's own source)."""
    start, end = element.start_id, element.end_id
    return Element(
        element.kind,
        graph_id(source_id, element.id),
        element.labels,
        element.properties,
        None if start is None else graph_id(source_id, start),
        None if end is None else graph_id(source_id, end),
        element.effective_from,
    )


def graph_delta(source_id: str, delta: ElementDelta) -> ElementDelta:
    """``delta`` of ``source_id`` with its elements under their graph ids."""
    before, after = delta.before, delta.after
    return ElementDelta(
        None if before is None else graph_element(source_id, before),
        None if after is None else graph_element(source_id, after),
        delta.version,
        delta.source_time_ms,
        delta.inserted,
    )
