"""The id of a result row: what names it while it lives, whatever its values do.

A query's result set is keyed inside the engine (:mod:`drasi_ray.query.parts`): a row of a
non-aggregating last part by the elements its MATCH variables bind (a MATCH row keeps its
identity while their properties change, :mod:`drasi_ray.query.solutions`), a row that an
aggregation made (the last part's group, or a row of a part after an aggregating WITH) by the
values it is grouped by. :func:`row_id` writes that key as text, the same text for the same
row in every run and after every rebuild, so a row's id is stable across restarts and rows that
read alike (two MATCH rows of equal values, Drasi's multiset) have ids of their own.
Query chaining names the upstream's row nodes so (:mod:`drasi_ray.reactions.chain`, docs/
sources.md).

The text is a JSON array:

- a MATCH row: the ids of the elements its variables bind (anonymous ones included), in the
  order the variables first appear, each path's nodes before its relations, the OPTIONAL MATCH
  clauses' own variables last, ``null`` where an OPTIONAL MATCH bound nothing: ``["s1"]``;
  ``["a1","b2","r7"]`` for ``(a)-[r]->(b)``; ``["a1",null,null]``;
- an aggregation's row: its grouping values, in the order the aggregating clause lists them,
  written as the row writes them but with an element as its id and a whole Float as the Integer
  it equals (``2`` and ``2.0`` are one group): ``["r9"]``, ``["r9",true]``, ``[]`` for an
  aggregation without grouping values.

In a query of several sources an element id names its source too: ``"<source>:<id>"``.

Two groups whose grouping values write alike would share an id: an element and a string equal
to its id in one grouping column, the ``Awaiting`` of a future function and the text
``"Awaiting"``, a NaN and the text ``"NaN"``. No query of the catalogues groups so; such a
query's chain would hold one node for the two rows.
"""

from __future__ import annotations

from collections.abc import Hashable

from drasi_ray.model.encoding import dumps
from drasi_ray.model.identity import SEPARATOR
from drasi_ray.query.values import key_output


def row_id(key: Hashable) -> str:
    """The text id of the result row the engine keys by ``key`` (module docstring)."""
    if not isinstance(key, tuple):
        return "[]"  # no row is keyed so: a context's missing side
    if len(key) == 1 and isinstance(key[0], tuple):
        values = [key_output(value, readable_id) for value in key[0]]  # a group's values
    else:
        values = [None if element is None else readable_id(element) for element in key]
    return dumps(values).decode()


def readable_id(element_id: str) -> str:
    """An element id as a row id writes it: a graph id (a query of several sources,
    :mod:`drasi_ray.model.identity`) as ``<source>:<id>``, any other id as it is."""
    if SEPARATOR not in element_id:
        return element_id
    parts = element_id.split(SEPARATOR)
    return "".join(part + ":" if position % 2 else part for position, part in enumerate(parts))
