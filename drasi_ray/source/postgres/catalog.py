"""What the reader asks the database before it reads: is it set up, which tables, which keys.

Every check that fails raises :class:`PostgresSourceError` naming the source and the database
and saying what to change (the SQL to run, where there is one). :func:`load_tables` refuses a
table whose rows the reader could not name on delete: no key, and no ``REPLICA IDENTITY FULL``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from drasi_ray.model.errors import PostgresSourceError
from drasi_ray.model.postgres_specs import PostgresSourceConfig, RelationSpec, qualified_table
from drasi_ray.source.postgres.connection import where
from drasi_ray.source.postgres.pgoutput import parse_lsn
from drasi_ray.source.postgres.tables import Column, TableInfo

MIN_VERSION = 140_000
"""PostgreSQL 14: pgoutput passes logical messages on (the reader's sync markers), and the
catalog has every column read here (``wal_status``, ``attgenerated``)."""


@dataclass(frozen=True, slots=True)
class SlotInfo:
    """A replication slot as ``pg_replication_slots`` shows it."""

    name: str
    plugin: str | None
    database: str | None
    active_pid: int | None
    confirmed_lsn: int | None
    wal_status: str | None

    @property
    def lost(self) -> bool:
        """The server removed WAL the slot needed (``max_slot_wal_keep_size``)."""
        return self.wal_status == "lost"


class Catalog:
    """The catalog queries of one source, on one autocommit connection."""

    def __init__(self, connection: Any, source_id: str, settings: PostgresSourceConfig) -> None:
        self.connection = connection
        self.source_id = source_id
        self.settings = settings

    def error(self, message: str) -> PostgresSourceError:
        return PostgresSourceError(
            f"PostgreSQL source {self.source_id!r}: {where(self.settings)}: {message}"
        )

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with self.connection.cursor() as cursor:
            cursor.execute(sql, params or None)
            return list(cursor.fetchall())

    def one(self, sql: str, *params: Any) -> tuple[Any, ...] | None:
        found = self.rows(sql, *params)
        return found[0] if found else None

    # -- the server and the role ---------------------------------------------------------

    def check_server(self) -> int:
        """The server's version number, after checking it can do what the reader needs."""
        version, wal_level, encoding = self.one(
            "SELECT current_setting('server_version_num')::int, current_setting('wal_level'), "
            "current_setting('server_encoding')"
        ) or (0, "", "")
        if version < MIN_VERSION:
            raise self.error(f"PostgreSQL {version} is too old: the reader needs 14 or newer")
        if wal_level != "logical":
            raise self.error(
                f"wal_level is {wal_level!r}: set wal_level = logical (ALTER SYSTEM SET "
                "wal_level = logical) and restart the server"
            )
        if encoding != "UTF8":
            raise self.error(f"the database encoding is {encoding}: only UTF8 is supported")
        may_replicate = self.one(
            "SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user"
        )
        if not may_replicate or not may_replicate[0]:
            raise self.error(
                f"the role may not use replication: ALTER ROLE {self.settings.user} WITH "
                "REPLICATION"
            )
        return int(version)

    # -- the publication and its tables ---------------------------------------------------

    def publication_tables(self) -> list[tuple[str, str]]:
        """The tables to replicate, each checked to be in the publication."""
        name = self.settings.publication_name
        if self.one("SELECT 1 FROM pg_publication WHERE pubname = %s", name) is None:
            tables = ", ".join(self.settings.tables) or "<table>, ..."
            raise self.error(
                f"no publication {name!r}: CREATE PUBLICATION {name} FOR TABLE {tables}"
            )
        published = [
            (str(schema), str(table))
            for schema, table in self.rows(
                "SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = %s "
                "ORDER BY schemaname, tablename",
                name,
            )
        ]
        if not self.settings.tables:
            if not published:
                raise self.error(
                    f"publication {name!r} has no tables: ALTER PUBLICATION {name} ADD TABLE .."
                )
            return published
        wanted = [qualified_table(table) for table in self.settings.tables]
        missing = [
            f"{schema}.{table}" for schema, table in wanted if (schema, table) not in published
        ]
        if missing:
            raise self.error(
                f"publication {name!r} does not publish {', '.join(missing)}: ALTER PUBLICATION "
                f"{name} ADD TABLE {', '.join(missing)}"
            )
        return wanted

    def load_tables(self, names: Sequence[tuple[str, str]]) -> dict[tuple[str, str], TableInfo]:
        """Each table's columns and key; refuses a table the reader cannot key."""
        tables = {name: self.load_table(*name) for name in names}
        for spec in self.settings.relations:
            self._check_relation(spec, tables)
        return tables

    def load_table(self, schema: str, name: str) -> TableInfo:
        found = self.one(
            "SELECT c.oid, c.relreplident, has_table_privilege(c.oid, 'SELECT') "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = %s AND c.relkind IN ('r', 'p')",
            schema,
            name,
        )
        label = name if schema == "public" else f"{schema}.{name}"
        if found is None:
            raise self.error(f"no table {label}")
        oid, identity, may_select = found
        if not may_select:
            raise self.error(
                f"no SELECT on {label}: GRANT SELECT ON {label} TO {self.settings.user}"
            )
        columns = self._columns(oid)
        key, origin = self._key(schema, name, oid, str(identity), columns)
        return TableInfo(schema, name, columns, key, origin)

    def _columns(self, oid: int) -> tuple[Column, ...]:
        rows = self.rows(
            "SELECT attname, atttypid::int FROM pg_attribute WHERE attrelid = %s AND attnum > 0 "
            "AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
            oid,
        )
        return tuple(Column(str(column), int(type_oid)) for column, type_oid in rows)

    def _index_columns(self, oid: int, condition: str) -> tuple[str, ...]:
        rows = self.rows(
            "SELECT a.attname FROM pg_index i JOIN LATERAL unnest(i.indkey) WITH ORDINALITY "
            "AS k(attnum, position) ON true JOIN pg_attribute a ON a.attrelid = i.indrelid "
            f"AND a.attnum = k.attnum WHERE i.indrelid = %s AND {condition} ORDER BY k.position",
            oid,
        )
        return tuple(str(column) for (column,) in rows)

    def _key(
        self, schema: str, name: str, oid: int, identity: str, columns: tuple[Column, ...]
    ) -> tuple[tuple[str, ...], str]:
        """The key columns and their origin (tables.py); refuses an unkeyable table."""
        label = name if schema == "public" else f"{schema}.{name}"
        primary = self._index_columns(oid, "i.indisprimary")
        replident = self._index_columns(oid, "i.indisreplident")
        carried = {"d": primary, "i": replident}.get(identity, ())
        configured = self.settings.key_columns(f"{schema}.{name}")
        if identity == "n":
            raise self.error(
                f"table {label} has REPLICA IDENTITY NOTHING: its updates and deletes name no "
                f"row; ALTER TABLE {label} REPLICA IDENTITY DEFAULT (with a primary key) or FULL"
            )
        if configured is not None:
            unknown = [column for column in configured if column not in {c.name for c in columns}]
            if unknown:
                raise self.error(f"table_keys: table {label} has no column {', '.join(unknown)}")
            if identity != "f" and not set(configured) <= set(carried):
                raise self.error(
                    f"table_keys of {label} ({', '.join(configured)}) are not all in its replica "
                    f"identity ({', '.join(carried) or 'none'}), so a delete would not carry "
                    f"them: ALTER TABLE {label} REPLICA IDENTITY FULL"
                )
            return configured, "table_keys"
        if primary:
            return primary, "primary key"
        if replident:
            return replident, "replica identity"
        if identity == "f":
            return (), "full row"
        raise self.error(
            f"table {label} has no primary key and no REPLICA IDENTITY FULL, so its rows have no "
            f"id: add a primary key, set table_keys with ALTER TABLE {label} REPLICA IDENTITY "
            f"FULL, or just ALTER TABLE {label} REPLICA IDENTITY FULL (every column is the key)"
        )

    def _check_relation(self, spec: RelationSpec, tables: dict[tuple[str, str], TableInfo]) -> None:
        source, target = (
            tables.get(qualified_table(spec.table)),
            tables.get(qualified_table(spec.references)),
        )
        if source is None or target is None:
            missing = spec.table if source is None else spec.references
            raise self.error(f"relations: {missing!r} is not one of the replicated tables")
        names = {column.name for column in source.columns}
        unknown = [column for column in spec.columns if column not in names]
        if unknown:
            raise self.error(f"relations: table {source.label} has no column {', '.join(unknown)}")
        arity = len(target.key) or len(target.columns)
        if arity != len(spec.columns):
            raise self.error(
                f"relations: {spec.label} names {len(spec.columns)} column(s) but the key of "
                f"{target.label} has {arity}"
            )

    # -- the slot ------------------------------------------------------------------------

    def slot(self) -> SlotInfo | None:
        found = self.one(
            "SELECT plugin, database, active_pid, confirmed_flush_lsn::text, wal_status "
            "FROM pg_replication_slots WHERE slot_name = %s",
            self.settings.slot_name,
        )
        if found is None:
            return None
        plugin, database, pid, confirmed, wal_status = found
        info = SlotInfo(
            self.settings.slot_name,
            plugin,
            database,
            pid,
            parse_lsn(confirmed) if confirmed else None,
            wal_status,
        )
        if info.plugin != "pgoutput" or info.database != self.settings.database:
            raise self.error(
                f"replication slot {info.name!r} belongs to database {info.database!r} with "
                f"plugin {info.plugin!r}: give this source a slot_name of its own"
            )
        return info

    def drop_slot(self) -> None:
        """Drop the source's slot; raises psycopg2.Error while a walsender still holds it."""
        self.rows(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
            "WHERE slot_name = %s",
            self.settings.slot_name,
        )
