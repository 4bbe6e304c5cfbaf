"""GQL queries through the public API, on a real Redis and a real local Ray: one from the
app's YAML (``query_language: GQL``, as Drasi's ``queryLanguage`` spells it), one built with
``Query.gql`` over a synthetic join, each beside a Cypher query of the same meaning."""

from __future__ import annotations

import uuid
from pathlib import Path

from drasi_ray import DrasiRay, Query, QueryLanguage
from drasi_ray.model.changes import Op, node
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher

GROUPED_GQL = (
    "MATCH (c:Customer) LET adult = c.age >= 18 FILTER adult "
    "RETURN c.city AS city, count(c) AS n GROUP BY city"
)
GROUPED_CYPHER = (
    "MATCH (c:Customer) WITH c, c.age >= 18 AS adult WHERE adult "
    "RETURN c.city AS city, count(c) AS n"
)
JOINED_GQL = (
    "MATCH (o:Order)-[:PLACED]->(c:Customer) YIELD o, c "
    "RETURN upper(c.name) AS customer, o.total AS total "
    "NEXT FILTER total > 10 RETURN customer, total"
)
JOINED_CYPHER = (
    "MATCH (o:Order)-[:PLACED]->(c:Customer) WITH toUpper(c.name) AS customer, o.total AS total "
    "WHERE total > 10 RETURN customer, total"
)


def _yaml(redis_url: str, stream: str) -> str:
    return f"""
id: gql-{uuid.uuid4().hex[:8]}
sources:
  - id: shop
    properties:
      redis_url: {redis_url}
      stream_key: {stream}
      block_ms: 100
queries:
  - id: grouped
    sources: [shop]
    query_language: GQL
    query: "{GROUPED_GQL}"
  - id: grouped-cypher
    sources: [shop]
    query: "{GROUPED_CYPHER}"
"""


def _event(op: Op, element_id: str, label: str, **properties: object) -> bytes:
    element = node(element_id, [label], {"id": element_id, **properties})
    return encode_cloud_event([change_event(op, element, 1_000_000_000)])


def test_gql_queries_from_yaml_and_the_builder_give_their_cypher_twins_results(
    ray_session: None, redis_url: str, tmp_path: Path
) -> None:
    stream = f"shop-{uuid.uuid4().hex[:6]}"
    path = tmp_path / "app.yaml"
    path.write_text(_yaml(redis_url, stream), encoding="utf-8")
    app = DrasiRay.from_yaml(path)
    for query_id, language, text in (
        ("joined", QueryLanguage.GQL, JOINED_GQL),
        ("joined-cypher", QueryLanguage.CYPHER, JOINED_CYPHER),
    ):
        builder = Query.gql(query_id) if language is QueryLanguage.GQL else Query.cypher(query_id)
        app.add_query(
            builder.query(text)
            .from_source("shop")
            .with_join("PLACED", ("Order", "customer"), ("Customer", "id"))
            .build()
        )
    events = [
        _event(Op.INSERT, "c1", "Customer", name="ada", age=36, city="Oslo"),
        _event(Op.INSERT, "c2", "Customer", name="bo", age=12, city="Oslo"),
        _event(Op.INSERT, "c3", "Customer", name="cy", age=40, city="Rome"),
        _event(Op.INSERT, "o1", "Order", customer="c1", total=25),
        _event(Op.INSERT, "o2", "Order", customer="c3", total=5),
        _event(Op.UPDATE, "c2", "Customer", name="bo", age=18, city="Oslo"),
        _event(Op.UPDATE, "o2", "Order", customer="c3", total=50),
    ]
    with app:
        with app.subscribe("grouped") as grouped, app.subscribe("joined") as joined:
            with Publisher.from_url(redis_url) as publisher:
                publisher.publish(stream, events)
            app.wait_until_idle(60)
            grouped_diffs = [diff for result in grouped.drain() for diff in result.results]
            joined_diffs = [diff for result in joined.drain() for diff in result.results]
        assert sorted(app.results("grouped"), key=str) == [
            {"city": "Oslo", "n": 2},
            {"city": "Rome", "n": 1},
        ]
        assert app.results("grouped") == app.results("grouped-cypher")
        assert sorted(app.results("joined"), key=str) == [
            {"customer": "ADA", "total": 25},
            {"customer": "CY", "total": 50},
        ]
        assert sorted(app.results("joined"), key=str) == sorted(
            app.results("joined-cypher"), key=str
        )
    assert grouped_diffs[-1] == {
        "type": "aggregation",
        "before": {"city": "Oslo", "n": 1},
        "after": {"city": "Oslo", "n": 2},
    }
    assert joined_diffs == [
        {"type": "ADD", "data": {"customer": "ADA", "total": 25}},
        {"type": "ADD", "data": {"customer": "CY", "total": 50}},
    ]
