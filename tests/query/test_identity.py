"""Element identity across sources: an element is (source, id), as in Drasi.

Checked against drasi-lib 0.3.0 (two Python sources, each with an element ``"1"``; the
scenario tests/scenarios/source_identity.json holds the run): they are two elements, counted,
matched and updated each on its own; a relation joins nodes of its own source; ``elementId()``
gives the id without the source. Here: the rule of graph ids (drasi_ray/model/identity.py),
the store shard's routing and bootstrap of a query of several sources, and the engine over
them; a query of one source keeps the ids as they are.
"""

from __future__ import annotations

from collections.abc import Sequence

from drasi_ray.model.changes import (
    DecodedEntry,
    Element,
    ElementChange,
    ElementDelta,
    Op,
    PipedChange,
    Timing,
    node,
    relation,
)
from drasi_ray.model.history import HistoryLimits
from drasi_ray.model.identity import graph_id, reads_several, user_element_id
from drasi_ray.model.query_specs import QueryJoin
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.shards.core import ShardCore
from drasi_ray.shards.routing import LabelFilter


def _deltas(items: Sequence[ElementDelta | PipedChange]) -> list[ElementDelta]:
    """Routed items of a source nobody pipes: deltas, all of them."""
    assert all(isinstance(item, ElementDelta) for item in items)
    return [item for item in items if isinstance(item, ElementDelta)]


def _entry(ms: int, op: Op, element: Element) -> DecodedEntry:
    return DecodedEntry(f"{ms}-0", (ElementChange(op, element, (ms, 0, 0), Timing(ms)),))


def test_a_graph_id_names_the_source_and_gives_the_users_id_back() -> None:
    assert reads_several(["s", "t"]) and not reads_several(["s", "s"])
    assert graph_id("s", "1") != graph_id("t", "1")
    assert user_element_id(graph_id("s", "1")) == "1"
    assert user_element_id(graph_id("a:b", "x:y")) == "x:y"  # colons in either name
    join = f"{graph_id('s', '1')}:{graph_id('t', '2')}"  # a join relation between them
    assert user_element_id(join) == "1:2"
    assert user_element_id("plain") == "plain"


class _Shard:
    """A store shard's core and one engine per query, as a query host applies them."""

    def __init__(self, queries: dict[str, tuple[str, list[str]]], joins: list[QueryJoin]) -> None:
        self.core = ShardCore()
        self.engines: dict[str, ContinuousQuery] = {}
        for query_id, (text, sources) in queries.items():
            engine = self.engines[query_id] = ContinuousQuery(query_id, text, joins=joins)
            labels = LabelFilter.of(engine.node_labels, engine.relation_labels)
            self.core.table.register_query(query_id, sources, labels)

    def apply(self, source_id: str, ms: int, op: Op, element: Element) -> dict[str, list[object]]:
        routed, _report = self.core.apply_entries(source_id, [_entry(ms, op, element)])
        return {
            query_id: [
                diff for delta in _deltas(deltas) for diff in self.engines[query_id].apply(delta)
            ]
            for query_id, deltas in routed.items()
        }


BOTH = ["s", "t"]


def test_equal_ids_of_two_sources_are_two_elements() -> None:
    shard = _Shard(
        {
            "items": ("MATCH (i:Item) RETURN elementId(i) AS id, i.qty AS qty", BOTH),
            "count": ("MATCH (i:Item) RETURN count(i) AS n", BOTH),
            "links": ("MATCH (i:Item)-[:IN]->(b:Bin) RETURN elementId(i) AS i, b.zone AS z", BOTH),
            "only_s": ("MATCH (i:Item) RETURN elementId(i) AS id, i.qty AS qty", ["s"]),
        },
        [],
    )
    shard.apply("s", 1, Op.INSERT, node("1", ["Item"], {"qty": 2}))
    shard.apply("t", 2, Op.INSERT, node("1", ["Item"], {"qty": 40}))
    shard.apply("t", 3, Op.INSERT, node("b", ["Bin"], {"zone": "north"}))
    shard.apply("s", 4, Op.INSERT, node("b", ["Bin"], {"zone": "front"}))
    linked = shard.apply("t", 5, Op.INSERT, relation("r", ["IN"], "1", "b"))
    assert linked["links"] == [{"type": "ADD", "data": {"i": "1", "z": "north"}}]
    assert sorted(r["qty"] for r in shard.engines["items"].results()) == [2, 40]
    assert shard.engines["count"].results() == [{"n": 2}]
    updated = shard.apply("s", 6, Op.UPDATE, node("1", ["Item"], {"qty": 3}))
    assert updated["items"] == [
        {"type": "UPDATE", "before": {"id": "1", "qty": 2}, "after": {"id": "1", "qty": 3}}
    ]
    assert updated["only_s"] == updated["items"]
    assert updated["links"] == []  # the relation is t's: s's item is not in it
    gone = shard.apply("t", 7, Op.DELETE, node("1", ["Item"]))
    assert gone["items"] == [{"type": "DELETE", "data": {"id": "1", "qty": 40}}]
    assert gone.get("only_s", []) == []
    assert shard.engines["count"].results() == [{"n": 1}]
    assert shard.engines["links"].results() == []


def test_a_query_of_several_sources_gets_graph_ids_and_one_of_one_source_the_ids() -> None:
    shard = _Shard(
        {
            "both": ("MATCH (i:Item) RETURN i.qty AS qty", BOTH),
            "one": ("MATCH (i:Item) RETURN i", ["s"]),
        },
        [],
    )
    item = node("1", ["Item"], {"qty": 2})
    routed, _report = shard.core.apply_entries("s", [_entry(1, Op.INSERT, item)])
    (plain,) = _deltas(routed["one"])
    (named,) = _deltas(routed["both"])
    assert plain.element.id == "1"
    assert named.element.id == graph_id("s", "1")
    assert named.element.properties == item.properties
    shard.core.apply_entries("t", [_entry(2, Op.INSERT, relation("r", ["IN"], "1", "b"))])
    assert [e.id for e in shard.core.snapshot("one", ["s"])] == ["1"]
    assert sorted(e.id for e in shard.core.snapshot("both", BOTH)) == [graph_id("s", "1")]
    shard.core.table.register_query("both", BOTH, LabelFilter.of(None, None))
    linked = [e for e in shard.core.snapshot("both", BOTH) if e.is_relation]
    assert [(e.start_id, e.end_id) for e in linked] == [(graph_id("t", "1"), graph_id("t", "b"))]


def test_a_join_links_nodes_of_two_sources_and_names_its_relations_by_their_ids() -> None:
    """Drasi names a join relation ``"<a>:<b>"`` by the two element ids alone, so where two
    sources hold equal ids two links can take one name and the second overwrite the first
    (tests/differential/test_identity.py shows Drasi's output); drasi_ray keeps one relation
    per pair of elements, and elementId() still gives ``"a:b"``."""
    join = QueryJoin.model_validate(
        {"id": "J", "keys": [{"label": "A", "property": "k"}, {"label": "B", "property": "k"}]}
    )
    text = "MATCH (a:A)-[j:J]->(b:B) RETURN elementId(a) AS a, a.x AS x, elementId(j) AS j"
    shard = _Shard({"pairs": (text, BOTH)}, [join])
    shard.apply("s", 1, Op.INSERT, node("1", ["A"], {"k": 5, "x": "s"}))
    shard.apply("t", 2, Op.INSERT, node("1", ["A"], {"k": 5, "x": "t"}))
    made = shard.apply("t", 3, Op.INSERT, node("2", ["B"], {"k": 5}))
    rows = sorted(diff["data"]["x"] for diff in made["pairs"])  # type: ignore[index]
    assert rows == ["s", "t"]
    assert {d["data"]["j"] for d in made["pairs"]} == {"1:2"}  # type: ignore[index]
    shard.apply("t", 4, Op.DELETE, node("1", ["A"]))
    assert shard.engines["pairs"].results() == [{"a": "1", "x": "s", "j": "1:2"}]


def test_a_rebuilt_query_of_two_sources_has_the_rows_and_histories_it_had() -> None:
    """What a restarted query host rebuilds from: the shards' snapshots (graph ids) and the
    element histories the shard kept for a query calling Drasi's past functions, one per
    element of each source."""
    text = "MATCH (i:Item) RETURN elementId(i) AS id, i.qty AS qty"
    shard = _Shard({"items": (text, BOTH)}, [])
    shard.core.keep_history("items", HistoryLimits())
    for at, (source, qty) in enumerate((("s", 2), ("t", 40), ("s", 3)), start=1):
        shard.apply(source, at, Op.UPDATE, node("1", ["Item"], {"qty": qty}, at))
    live = shard.engines["items"].results()
    snapshot = shard.core.snapshot("items", BOTH)
    rebuilt = ContinuousQuery("items", text)
    rebuilt.bootstrap(snapshot)
    assert sorted(map(str, rebuilt.results())) == sorted(map(str, live))
    assert sorted(r["qty"] for r in live) == [3, 40]
    records = shard.core.history_records("items", snapshot)
    assert sorted(records) == [graph_id("s", "1"), graph_id("t", "1")]
