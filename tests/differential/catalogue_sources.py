"""Catalogue queries with synthetic joins, source middleware and two sources.

They run over the two-source cases of :func:`tests.differential.generator.
generate_two_source_case` (sources ``s`` and ``t``, the generator's labels and properties).
Joins key on ``y`` and ``name``, whose small value pools make nodes meet, part and meet again
as updates change them, across the two sources; the middleware reshape ``s``'s changes
(relabel, promote, unwind, map, parse_json, decoder, a two-stage pipeline).

Left out: an OPTIONAL MATCH through a join. Drasi reports such rows with its OPTIONAL MATCH
artefacts (no row for a node without a match, then an UPDATE from a null row it never added;
the same class as the optional-match deviation documented in drasi_ray.query.engine), so the
comparison would only show that known difference.
"""

from __future__ import annotations

from typing import Any

from tests.differential.generator import SECOND_SOURCE
from tests.oracle.model import SOURCE_ID, QuerySpec

BOTH = (SOURCE_ID, SECOND_SOURCE)


def _join(join_id: str, *keys: tuple[str, str]) -> dict[str, Any]:
    return {"id": join_id, "keys": [{"label": label, "property": name} for label, name in keys]}


Y_JOIN = _join("J", ("A", "y"), ("B", "y"))
NAME_JOIN = _join("K", ("A", "name"), ("C", "name"))

JOIN_QUERIES: tuple[QuerySpec, ...] = (
    QuerySpec(
        "join_pairs",
        "MATCH (a:A)-[:J]->(b:B) RETURN elementId(a) AS a, elementId(b) AS b, a.y AS y",
        (Y_JOIN,),
        sources=BOTH,
    ),
    QuerySpec(
        "join_either_direction",
        "MATCH (a:A)-[:K]-(c:C) RETURN elementId(a) AS a, c.x AS cx, a.x AS ax",
        (NAME_JOIN,),
        sources=BOTH,
    ),
    QuerySpec(
        "join_count",
        "MATCH (a:A)-[:J]->(b:B) RETURN a.name AS name, count(b) AS n, sum(b.x) AS total",
        (Y_JOIN,),
        sources=BOTH,
    ),
    QuerySpec(
        "join_then_relation",
        "MATCH (b:B)-[:J]->(a:A)-[:R]->(c) RETURN elementId(b) AS b, elementId(c) AS c",
        (Y_JOIN,),
        sources=BOTH,
    ),
    QuerySpec(
        "two_joins",
        "MATCH (c:C)-[:K]->(a:A)-[:J]->(b:B) RETURN c.name AS name, elementId(b) AS b",
        (Y_JOIN, NAME_JOIN),
        sources=BOTH,
    ),
)


def piped(
    query_id: str, text: str, *middleware: dict[str, Any], sources: tuple[str, ...] = BOTH
) -> QuerySpec:
    """A query reading ``sources``, whose changes from the cases' first source (``s``) pass
    through ``middleware`` in order."""
    names = tuple(spec["name"] for spec in middleware)
    return QuerySpec(query_id, text, (), middleware, {SOURCE_ID: names}, sources)


RELABEL = {"name": "relabel", "kind": "relabel", "config": {"labelMappings": {"A": "Z"}}}
PROMOTE = {
    "name": "promote",
    "kind": "promote",
    "config": {"mappings": [{"path": "$.m.k", "target_name": "mk"}], "on_error": "skip"},
}
UNWIND = {
    "name": "unwind",
    "kind": "unwind",
    "config": {"A": [{"selector": "$.m.tags[*]", "label": "Tag", "relation": "HAS"}]},
}
MAP = {
    "name": "map",
    "kind": "map",
    "config": {
        "B": {
            "insert": [
                {
                    "op": "Update",
                    "label": "Named",
                    "id": "$.name",
                    "properties": {"x": "$.x", "by": "$['$metadata']"},
                }
            ],
            "update": [
                {"op": "Update", "label": "Named", "id": "$.name", "properties": {"x": "$.x"}}
            ],
        }
    },
}
PARSE_JSON: dict[str, Any] = {
    "name": "parse_json",
    "kind": "parse_json",
    "config": {"target_property": "j", "output_property": "parsed", "on_error": "skip"},
}
DECODER: dict[str, Any] = {
    "name": "decoder",
    "kind": "decoder",
    "config": {
        "encoding_type": "url",
        "target_property": "s",
        "output_property": "d",
        "on_error": "skip",
    },
}

MIDDLEWARE_QUERIES: tuple[QuerySpec, ...] = (
    piped("relabel", "MATCH (z:Z) RETURN elementId(z) AS id, z.name AS name, z.x AS x", RELABEL),
    piped("promote", "MATCH (a:A) RETURN elementId(a) AS id, a.mk AS mk, a.x AS x", PROMOTE),
    piped(
        "unwind",
        "MATCH (a:A)-[:HAS]->(t:Tag) RETURN elementId(a) AS a, count(t) AS tags",
        UNWIND,
    ),
    piped("map", "MATCH (n:Named) RETURN elementId(n) AS id, n.x AS x", MAP),
    piped("parse_json", "MATCH (c:C) RETURN elementId(c) AS id, c.parsed AS parsed", PARSE_JSON),
    piped("decoder", "MATCH (b:B) RETURN elementId(b) AS id, b.d AS d", DECODER),
    piped(
        "relabel_then_promote",
        "MATCH (z:Z)-[:R]->(b:B) RETURN elementId(z) AS z, z.mk AS mk, b.name AS name",
        RELABEL,
        {**PROMOTE, "name": "promote2"},
    ),
)

SOURCES_CATALOGUE: tuple[QuerySpec, ...] = JOIN_QUERIES + MIDDLEWARE_QUERIES
"""Every join and middleware query, in a fixed order (ids are stable)."""
