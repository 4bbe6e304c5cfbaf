"""A PostgreSQL source end to end: a real PostgreSQL 16 (pgserver), Redis and a local Ray.

Rows that exist before the app starts come first (the snapshot the slot exported), then the
committed changes; a query added to the running app gets the current rows; a query joins two
tables through a relation declared from a foreign key; TRUNCATE deletes. Faults:
``test_postgres_recovery.py``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from drasi_ray import DrasiRay, Query
from drasi_ray.testing.embedded_redis import EmbeddedRedis
from drasi_ray.testing.postgres import EmbeddedPostgres, source_builder

SCHEMA = """
CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, city text);
CREATE TABLE orders (
    id int PRIMARY KEY,
    customer_id int REFERENCES customers (id),
    total numeric(10, 2) NOT NULL
);
CREATE PUBLICATION drasi_publication FOR TABLE customers, orders;
INSERT INTO customers VALUES (1, 'Ann', 'Oslo'), (2, 'Bob', 'Rome');
INSERT INTO orders VALUES (10, 1, 25.50), (11, 2, 7.00), (12, 1, 100.00);
"""

SPEND = (
    "MATCH (o:orders)-[:PLACED_BY]->(c:customers) "
    "RETURN c.name AS customer, count(o) AS orders, sum(o.total) AS spent"
)
BIG = "MATCH (o:orders) WHERE o.total > 20 RETURN o.id AS id, o.total AS total"


def shop_app(server: EmbeddedPostgres, database: str, redis_url: str, app_id: str) -> DrasiRay:
    """Customers and orders, orders PLACED_BY their customer, the ``spend`` query."""
    app = DrasiRay(app_id)
    app.add_source(
        source_builder(server, database, redis_url)
        .with_tables(["customers", "orders"])
        .with_relation("PLACED_BY", "orders", ["customer_id"], "customers")
        .build()
    )
    app.add_query(Query.cypher("spend").query(SPEND).from_source("shop").build())
    return app


def sorted_rows(app: DrasiRay, query_id: str) -> list[dict[str, object]]:
    return sorted(app.results(query_id), key=lambda row: sorted(row.items()))


@pytest.fixture(scope="module")
def shop(
    ray_session: None, redis_server: EmbeddedRedis, postgres_server: EmbeddedPostgres
) -> Iterator[tuple[DrasiRay, str]]:
    """One app for the module (tests in order: they continue each other's changes)."""
    database = postgres_server.create_database(f"shop_{uuid.uuid4().hex[:8]}")
    postgres_server.execute(SCHEMA, database)
    app = shop_app(postgres_server, database, redis_server.url, f"pg-{uuid.uuid4().hex[:6]}")
    app.start()
    yield app, database
    app.stop()


def test_rows_before_start_come_first_then_changes(
    shop: tuple[DrasiRay, str], postgres_server: EmbeddedPostgres
) -> None:
    app, database = shop
    app.wait_until_idle(timeout=60)
    assert sorted_rows(app, "spend") == [
        {"customer": "Ann", "orders": 2, "spent": 125.5},
        {"customer": "Bob", "orders": 1, "spent": 7.0},
    ]
    with app.subscribe("spend") as results:
        postgres_server.execute(
            "BEGIN; INSERT INTO customers VALUES (3, 'Cy', 'Lima');"
            " INSERT INTO orders VALUES (13, 3, 5.00); UPDATE orders SET total = 8.00"
            " WHERE id = 11; COMMIT; DELETE FROM orders WHERE id = 12",
            database,
        )
        app.wait_until_idle(timeout=60)
        diffs = [diff for result in results.drain() for diff in result.results]
    assert sorted_rows(app, "spend") == [
        {"customer": "Ann", "orders": 1, "spent": 25.5},
        {"customer": "Bob", "orders": 1, "spent": 8.0},
        {"customer": "Cy", "orders": 1, "spent": 5.0},
    ]
    # one diff per change that moved a total: Cy's first order, Bob's update, Ann's delete
    assert [(d["type"], d["after"]["customer"]) for d in diffs] == [
        ("aggregation", "Cy"),
        ("aggregation", "Bob"),
        ("aggregation", "Ann"),
    ]


def test_a_query_added_while_running_gets_the_current_rows(
    shop: tuple[DrasiRay, str], postgres_server: EmbeddedPostgres
) -> None:
    app, database = shop
    postgres_server.execute("UPDATE orders SET total = 30.00 WHERE id = 11", database)
    app.wait_until_idle(timeout=60)
    app.add_query(Query.cypher("big").query(BIG).from_source("shop").build())
    assert {row["id"] for row in app.results("big")} == {10, 11}
    report = app.status().reader("shop")
    assert report.state == "streaming" and report.snapshot_rows == 5


def test_truncate_deletes_the_table_s_rows(
    shop: tuple[DrasiRay, str], postgres_server: EmbeddedPostgres
) -> None:
    app, database = shop
    postgres_server.execute(
        "BEGIN; INSERT INTO orders VALUES (20, 2, 50.00); TRUNCATE orders;"
        " INSERT INTO orders VALUES (21, 1, 1.00); COMMIT",
        database,
    )
    app.wait_until_idle(timeout=60)
    assert sorted_rows(app, "spend") == [  # Drasi keeps a group whose rows all went, at 0
        {"customer": "Ann", "orders": 1, "spent": 1.0},
        {"customer": "Bob", "orders": 0, "spent": 0.0},
        {"customer": "Cy", "orders": 0, "spent": 0.0},
    ]
    orders = [e.id for e in app.elements("shop") if "orders" in e.labels]
    assert orders == ["orders:21"]
    assert app.status().reader("shop").truncations == 1
