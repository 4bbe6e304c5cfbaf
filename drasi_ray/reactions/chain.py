"""Query chaining, beyond Drasi (drasi-core issue #142): a query's results as another's source.

A query ``b`` that reads query ``a`` (``Query.cypher("b").from_query("a")``) sees ``a``'s current
result set as nodes labelled ``a``, one per result row, whose properties are the row's columns.
The nodes travel on a Redis stream, ``drasi:<app>:chain:a`` (:func:`~drasi_ray.model.keys.
chain_stream`), written by the :class:`ChainPublisher` inside ``a``'s query in Drasi's platform
change format, and a platform source named ``a`` reads it with a consumer group like any other
source. So ``b`` gets the same at-least-once delivery, versioning by stream position,
dead-lettering and restart behaviour as from any Redis source.

What is written, and the guarantees:

- A row's node is named by the row's id (:mod:`drasi_ray.query.row_ids`): the elements its
  MATCH binds, or the grouping values of the aggregation that made it. The publisher is handed
  the rows each change of ``a`` changed, by id (:meth:`~drasi_ray.host.runner.QueryRunner.
  watch_rows`), whatever diff reported them (ADD, UPDATE, DELETE, an aggregation's update of
  its group, or none: an OPTIONAL MATCH null row that comes back silently), and writes each
  node as its row now is: an insert (``i``) of a new row, an update (``u``, every column: the
  whole row) of a changed one, a delete (``d``) of a row gone; a held row whose columns are
  not the row's (the query's text changed between runs) is replaced by an insert, which
  replaces a node whole. So a group's node is updated in place and deleted only when ``a``'s
  result set loses the row (Drasi keeps an emptied group of the last part at its identity
  values), and two rows of equal values (Drasi's multiset) are two nodes. A node's time is
  the time of the change (or the due time of the re-evaluation) that last changed its row.
- The rows written so far live in the hash ``drasi:<app>:chain:a:rows`` (node id -> the row's
  JSON), kept in the same Redis transaction (MULTI/EXEC) as the stream entries: the stream and
  the hash never disagree. A write that failed is retried until it succeeds, and a retry after
  an unknown outcome (the reply was lost) is recognised by the batch token written with it, so
  no entry is written twice. A large batch is written as several entries (at most
  :data:`ENTRY_EVENTS` events and about :data:`ENTRY_BYTES` each) in the one transaction.
- Every time ``a`` is bootstrapped (its start, a restart of its host, a restart of a store
  shard or the coordinator) the publisher compares ``a``'s rows by id with the hash and
  writes the difference (deletes of the rows gone, inserts of the rows new or changed): what
  a crash kept from being written is caught up, nothing is written twice, and row ids being
  the same after a rebuild, a row that survived keeps its node.
- A restart of ``b`` (or of its consumers) is a restart of a source's reader: pending entries
  are re-read, applied at most once by version.

The publisher's queue is unbounded (results are never dropped for chaining); a slow Redis
delays only ``b``.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import redis.asyncio as aioredis

from drasi_ray.model import keys
from drasi_ray.model.backoff import Backoff
from drasi_ray.model.encoding import dumps
from drasi_ray.model.results import ControlResult, Delivered
from drasi_ray.reactions.base import Pending, stop_task
from drasi_ray.source.decode import encode_cloud_event

logger = logging.getLogger("drasi_ray.reaction")

Row = dict[str, Any]
RowChanges = Mapping[str, Row | None]
"""Rows by row id: each as it now is, None for a row gone."""

ENTRY_EVENTS = 500
"""Node changes per chain stream entry at most."""
ENTRY_BYTES = 1 << 20
"""An entry holding more than one change is split above this size (a reader dead-letters an
entry over its ``max_payload_bytes``, 4 MiB by default)."""


@dataclass(frozen=True, slots=True)
class NodeChange:
    """One change of a row node: ``op`` is the platform code (``i`` insert, ``u`` update,
    ``d`` delete); ``time_ms`` the time of the change of the row."""

    op: str
    node_id: str
    row: Row
    time_ms: int


@dataclass(slots=True)
class Plan:
    """What one write does: the node changes, and the hash updates that go with them."""

    changes: list[NodeChange] = field(default_factory=list)
    put: dict[str, bytes] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    token: str = field(default_factory=lambda: uuid.uuid4().hex)


def content(row: Mapping[str, Any]) -> bytes:
    """A row as the hash holds it, and rows are compared by: its JSON with sorted keys."""
    return dumps(dict(row), sort_keys=True)


class RowLedger:
    """The rows published, by node id (no I/O).

    Planning updates the ledger at once; the caller then writes the plan until it succeeds,
    so the ledger and the hash agree once the write is done.
    """

    def __init__(self, query_id: str, rows: Mapping[str, bytes]) -> None:
        self.query_id = query_id
        self._rows: dict[str, bytes] = dict(rows)

    def __len__(self) -> int:
        return len(self._rows)

    def rows(self) -> dict[str, Row]:
        return {node_id: orjson.loads(row) for node_id, row in self._rows.items()}

    def contents(self) -> dict[str, bytes]:
        """The rows as the hash holds them (node id -> :func:`content`)."""
        return dict(self._rows)

    def plan_changes(self, batches: Iterable[tuple[RowChanges, int]]) -> Plan:
        """The node changes that bring the published rows to what ``batches`` (row changes
        with their time, in order) leave: per node the last state, if it differs."""
        final: dict[str, tuple[Row | None, int]] = {}
        for changes, time_ms in batches:
            for node_id, row in changes.items():
                final[node_id] = (row, time_ms)
        plan = Plan()
        for node_id, (row, time_ms) in final.items():
            self._bring(node_id, row, time_ms, plan)
        return plan

    def plan_reconcile(self, current: Mapping[str, Row], time_ms: int) -> Plan:
        """Deletes of the published rows not in ``current``, inserts of those new or changed."""
        plan = Plan()
        for node_id in [node_id for node_id in self._rows if node_id not in current]:
            self._bring(node_id, None, time_ms, plan)
        for node_id, row in current.items():
            self._bring(node_id, row, time_ms, plan)
        return plan

    def _bring(self, node_id: str, row: Row | None, time_ms: int, plan: Plan) -> None:
        held = self._rows.get(node_id)
        if row is None:
            if held is not None:
                del self._rows[node_id]
                plan.changes.append(NodeChange("d", node_id, orjson.loads(held), time_ms))
                plan.dropped.append(node_id)
            return
        text = content(row)
        if text != held:
            self._rows[node_id] = plan.put[node_id] = text
            op = "u" if held is not None and orjson.loads(held).keys() == row.keys() else "i"
            plan.changes.append(NodeChange(op, node_id, dict(row), time_ms))


def platform_events(query_id: str, changes: Sequence[NodeChange]) -> list[dict[str, Any]]:
    """The node changes as platform change events (labels: the query's id)."""
    events = []
    for change in changes:
        element = {"id": change.node_id, "labels": [query_id], "properties": change.row}
        side = "before" if change.op == "d" else "after"
        source = {"db": "drasi-ray-chain", "table": "node", "ts_ns": change.time_ms * 1_000_000}
        events.append({"op": change.op, "payload": {side: element, "source": source}})
    return events


def entry_payloads(query_id: str, changes: Sequence[NodeChange]) -> list[bytes]:
    """The stream entries (CloudEvent JSON) of ``changes``, in order: at most
    :data:`ENTRY_EVENTS` events each, halved while an entry of several is over
    :data:`ENTRY_BYTES`."""
    payloads: list[bytes] = []
    for start in range(0, len(changes), ENTRY_EVENTS):
        _split(platform_events(query_id, changes[start : start + ENTRY_EVENTS]), payloads)
    return payloads


def _split(events: list[dict[str, Any]], payloads: list[bytes]) -> None:
    payload = encode_cloud_event(events)
    if len(payload) <= ENTRY_BYTES or len(events) == 1:
        payloads.append(payload)
        return
    half = len(events) // 2
    _split(events[:half], payloads)
    _split(events[half:], payloads)


@dataclass(frozen=True, slots=True)
class _Rows:
    changes: RowChanges
    time_ms: int


@dataclass(frozen=True, slots=True)
class _Reconcile:
    rows: Mapping[str, Row]
    time_ms: int


class ChainPublisher:
    """Writes one query's result rows to its chain stream (see the module docstring)."""

    def __init__(self, query_id: str, app_id: str, redis_url: str) -> None:
        self.query_id = query_id
        self.stream = keys.chain_stream(app_id, query_id)
        self.rows_key = keys.chain_rows(app_id, query_id)
        self._url = redis_url
        self._queue: list[_Rows | _Reconcile] = []
        self._pending = Pending()
        self._ledger: RowLedger | None = None
        self._task: asyncio.Task[None] | None = None
        self._client: aioredis.Redis | None = None
        self.written = 0

    def start(self) -> None:
        self._task = asyncio.get_event_loop().create_task(self._run(), name=self.stream)

    def rows_changed(self, changes: RowChanges, time_ms: int) -> None:
        """Queue the rows one change of the query changed (a
        :data:`~drasi_ray.host.runner.RowWatcher`)."""
        self._push(_Rows(changes, time_ms))

    def bootstrapped(self, rows: Mapping[str, Row], time_ms: int) -> None:
        """The query's rows by id right after a bootstrap: the published rows are brought to
        them (read when the bootstrap finished, in order with the row changes)."""
        self._push(_Reconcile(rows, time_ms))

    def _push(self, item: _Rows | _Reconcile) -> None:
        self._queue.append(item)
        self._pending.queued()

    async def flush(self, timeout_s: float) -> bool:
        """Wait until everything queued so far is written; False on timeout."""
        return await self._pending.flush(timeout_s)

    async def close(self) -> None:
        await stop_task(self._task)
        if self._client is not None:
            await self._client.aclose()

    async def _run(self) -> None:
        self._client = aioredis.Redis.from_url(self._url)
        self._ledger = await self._retrying(self._load)
        while True:
            await self._pending.next_work(len(self._queue))
            batch, self._queue = self._queue, []
            for plan in self._plans(self._ledger, batch):
                if plan.changes:
                    await self._retrying(lambda plan=plan: self._write(plan))  # type: ignore[misc]
                    self.written += len(plan.changes)

    @staticmethod
    def _plans(ledger: RowLedger, batch: Sequence[_Rows | _Reconcile]) -> list[Plan]:
        """One plan per run of row changes, one per reconciliation, in order."""
        plans: list[Plan] = []
        run: list[tuple[RowChanges, int]] = []
        for item in batch:
            if isinstance(item, _Rows):
                run.append((item.changes, item.time_ms))
                continue
            if run:
                plans.append(ledger.plan_changes(run))
                run = []
            plans.append(ledger.plan_reconcile(item.rows, item.time_ms))
        if run:
            plans.append(ledger.plan_changes(run))
        return plans

    async def _load(self) -> RowLedger:
        assert self._client is not None
        raw = await self._client.hgetall(self.rows_key)
        return RowLedger(self.query_id, {_text(key): _bytes(value) for key, value in raw.items()})

    async def _write(self, plan: Plan) -> None:
        """The stream entries and the hash updates in one transaction (skipped when a
        previous attempt of the same plan already committed)."""
        assert self._client is not None
        if await self._client.get(self.rows_key + ":token") == plan.token.encode():
            return
        payloads = entry_payloads(self.query_id, plan.changes)
        async with self._client.pipeline(transaction=True) as pipe:
            for payload in payloads:
                pipe.xadd(self.stream, {"data": payload})
            if plan.put:
                pipe.hset(self.rows_key, mapping={k: v for k, v in plan.put.items()})
            if plan.dropped:
                pipe.hdel(self.rows_key, *plan.dropped)
            pipe.set(self.rows_key + ":token", plan.token)
            await pipe.execute()

    async def _retrying(self, action: Any) -> Any:
        backoff = Backoff()
        while True:
            try:
                return await action()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis down or refusing: keep the plan, try again
                logger.warning("chain %s: %s; retrying", self.stream, exc)
                await backoff.wait()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _bytes(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode()


def is_bootstrap_done(item: Delivered) -> bool:
    """Whether ``item`` is the signal that the query finished (re)loading its graph."""
    return isinstance(item, ControlResult) and item.signal.value == "bootstrapCompleted"
