"""pgoutput messages assembled into committed transactions of element changes.

pgoutput sends a transaction only once it committed, between its ``B`` and ``C`` messages, and
transactions in commit order. The assembler keeps the tables by relation OID (from ``R``
messages, which also bring a table's new columns after ``ALTER TABLE``), turns each row change
of a replicated table into element changes (:class:`~.tables.RowMapper`) and hands back the
whole transaction at its commit, with its end LSN and commit time. A ``TRUNCATE`` becomes a
:class:`Truncation` in the transaction's changes, resolved by the reader (it needs the elements
the store holds). A row it cannot map is left out and counted (:attr:`refused`), with the
reason logged: the rest of the transaction goes on.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TypeAlias

from drasi_ray.source.postgres.pgoutput import (
    Begin,
    Commit,
    Delete,
    Insert,
    LogicalMessage,
    Message,
    ProtocolError,
    Relation,
    Truncate,
    Update,
)
from drasi_ray.source.postgres.tables import Column, ElementChange, RowError, RowMapper, TableInfo

logger = logging.getLogger("drasi_ray.postgres")


@dataclass(frozen=True, slots=True)
class Truncation:
    """``TRUNCATE`` of these tables, at its place in the transaction."""

    tables: tuple[TableInfo, ...]


Step: TypeAlias = ElementChange | Truncation


@dataclass(slots=True)
class Transaction:
    """A committed transaction: its element changes (and truncations), in order."""

    end_lsn: int
    commit_time_us: int
    steps: list[Step] = field(default_factory=list)
    messages: list[LogicalMessage] = field(default_factory=list)
    """Its transactional logical messages (``pg_logical_emit_message(true, ...)``)."""

    @property
    def change_count(self) -> int:
        return sum(1 for step in self.steps if not isinstance(step, Truncation))


class TransactionAssembler:
    """Feeds on pgoutput messages; returns each transaction at its commit."""

    def __init__(self, mapper: RowMapper) -> None:
        self.mapper = mapper
        self._by_oid: dict[int, TableInfo | None] = {}
        self._open: Transaction | None = None
        self.refused = 0
        self.last_refusal: str | None = None

    def feed(self, message: Message) -> Transaction | None:
        """The committed transaction at its ``C``; else None."""
        if isinstance(message, (Insert, Update, Delete)):  # the most frequent first
            self._row(message)
        elif isinstance(message, Begin):
            self._open = Transaction(0, message.commit_time_us)
        elif isinstance(message, Commit):
            done = self._transaction()
            self._open = None
            done.end_lsn, done.commit_time_us = message.end_lsn, message.commit_time_us
            return done
        elif isinstance(message, Relation):
            self._relation(message)
        elif isinstance(message, Truncate):
            tables = tuple(
                t for oid in message.relation_oids if (t := self._table(oid)) is not None
            )
            if tables:
                self._transaction().steps.append(Truncation(tables))
        elif isinstance(message, LogicalMessage) and message.transactional:
            self._transaction().messages.append(message)
        return None

    def _transaction(self) -> Transaction:
        if self._open is None:
            raise ProtocolError("a change or commit outside a transaction")
        return self._open

    def _relation(self, message: Relation) -> None:
        known = self.mapper.tables.get((message.namespace, message.name))
        if known is None:
            self._by_oid[message.oid] = None  # published, but not one of the source's tables
            return
        columns = tuple(Column(column.name, column.type_oid) for column in message.columns)
        names = {column.name for column in columns}
        missing = [name for name in known.key if name not in names]
        if missing:
            raise ProtocolError(f"table {known.label} lost its key column(s) {missing}")
        table = known.with_columns(columns)
        self.mapper.tables[table.qualified] = table
        self._by_oid[message.oid] = table

    def _table(self, oid: int) -> TableInfo | None:
        if oid not in self._by_oid:
            raise ProtocolError(f"a change of relation {oid} before its relation message")
        return self._by_oid[oid]

    def _row(self, message: Insert | Update | Delete) -> None:
        table = self._table(message.relation_oid)
        if table is None:
            return
        mapper = self.mapper
        try:
            if isinstance(message, Insert):
                changes = mapper.insert(table, mapper.row_of(table, message.new))
            elif isinstance(message, Update):
                old = None if message.old is None else mapper.row_of(table, message.old)
                changes = mapper.update(table, old, mapper.row_of(table, message.new))
            else:
                changes = mapper.delete(table, mapper.row_of(table, message.old))
        except RowError as exc:
            self.refused += 1
            self.last_refusal = str(exc)
            logger.error("PostgreSQL source: a row change is left out: %s", exc)
            return
        self._transaction().steps.extend(changes)
