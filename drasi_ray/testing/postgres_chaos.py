"""The PostgreSQL chaos run: the reader killed, PostgreSQL and Redis restarted, nothing lost.

    python -m drasi_ray.testing.postgres_chaos --changes 20000     # bench/postgres_chaos.py too

One writer commits transactions of 1 to 5 row changes over three tables (customers, products,
orders; orders reference both, as declared relations) until ``changes`` rows changed, while the
run SIGKILLs the PostgreSQL source's reader ``reader_kills`` times and restarts
PostgreSQL (a fast shutdown: the writer's open transaction is aborted) and Redis (AOF,
``appendfsync always``) ``restarts`` times each. The writer rides out the restarts like an
application would, and knows which of its transactions committed: each one also inserts its
number into ``chaos_log`` (not published), which it reads back when a commit's outcome was lost
with the connection.

The oracle replays the committed transactions, in commit order, through a fresh element store
and the queries' engines in this process, building each row's elements independently of the
reader (id ``table:key``, every column, numerics as floats, the relations). The app's results
and element store must equal the oracle's, every query's result diffs since the snapshot must
equal the oracle's one for one, and the stream must hold, after the snapshot, exactly the
element changes of the committed transactions: ``lost``, ``duplicated`` and ``mismatched``
all 0.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import psycopg2
import redis

from drasi_ray.app import DrasiRay
from drasi_ray.model import keys
from drasi_ray.model.backoff import Backoff
from drasi_ray.model.changes import Element, ElementChange, Op, Timing, node, relation
from drasi_ray.model.config import RayConfig
from drasi_ray.query.definition import Query
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.shards.store import ElementStore
from drasi_ray.source.decode import decode_entry
from drasi_ray.testing import drills
from drasi_ray.testing.conformance import diffs_match
from drasi_ray.testing.embedded_redis import EmbeddedRedis
from drasi_ray.testing.postgres import EmbeddedPostgres, source_builder
from drasi_ray.testing.waiting import wait_until

SOURCE = "shop"
QUERIES = {
    "order_values": "MATCH (o:orders)-[:OF]->(p:products) "
    "RETURN o.id AS id, o.qty * p.price AS value",
    "by_tier": "MATCH (o:orders)-[:PLACED_BY]->(c:customers) "
    "RETURN c.tier AS tier, count(o) AS orders, sum(o.qty) AS items",
    "open_orders": "MATCH (o:orders) WHERE o.status = 'open' RETURN o.id AS id, o.qty AS qty",
    "gold": "MATCH (c:customers) WHERE c.tier = 'gold' RETURN c.id AS id, c.name AS name",
}
SCHEMA = """
CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, tier text NOT NULL);
CREATE TABLE products (id int PRIMARY KEY, name text NOT NULL, price numeric(10, 2) NOT NULL);
CREATE TABLE orders (
    id int PRIMARY KEY, customer_id int NOT NULL, product_id int NOT NULL,
    qty int NOT NULL, status text NOT NULL
);
CREATE TABLE chaos_log (n int PRIMARY KEY);
CREATE PUBLICATION drasi_publication FOR TABLE customers, products, orders;
"""
TIERS = ("bronze", "silver", "gold")
STATUSES = ("open", "paid", "shipped")
COLUMNS = {
    "customers": ("id", "name", "tier"),
    "products": ("id", "name", "price"),
    "orders": ("id", "customer_id", "product_id", "qty", "status"),
}
RELATIONS = (("PLACED_BY", "customer_id", "customers"), ("OF", "product_id", "products"))


@dataclass(frozen=True, slots=True)
class PostgresChaosSettings:
    changes: int = 20_000
    customers: int = 200
    products: int = 50
    seed_orders: int = 500
    reader_kills: int = 6
    postgres_restarts: int = 2
    redis_restarts: int = 2
    seed: int = 11
    idle_timeout_s: float = 600.0


@dataclass(slots=True)
class PostgresChaosReport:
    row_changes: int = 0
    element_changes: int = 0
    transactions: int = 0
    ambiguous_commits: int = 0
    stream_entries: int = 0
    reader_kills: int = 0
    postgres_restarts: int = 0
    redis_restarts: int = 0
    reader_reconnects: int = 0
    resent_skipped: int = 0
    lost: int = 0
    duplicated: int = 0
    mismatched_rows: int = 0
    mismatched_diffs: int = 0
    diffs_compared: int = 0
    wall_s: float = 0.0
    log: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not (self.lost or self.duplicated or self.mismatched_rows or self.mismatched_diffs)

    def lines(self) -> list[str]:
        return drills.report_lines(self, hidden="log")


# --------------------------------------------------------------------------- the workload

Row = dict[str, Any]
Statement = tuple[str, str, Row | None, Row]
"""(op i/u/d, table, the row before (None for an insert), the row after (the key for d))."""


class Shop:
    """The writer's model of the tables: what it committed, and the next transaction."""

    def __init__(self, settings: PostgresChaosSettings) -> None:
        self.rng = random.Random(settings.seed)
        self.tables: dict[str, dict[int, Row]] = {name: {} for name in COLUMNS}
        self.next_id = {"customers": 1, "products": 1, "orders": 1}
        for _ in range(settings.customers):
            self.apply([self._insert("customers")])
        for _ in range(settings.products):
            self.apply([self._insert("products")])
        for _ in range(settings.seed_orders):
            self.apply([self._insert("orders")])

    def _row(self, table: str, key: int) -> Row:
        rng = self.rng
        if table == "customers":
            return {"id": key, "name": f"customer {key}", "tier": rng.choice(TIERS)}
        if table == "products":
            price = Decimal(rng.randrange(100, 10_000)) / 100
            return {"id": key, "name": f"product {key}", "price": price}
        return {
            "id": key,
            "customer_id": rng.choice(list(self.tables["customers"])),
            "product_id": rng.choice(list(self.tables["products"])),
            "qty": rng.randrange(1, 10),
            "status": rng.choice(STATUSES),
        }

    def _insert(self, table: str) -> Statement:
        key = self.next_id[table]
        self.next_id[table] += 1
        return ("i", table, None, self._row(table, key))

    def transaction(self) -> list[Statement]:
        """1 to 5 statements against the committed state (keys changed once each)."""
        statements: list[Statement] = []
        touched: set[tuple[str, int]] = set()
        for _ in range(self.rng.randrange(1, 6)):
            statement = self._statement(touched)
            if statement is not None:
                touched.add((statement[1], statement[3]["id"]))
                statements.append(statement)
        return statements or [self._insert("orders")]

    def _statement(self, touched: set[tuple[str, int]]) -> Statement | None:
        rng, orders = self.rng, self.tables["orders"]
        roll = rng.random()
        if roll < 0.25 or len(orders) < 50:
            return self._insert("orders")
        table = "orders" if roll < 0.85 else rng.choice(("customers", "products"))
        key = rng.choice(list(self.tables[table]))
        if (table, key) in touched:
            return None
        before = self.tables[table][key]
        if table == "orders" and roll < 0.35:
            return ("d", table, before, {"id": key})
        after = dict(before)
        if table == "orders":
            after.update(qty=rng.randrange(1, 10), status=rng.choice(STATUSES))
        elif table == "customers":
            after["tier"] = rng.choice(TIERS)
        else:
            after["price"] = Decimal(rng.randrange(100, 10_000)) / 100
        return ("u", table, before, after)

    def apply(self, statements: Sequence[Statement]) -> None:
        for op, table, _before, after in statements:
            if op == "d":
                del self.tables[table][after["id"]]
            else:
                self.tables[table][after["id"]] = after


def _sql(statement: Statement) -> tuple[str, tuple[Any, ...]]:
    op, table, _before, row = statement
    if op == "d":
        return f"DELETE FROM {table} WHERE id = %s", (row["id"],)
    names = COLUMNS[table]
    if op == "i":
        marks = ", ".join(["%s"] * len(names))
        return f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})", tuple(
            row[name] for name in names
        )
    sets = ", ".join(f"{name} = %s" for name in names[1:])
    values = (*(row[name] for name in names[1:]), row["id"])
    return f"UPDATE {table} SET {sets} WHERE id = %s", values


# --------------------------------------------------------------------------- the oracle


def elements_of(statement: Statement) -> list[tuple[Op, Element]]:
    """The element changes a row change must give (written from the docs, not the reader)."""
    op, table, _before, row = statement
    row_id = f"{table}:{row['id']}"
    if op == "d":
        changes = [(Op.DELETE, node(row_id, [table], {}))]
        return changes + [
            (Op.DELETE, relation(f"{label}:{row_id}", [label], row_id, ""))
            for label, _column, _target in (RELATIONS if table == "orders" else ())
        ]
    properties = {k: float(v) if isinstance(v, Decimal) else v for k, v in row.items()}
    code = Op.INSERT if op == "i" else Op.UPDATE
    changes = [(code, node(row_id, [table], properties))]
    if table == "orders":
        changes += [
            (code, relation(f"{label}:{row_id}", [label], row_id, f"{target}:{row[column]}"))
            for label, column, target in RELATIONS
        ]
    return changes


class ShopOracle:
    """The committed transactions replayed in order through a store and the engines."""

    def __init__(self) -> None:
        self.store = ElementStore()
        self.queries = {qid: ContinuousQuery(qid, text) for qid, text in QUERIES.items()}
        self.diffs: dict[str, list[list[dict[str, Any]]]] = {qid: [] for qid in QUERIES}
        self._number = 0

    def apply(self, statements: Sequence[Statement], record: bool) -> None:
        self._number += 1
        index = 0
        for statement in statements:
            for op, element in elements_of(statement):
                change = ElementChange(op, element, (self._number, 0, index), Timing(0))
                index += 1
                delta = self.store.apply(change)
                if delta is None:
                    continue
                for query_id, query in self.queries.items():
                    diffs = query.apply(delta)
                    if diffs and record:
                        self.diffs[query_id].append(list(diffs))


# --------------------------------------------------------------------------- the run


class PostgresChaos:
    """Writes the workload while killing the reader and restarting PostgreSQL and Redis."""

    def __init__(
        self,
        settings: PostgresChaosSettings,
        postgres: EmbeddedPostgres | None = None,
        echo: Callable[[str], Any] = print,
    ) -> None:
        self.settings = settings
        self.echo = echo
        self.report = PostgresChaosReport()
        self._postgres = postgres
        self._database = f"chaos_{uuid.uuid4().hex[:8]}"
        self._restarting = threading.Lock()

    def run(self) -> PostgresChaosReport:
        started = time.monotonic()
        owned = self._postgres is None
        postgres = self._postgres or EmbeddedPostgres().start()
        try:
            with EmbeddedRedis(appendonly=True, appendfsync="always") as server:
                self._run(postgres, server)
        finally:
            if owned:
                postgres.close()
        self.report.wall_s = round(time.monotonic() - started, 1)
        return self.report

    def _run(self, postgres: EmbeddedPostgres, server: EmbeddedRedis) -> None:
        shop, oracle = Shop(self.settings), ShopOracle()
        self._seed(postgres, shop, oracle)
        app = self._app(postgres, server.url).start()
        try:
            app.wait_until_idle(timeout=self.settings.idle_timeout_s)
            subscriptions = {
                query_id: app.subscribe(query_id, capacity=1_000_000) for query_id in QUERIES
            }
            self._write_under_fire(app, postgres, server, shop, oracle)
            app.wait_until_idle(timeout=self.settings.idle_timeout_s)
            self._verify(app, server.url, oracle, subscriptions)
        finally:
            app.stop()
            postgres.execute(f'DROP DATABASE IF EXISTS "{self._database}" WITH (FORCE)')

    def _seed(self, postgres: EmbeddedPostgres, shop: Shop, oracle: ShopOracle) -> None:
        postgres.create_database(self._database)
        postgres.execute(SCHEMA, self._database)
        seeded = [
            ("i", table, None, row) for table in COLUMNS for row in shop.tables[table].values()
        ]
        with postgres.connect(self._database, autocommit=False) as connection:
            with connection.cursor() as cursor:
                for statement in seeded:
                    cursor.execute(*_sql(statement))
            connection.commit()
        oracle.apply(seeded, record=False)

    def _app(self, postgres: EmbeddedPostgres, url: str) -> DrasiRay:
        app = DrasiRay(
            f"pgchaos-{uuid.uuid4().hex[:6]}", ray_config=RayConfig(include_dashboard=False)
        )
        app.add_source(
            source_builder(postgres, self._database, url, SOURCE)
            .with_tables(list(COLUMNS))
            .with_relation("PLACED_BY", "orders", ["customer_id"], "customers")
            .with_relation("OF", "orders", ["product_id"], "products")
            .with_consumer_settings(batch_size=200)
            .build()
        )
        for query_id, text in QUERIES.items():
            app.add_query(Query.cypher(query_id).query(text).from_source(SOURCE).build())
        return app

    def _write_under_fire(
        self,
        app: DrasiRay,
        postgres: EmbeddedPostgres,
        server: EmbeddedRedis,
        shop: Shop,
        oracle: ShopOracle,
    ) -> None:
        settings = self.settings
        faults = ["postgres"] * settings.postgres_restarts + ["redis"] * settings.redis_restarts
        random.Random(settings.seed).shuffle(faults)
        fault_at = drills.evenly_spaced(settings.changes, len(faults))
        writer = _Writer(postgres, self._database, self.report)
        kill_at = [
            settings.changes * (2 * i + 1) // (2 * settings.reader_kills)
            for i in range(settings.reader_kills)
        ]
        while self.report.row_changes < settings.changes:
            statements = shop.transaction()
            writer.commit(statements)
            shop.apply(statements)
            oracle.apply(statements, record=True)
            self.report.row_changes += len(statements)
            self.report.element_changes += sum(len(elements_of(s)) for s in statements)
            self.report.transactions += 1
            while fault_at and self.report.row_changes >= fault_at[0]:
                fault_at.pop(0)
                self._restart(faults.pop(0), postgres, server, writer)
            while kill_at and self.report.row_changes >= kill_at[0]:
                kill_at.pop(0)
                self._kill_reader(app)
        writer.close()

    def _restart(
        self, what: str, postgres: EmbeddedPostgres, server: EmbeddedRedis, writer: _Writer
    ) -> None:
        if what == "postgres":
            self.echo(f"  restarting postgres (pid {postgres.pid})")
            writer.close()
            postgres.restart("fast")
            self.report.postgres_restarts += 1
        else:
            self.echo(f"  restarting redis (pid {server.pid})")
            server.restart()
            self.report.redis_restarts += 1

    def _kill_reader(self, app: DrasiRay) -> None:
        actor = app.reader_actor(SOURCE)
        pid = wait_until(lambda: drills.actor_pid(actor), 60, what="the reader to be back")
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        self.report.reader_kills += 1
        self.report.log.append(f"reader pid {pid}")
        self.echo(f"  SIGKILL reader (pid {pid})")

    # -- verification -------------------------------------------------------------------

    def _verify(
        self, app: DrasiRay, url: str, oracle: ShopOracle, subscriptions: dict[str, Any]
    ) -> None:
        report = self.report
        reader = app.status().reader(SOURCE)
        report.reader_reconnects = reader.reconnects
        report.resent_skipped = reader.skipped_resent
        client = redis.Redis.from_url(url)
        stream = keys.postgres_stream(app.app_id, SOURCE)
        report.stream_entries = int(client.xlen(stream))
        after: Any = client.xrange(stream, f"({_snapshot_lsn(client, app)}-999999", "+")
        written = sum(len(decode_entry(i.decode(), fields).changes) for i, fields in after)
        report.duplicated = max(written - report.element_changes, 0)
        theirs = {element.id: element for element in app.elements(SOURCE)}
        ours = {element.id: element for element in oracle.store.elements()}
        in_store = drills.store_mismatches(ours, theirs, also=lambda element: element.end_id)
        report.lost = max(report.element_changes - written, 0) + in_store
        report.mismatched_rows = sum(
            drills.row_mismatches(oracle.queries[query_id].results(), app.results(query_id))
            for query_id in QUERIES
        )
        for query_id, subscription in subscriptions.items():
            got = [list(result.results) for result in subscription.drain()]
            want = oracle.diffs[query_id]
            report.diffs_compared += len(want)
            report.mismatched_diffs += abs(len(got) - len(want)) + sum(
                not diffs_match(expected, actual)
                for expected, actual in zip(want, got, strict=False)
            )


def _snapshot_lsn(client: redis.Redis, app: DrasiRay) -> int:
    raw = client.hget(keys.postgres_reader(app.app_id, SOURCE), "snapshot_lsn")
    return int(raw or 0)


class _Writer:
    """Commits transactions on one connection, through server restarts; each commit's
    outcome known (``chaos_log``)."""

    def __init__(
        self, postgres: EmbeddedPostgres, database: str, report: PostgresChaosReport
    ) -> None:
        self.dsn = postgres.dsn(database)
        self.report = report
        self.number = 0
        self.connection: Any = None

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def commit(self, statements: Sequence[Statement]) -> None:
        self.number += 1
        backoff = Backoff(0.05, 1.0)
        while True:
            try:
                self._attempt(statements)
                return
            except (psycopg2.OperationalError, psycopg2.InterfaceError):
                self.close()
                time.sleep(backoff.next_delay())
                if self._committed():
                    self.report.ambiguous_commits += 1
                    return

    def _attempt(self, statements: Sequence[Statement]) -> None:
        if self.connection is None:
            self.connection = psycopg2.connect(self.dsn)
        with self.connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(*_sql(statement))
            cursor.execute("INSERT INTO chaos_log VALUES (%s)", (self.number,))
        self.connection.commit()

    def _committed(self) -> bool:
        """Whether transaction ``number`` committed (asked once the server answers)."""

        def answer() -> tuple[bool] | None:  # None while the server is down
            try:
                with psycopg2.connect(self.dsn) as connection, connection.cursor() as cursor:
                    cursor.execute("SELECT 1 FROM chaos_log WHERE n = %s", (self.number,))
                    return (cursor.fetchone() is not None,)
            except psycopg2.OperationalError:
                return None

        outcome = wait_until(answer, 120, what="PostgreSQL to answer", poll_s=0.2)
        return bool(outcome and outcome[0])


def main(argv: Sequence[str] | None = None) -> int:
    defaults = PostgresChaosSettings()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--changes", type=int, default=defaults.changes)
    parser.add_argument("--reader-kills", type=int, default=defaults.reader_kills)
    parser.add_argument("--postgres-restarts", type=int, default=defaults.postgres_restarts)
    parser.add_argument("--redis-restarts", type=int, default=defaults.redis_restarts)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    args = parser.parse_args(argv)
    settings = PostgresChaosSettings(
        changes=args.changes,
        reader_kills=args.reader_kills,
        postgres_restarts=args.postgres_restarts,
        redis_restarts=args.redis_restarts,
        seed=args.seed,
    )
    report = PostgresChaos(settings).run()
    print("\n".join(report.lines()))
    print("PASSED" if report.passed else "FAILED: lost, duplicated or mismatched")
    return 0 if report.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
