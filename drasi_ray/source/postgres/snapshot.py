"""The tables' rows as of the snapshot the replication slot exported when it was created.

``CREATE_REPLICATION_SLOT ... EXPORT_SNAPSHOT`` returns the slot's consistent point and the
name of a snapshot that sees exactly the transactions committed before it: every later one is
streamed by the slot. A second connection reads the rows inside that snapshot (``REPEATABLE
READ`` with ``SET TRANSACTION SNAPSHOT``) while the replication connection waits (the snapshot
lives as long as that connection runs no other command), so the rows plus the slot's stream are
the tables' history with no gap and no overlap. Rows are read in batches through a server-side
cursor, each column as its text (``::text``: what pgoutput sends), so one mapping
(:mod:`.values`) serves both.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from psycopg2 import sql

from drasi_ray.source.postgres.tables import Row, TableInfo

BATCH_ROWS = 2000


def snapshot_rows(
    connection: Any, snapshot_name: str, tables: Sequence[TableInfo]
) -> Iterator[tuple[TableInfo, Row]]:
    """Every row of ``tables`` in the exported snapshot, table by table. ``connection`` must
    not be in autocommit mode; the transaction ends (read-only) when the rows are read."""
    connection.set_session(isolation_level="REPEATABLE READ", readonly=True)
    with connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION SNAPSHOT %s", (snapshot_name,))
    for table in tables:
        yield from _table_rows(connection, table)
    connection.commit()


def _table_rows(connection: Any, table: TableInfo) -> Iterator[tuple[TableInfo, Row]]:
    names = [column.name for column in table.columns]
    query = sql.SQL("SELECT {columns} FROM {table}").format(
        columns=sql.SQL(", ").join(
            sql.SQL("{}::text").format(sql.Identifier(name)) for name in names
        ),
        table=sql.Identifier(table.schema, table.name),
    )
    with connection.cursor(name=f"drasi_snapshot_{table.name}"[:63]) as cursor:
        cursor.itersize = BATCH_ROWS
        cursor.execute(query)
        for values in cursor:
            yield table, dict(zip(names, values, strict=True))
