"""``PostgresReader``: a replication slot in, the source's Redis stream out, nothing lost.

One reader per PostgreSQL source (its Ray shell is :mod:`drasi_ray.actors.postgres`). In a
session it:

1. connects (:mod:`.connection`), checks the server, the role, the publication and the tables
   (:mod:`.catalog`): at the first start a problem is one :class:`PostgresSourceError` naming
   the database and the fix, which ``DrasiRay.start()`` raises;
2. takes a snapshot when the stream does not continue its slot yet (a fresh app, a snapshot
   that did not complete, a slot that is gone or lost its WAL): creates the slot with an
   exported snapshot, writes every row as an insert at the slot's consistent point, then a
   delete for each element the store holds that the snapshot does not (rows that went while
   the slot was missing), and records the snapshot complete;
3. streams (:mod:`.transactions`): each committed transaction becomes entries at its end LSN
   (:mod:`.entries`), written in one ``MULTI``/``EXEC`` with the others read so far, and only
   then is the slot's position confirmed (``flush_lsn``). A transaction ending at or below the
   stream's top is already on the stream (a re-send after a crash) and is skipped.

**Resume contract.** Whatever dies when (the reader, Redis, PostgreSQL), the slot's confirmed
position is at or below the stream's top: PostgreSQL re-sends from it, and what is already on
the stream is skipped, so the stream holds each committed transaction once, in commit order.
A session that fails is retried with backoff (capped at 5 s), after the first start for ever.

**TRUNCATE** deletes every element of the table that the store holds (after the stream is
applied up to the truncate) and those its transaction inserted before it.

**Sync.** :meth:`PostgresReader.sync` commits a transaction holding only a logical message
(``pg_logical_emit_message(true, ...)``) and waits until the reader has written everything read
before it: then every transaction committed before the call is on the stream (pgoutput sends
transactions in commit order). The app's ``wait_until_idle`` starts with it.
"""

from __future__ import annotations

import contextlib
import logging
import select
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import psycopg2
import redis

from drasi_ray.model.backoff import Backoff
from drasi_ray.model.changes import Element, Op
from drasi_ray.model.errors import PostgresSourceError
from drasi_ray.model.postgres_specs import PostgresSourceConfig, qualified_table
from drasi_ray.model.urls import redact_url
from drasi_ray.source.postgres import connection as pg
from drasi_ray.source.postgres.catalog import Catalog
from drasi_ray.source.postgres.entries import TimedChange, entries
from drasi_ray.source.postgres.pgoutput import format_lsn, parse, parse_lsn, unix_ns
from drasi_ray.source.postgres.snapshot import snapshot_rows
from drasi_ray.source.postgres.tables import ElementChange, RowError, RowMapper, TableInfo
from drasi_ray.source.postgres.transactions import Transaction, TransactionAssembler, Truncation
from drasi_ray.source.postgres.values import ValueReader
from drasi_ray.source.postgres.writer import StreamWriter
from drasi_ray.streams import admin

logger = logging.getLogger("drasi_ray.postgres")

KnownElements = Callable[[], Sequence[Element]]
"""The elements of the source the store holds (every shard's), asked once the stream is
applied up to its top."""

SYNC_PREFIX = "drasi-ray-sync"
STATUS_INTERVAL_S = 2.0
"""psycopg2's status updates (they carry the last position confirmed; also on every keepalive
the server asks)."""
CONFIRM_EVERY_S = 0.2
"""A confirmed position is sent at once if none was for this long."""
IDLE_WAIT_S = 0.2
LINGER_S = 0.0005
LINGER_FOR_S = 0.002
"""A transaction waits at most this long for the next before it is written (when the server
sends nothing within :data:`LINGER_S`, it is written at once)."""
FLUSH_CHANGES = 5000
"""Transactions read are written once they hold this many changes, or when the server has
nothing more to send right now."""
SNAPSHOT_WRITE_CHANGES = 10_000
SLOT_BUSY_S = 60.0
"""How long the reader waits for a slot a dead predecessor's walsender still holds."""


@dataclass(frozen=True, slots=True)
class ReaderReport:
    """A reader's status (``DrasiRay.status().readers[source]``)."""

    source_id: str
    state: str
    """``starting``, ``snapshot``, ``streaming``, ``recovering``, ``failed`` or ``stopped``."""
    slot: str
    database: str
    written_lsn: str
    transactions: int
    changes: int
    snapshot_rows: int
    snapshots: int
    skipped_resent: int
    truncations: int
    refused_rows: int
    reconnects: int
    last_error: str | None
    text_columns: list[str]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class PostgresReader:
    """Reads one source's slot onto its stream (see the module docstring). Thread-safe: the
    loop runs in :meth:`run` on one thread; :meth:`sync`, :meth:`report` and
    :meth:`wait_started` may be called from others."""

    def __init__(
        self,
        source_id: str,
        settings: PostgresSourceConfig,
        *,
        stream_key: str,
        state_key: str,
        consumer_group: str,
        known_elements: KnownElements,
    ) -> None:
        self.source_id = source_id
        self.settings = settings
        self.stream_key = stream_key
        self.state_key = state_key
        self.consumer_group = consumer_group
        self.known_elements = known_elements
        self.values = ValueReader(source_id)
        self._started = threading.Event()
        self._startup_error: PostgresSourceError | None = None
        self._state = "starting"
        self._written = 0
        self._counts = dict.fromkeys(
            ("transactions", "changes", "snapshot_rows", "snapshots", "skipped_resent",
             "truncations", "reconnects"), 0,
        )  # fmt: skip
        self._refused = 0
        self._last_error: str | None = None
        self._released: deque[str] = deque(maxlen=1024)
        self._released_changed = threading.Condition()
        self._sync_lock = threading.Lock()
        self._sync_connection: Any = None

    # -- the loop ------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Read until ``stop`` is set. Before the first start a failure ends the loop (and
        :meth:`wait_started` raises it); after it, failures are retried with backoff."""
        backoff = Backoff(0.2, 5.0)
        try:
            while not stop.is_set():
                try:
                    self._session(stop, backoff)
                except Exception as exc:  # every failure: explained, retried or reported
                    if not self._fail(exc):
                        return
                    stop.wait(backoff.next_delay())
        finally:
            self._state = "stopped" if self._state != "failed" else "failed"
            self._close_sync()

    def _fail(self, exc: BaseException) -> bool:
        """Record a failed session; False when the reader gives up (before its first start)."""
        error = self._explained(exc)
        self._last_error = str(error)
        if not self._started.is_set():
            self._startup_error = error
            self._state = "failed"
            self._started.set()
            return False
        self._state = "recovering"
        self._counts["reconnects"] += 1
        logger.warning("%s; retrying", error)
        return True

    def _explained(self, exc: BaseException) -> PostgresSourceError:
        if isinstance(exc, PostgresSourceError):
            return exc
        fatal = pg.fatal_or(exc, self.source_id, self.settings)
        if isinstance(fatal, PostgresSourceError):
            return fatal
        if isinstance(exc, redis.RedisError):
            what = f"Redis ({redact_url(self.settings.redis_url)})"
        else:
            what = pg.where(self.settings)
        return PostgresSourceError(
            f"PostgreSQL source {self.source_id!r}: {what}: {type(exc).__name__}: "
            f"{pg.error_text(exc)}"
        )

    def _session(self, stop: threading.Event, backoff: Backoff) -> None:
        password = pg.read_password(self.source_id, self.settings)
        client = redis.Redis.from_url(self.settings.redis_url, socket_timeout=30)
        with contextlib.ExitStack() as stack:
            stack.callback(client.close)
            conn = pg.connect(self.source_id, self.settings, password)
            stack.callback(conn.close)
            catalog = Catalog(conn, self.source_id, self.settings)
            catalog.check_server()
            tables = catalog.load_tables(catalog.publication_tables())
            for table in tables.values():
                self.values.announce(table.places, [c.type_oid for c in table.columns])
            mapper = RowMapper(tables, self.settings.relations, self.values)
            writer = StreamWriter(client, self.stream_key, self.state_key)
            replication = pg.connect(self.source_id, self.settings, password, replication=True)
            stack.callback(replication.close)
            if self._needs_snapshot(catalog, writer):
                self._snapshot(catalog, replication, writer, mapper, password, stop)
            self._stream(replication, writer, mapper, stop, backoff)

    # -- the snapshot --------------------------------------------------------------------

    def _needs_snapshot(self, catalog: Catalog, writer: StreamWriter) -> bool:
        state, slot = writer.state(), catalog.slot()
        settings = self.settings
        if state is None or state.snapshot_lsn is None:
            return True
        if (state.slot, state.database) != (settings.slot_name, settings.database):
            logger.warning(
                "PostgreSQL source %r: the stream continues slot %r of %r, not %r of %r: "
                "taking a new snapshot", self.source_id, state.slot, state.database,
                settings.slot_name, settings.database,
            )  # fmt: skip
            return True
        if slot is None or slot.lost:
            logger.warning(
                "PostgreSQL source %r: replication slot %r is %s: taking a new snapshot",
                self.source_id, settings.slot_name, "gone" if slot is None else "lost its WAL",
            )  # fmt: skip
            return True
        return False

    def _snapshot(
        self,
        catalog: Catalog,
        replication: Any,
        writer: StreamWriter,
        mapper: RowMapper,
        password: str | None,
        stop: threading.Event,
    ) -> None:
        """A new slot and its snapshot, written at the slot's consistent point."""
        self._state = "snapshot"
        writer.begin_snapshot(self.settings.slot_name, self.settings.database)
        self._drop_slot(catalog, stop)
        known = self._known(writer, stop) if writer.top_lsn() > 0 else []
        lsn, snapshot_name = self._create_slot(replication)
        ts_ns = time.time_ns()
        reader = pg.connect(self.source_id, self.settings, password)
        try:
            reader.autocommit = False
            rows = snapshot_rows(reader, snapshot_name, list(mapper.tables.values()))
            seen, index = self._write_rows(rows, mapper, writer, lsn, ts_ns)
        finally:
            reader.close()
        stale = [(Op.DELETE, element, ts_ns) for element in known if element.id not in seen]
        writer.write(entries(lsn, stale, self.settings.max_changes_per_entry, index))
        writer.complete_snapshot(lsn)
        self._written = lsn
        self._counts["snapshots"] += 1
        logger.info(
            "PostgreSQL source %r: snapshot at %s written (%d rows, %d stale elements deleted)",
            self.source_id, format_lsn(lsn), self._counts["snapshot_rows"], len(stale),
        )  # fmt: skip

    def _write_rows(
        self,
        rows: Iterator[tuple[TableInfo, Any]],
        mapper: RowMapper,
        writer: StreamWriter,
        lsn: int,
        ts_ns: int,
    ) -> tuple[set[str], int]:
        """Write the snapshot's rows as inserts; (ids written, next entry index)."""
        seen: set[str] = set()
        batch: list[TimedChange] = []
        index = 0
        limit = self.settings.max_changes_per_entry
        for table, row in rows:
            try:
                changes = mapper.insert(table, row)
            except RowError as exc:
                self._refuse(exc)
                continue
            self._counts["snapshot_rows"] += 1
            seen.update(element.id for _, element in changes)
            batch += [(op, element, ts_ns) for op, element in changes]
            if len(batch) >= SNAPSHOT_WRITE_CHANGES:
                items = entries(lsn, batch, limit, index)
                writer.write(items)
                index, batch = index + len(items), []
        items = entries(lsn, batch, limit, index)
        writer.write(items)
        return seen, index + len(items)

    def _drop_slot(self, catalog: Catalog, stop: threading.Event) -> None:
        """Drop the old slot; a dead reader's walsender may hold it for a moment."""
        deadline = time.monotonic() + SLOT_BUSY_S
        while catalog.slot() is not None:
            try:
                catalog.drop_slot()
            except psycopg2.errors.ObjectInUse:
                if time.monotonic() > deadline or stop.wait(0.5):
                    raise
            else:
                logger.warning(
                    "PostgreSQL source %r: dropped replication slot %r to take a new snapshot",
                    self.source_id, self.settings.slot_name,
                )  # fmt: skip

    def _create_slot(self, replication: Any) -> tuple[int, str]:
        """Create the slot with an exported snapshot: (consistent point, snapshot name)."""
        with replication.cursor() as cursor:
            cursor.execute(
                f'CREATE_REPLICATION_SLOT "{self.settings.slot_name}" LOGICAL pgoutput '
                "EXPORT_SNAPSHOT"
            )
            _slot, consistent_point, snapshot_name, _plugin = cursor.fetchone()
        return parse_lsn(consistent_point), str(snapshot_name)

    def _known(self, writer: StreamWriter, stop: threading.Event) -> list[Element]:
        """The store's elements once the stream is applied up to its top."""
        top = admin.last_generated_id(writer.client, self.stream_key)
        while not admin.stream_drained(writer.client, self.stream_key, self.consumer_group, top):
            if stop.wait(0.05):
                raise InterruptedError("stopped while waiting for the stream to be applied")
        return list(self.known_elements())

    # -- streaming -----------------------------------------------------------------------

    def _stream(
        self,
        replication: Any,
        writer: StreamWriter,
        mapper: RowMapper,
        stop: threading.Event,
        backoff: Backoff,
    ) -> None:
        cursor = replication.cursor()
        cursor.start_replication(
            slot_name=self.settings.slot_name,
            decode=False,
            status_interval=STATUS_INTERVAL_S,
            options={
                "proto_version": "1",
                "publication_names": self.settings.publication_name,
                "messages": "true",
            },
        )
        self._written = writer.top_lsn()
        stream = _Stream(self, cursor, writer, TransactionAssembler(mapper), stop)
        self._state = "streaming"
        self._started.set()
        backoff.reset()
        stream.run()

    def _refuse(self, exc: Exception) -> None:
        self._refused += 1
        self._last_error = str(exc)
        logger.error("PostgreSQL source %r: a row is left out: %s", self.source_id, exc)

    def _release(self, tokens: list[str]) -> None:
        if not tokens:
            return
        with self._released_changed:
            self._released.extend(tokens)
            self._released_changed.notify_all()
        tokens.clear()

    # -- for other threads ---------------------------------------------------------------

    def wait_started(self, timeout_s: float) -> None:
        """Return once the reader streams; raise its startup error (PostgresSourceError),
        also when it has not started within ``timeout_s``."""
        if not self._started.wait(timeout_s):
            raise PostgresSourceError(
                f"PostgreSQL source {self.source_id!r}: {pg.where(self.settings)}: the reader "
                f"did not start within {timeout_s:g} s (state {self._state}, last error "
                f"{self._last_error}); a large snapshot needs a longer start_timeout_s"
            )
        if self._startup_error is not None:
            raise self._startup_error

    def sync(self, timeout_s: float) -> None:
        """Return once every transaction committed before this call is on the stream."""
        token = uuid.uuid4().hex
        with self._sync_lock:
            try:
                self._emit(token)
            except psycopg2.Error:
                self._close_sync()  # a server restart: once more, on a new connection
                self._emit(token)
        deadline = time.monotonic() + timeout_s
        with self._released_changed:
            while token not in self._released:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(
                        f"PostgreSQL source {self.source_id!r}: the reader did not catch up "
                        f"within {timeout_s:g} s (state {self._state})"
                    )
                self._released_changed.wait(min(remaining, 1.0))

    def _emit(self, token: str) -> None:
        if self._sync_connection is None or self._sync_connection.closed:
            password = pg.read_password(self.source_id, self.settings)
            self._sync_connection = pg.connect(self.source_id, self.settings, password)
        with self._sync_connection.cursor() as cursor:
            cursor.execute("SELECT pg_logical_emit_message(true, %s, %s)", (SYNC_PREFIX, token))

    def _close_sync(self) -> None:
        connection, self._sync_connection = self._sync_connection, None
        if connection is not None:
            with contextlib.suppress(psycopg2.Error):
                connection.close()

    def report(self) -> ReaderReport:
        counts = self._counts
        return ReaderReport(
            self.source_id,
            self._state,
            self.settings.slot_name,
            self.settings.database,
            format_lsn(self._written),
            counts["transactions"],
            counts["changes"],
            counts["snapshot_rows"],
            counts["snapshots"],
            counts["skipped_resent"],
            counts["truncations"],
            self._refused,
            counts["reconnects"],
            self._last_error,
            sorted(self.values.warned),
        )


class _Stream:
    """One streaming session: read messages, write transactions, confirm, release syncs."""

    def __init__(
        self,
        reader: PostgresReader,
        cursor: Any,
        writer: StreamWriter,
        assembler: TransactionAssembler,
        stop: threading.Event,
    ) -> None:
        self.reader = reader
        self.cursor = cursor
        self.writer = writer
        self.assembler = assembler
        self.stop = stop
        self.pending: list[Transaction] = []
        self.pending_changes = 0
        self.tokens: list[str] = []
        self.refused = 0
        self.confirmed = 0
        self.confirmed_at = 0.0
        self.pending_since = 0.0

    def confirm(self, lsn: int, *, now: bool = False) -> None:
        """Confirm the slot up to ``lsn`` (all of it is on the stream). Sent at once at most
        every :data:`CONFIRM_EVERY_S` (and at the end of the session), else with psycopg2's
        next status update: the less PostgreSQL has to send again after a restart."""
        lsn = max(lsn, self.confirmed)
        due = now or time.monotonic() - self.confirmed_at >= CONFIRM_EVERY_S
        self.cursor.send_feedback(flush_lsn=lsn, force=due and lsn > self.confirmed)
        if due:
            self.confirmed, self.confirmed_at = lsn, time.monotonic()

    def run(self) -> None:
        connection = self.cursor.connection
        while not self.stop.is_set():
            message = self.cursor.read_message()
            if message is None:
                if self.lingers() and select.select([connection], [], [], LINGER_S)[0]:
                    continue  # more is coming: write it with what is pending
                self.flush()
                select.select([connection], [], [], IDLE_WAIT_S)
                continue
            transaction = self.assembler.feed(parse(message.payload))
            if transaction is not None:
                self.take(transaction)
            if self.assembler.refused != self.refused:
                self.reader._refused += self.assembler.refused - self.refused
                self.reader._last_error = self.assembler.last_refusal
                self.refused = self.assembler.refused
            if self.pending_changes >= FLUSH_CHANGES:
                self.flush()
        self.flush()
        if self.reader._written:
            self.confirm(self.reader._written, now=True)  # a stop: nothing for a restart to redo

    def lingers(self) -> bool:
        """Whether to wait a moment for more before writing what is pending: while the oldest
        pending transaction is younger than :data:`LINGER_FOR_S`. A backlog is then written
        in few large writes (one Redis round trip each) instead of one per transaction."""
        return bool(self.pending) and time.monotonic() - self.pending_since < LINGER_FOR_S

    def take(self, transaction: Transaction) -> None:
        self.tokens += [
            message.content.decode("ascii", "replace")
            for message in transaction.messages
            if message.prefix == SYNC_PREFIX
        ]
        if transaction.end_lsn <= self.reader._written:
            self.reader._counts["skipped_resent"] += 1
            self.confirm(transaction.end_lsn)
            return
        if not self.pending:
            self.pending_since = time.monotonic()
        self.pending.append(transaction)
        self.pending_changes += len(transaction.steps)

    def flush(self) -> None:
        """Write every pending transaction (one MULTI/EXEC), then confirm, then release the
        syncs read after them."""
        if self.pending:
            self.writer.write(self.entries())
            end = self.pending[-1].end_lsn
            self.reader._written = end
            self.confirm(end)
            counts = self.reader._counts
            counts["transactions"] += sum(1 for t in self.pending if t.steps)  # not syncs
            counts["changes"] += sum(t.change_count for t in self.pending)
            self.pending, self.pending_changes = [], 0
        self.reader._release(self.tokens)

    def entries(self) -> list[tuple[str, bytes]]:
        """The pending transactions as entries: consecutive ones share entries (each entry at
        the end LSN of the last transaction it holds), up to ``max_changes_per_entry``
        changes; a transaction with a truncation first writes what comes before it, so the
        store's elements are known up to it (:meth:`resolve`)."""
        limit = self.reader.settings.max_changes_per_entry
        items: list[tuple[str, bytes]] = []
        group: list[TimedChange] = []
        group_end = 0
        for transaction in self.pending:
            if any(isinstance(step, Truncation) for step in transaction.steps):
                if group:
                    items += entries(group_end, group, limit)
                    group = []
                self.writer.write(items)
                items = []
                changes = self.resolve(transaction)
            else:
                changes = [step for step in transaction.steps if not isinstance(step, Truncation)]
            if group and len(group) + len(changes) > limit:
                items += entries(group_end, group, limit)
                group = []
            ts_ns = unix_ns(transaction.commit_time_us)
            group += [(op, element, ts_ns) for op, element in changes]
            group_end = transaction.end_lsn
        if group:
            items += entries(group_end, group, limit)
        return items

    def resolve(self, transaction: Transaction) -> list[ElementChange]:
        """The transaction's changes with each truncation as deletes of its tables' elements:
        those the store holds, as changed by the transaction's own earlier steps."""
        reader = self.reader
        live = {element.id: element for element in reader._known(self.writer, self.stop)}
        changes: list[ElementChange] = []
        for step in transaction.steps:
            if isinstance(step, Truncation):
                doomed = [e for e in live.values() if _of_tables(e, step.tables, reader.settings)]
                changes += [(Op.DELETE, element) for element in doomed]
                for element in doomed:
                    live.pop(element.id, None)
                reader._counts["truncations"] += 1
                continue
            op, element = step
            if op is Op.DELETE:
                live.pop(element.id, None)
            else:
                live[element.id] = element
            changes.append(step)
        return changes


def _of_tables(
    element: Element, tables: Sequence[TableInfo], settings: PostgresSourceConfig
) -> bool:
    """Whether ``element`` is a row of ``tables`` or a declared relation starting at one."""
    labels = {table.label for table in tables}
    if element.is_node:
        return bool(labels.intersection(element.labels))
    names = {table.qualified for table in tables}
    relation_labels = {
        spec.label for spec in settings.relations if qualified_table(spec.table) in names
    }
    starts = tuple(f"{label}:" for label in labels)
    return bool(relation_labels.intersection(element.labels)) and bool(
        element.start_id and element.start_id.startswith(starts)
    )
