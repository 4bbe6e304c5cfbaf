"""Query chaining, beyond Drasi (drasi-core issue #142): a query's results as another's source.

A query ``b`` that reads query ``a`` (``Query.cypher("b").from_query("a")``) sees each result row
of ``a`` as a node labelled ``a`` whose properties are the row's columns. The rows travel on a
Redis stream, ``drasi:<app>:chain:a`` (:func:`~drasi_ray.model.keys.chain_stream`), written by
the :class:`ChainPublisher` inside ``a``'s query actor in Drasi's platform change format, and a
platform source named ``a`` reads it with a consumer group like any other source. So ``b`` gets
the same at-least-once delivery, versioning by stream position, dead-lettering and restart
behaviour as from any Redis source.

What is written, and the guarantees:

- Each result of ``a`` becomes one stream entry: an ADD inserts a node with a new id
  (``a:<n>``), a DELETE deletes the node holding that row, an UPDATE (and an aggregation's
  update of its group) replaces the properties of the node holding the ``before`` row, so ``b``
  sees an update of the same element. Rows are matched by content (equal rows are
  interchangeable).
- The rows written so far live in the hash ``drasi:<app>:chain:a:rows`` (node id -> row), kept
  in the same Redis transaction (MULTI/EXEC) as the stream entry: the stream and the hash never
  disagree. A write that failed is retried until it succeeds, and a retry after an unknown
  outcome (the reply was lost) is recognised by the batch token written with it, so no entry is
  written twice.
- Every time ``a`` is bootstrapped (its start, a restart of its actor, a restart of the
  coordinator) the publisher compares ``a``'s results with the rows in the hash and writes the
  difference as one entry (deletes of the rows gone, inserts of the rows new): results that a
  crash kept from being written are caught up, none is written twice, and ``b`` needs nothing
  of ``a`` but the stream.
- A restart of ``b`` (or of its consumers) is a restart of a source's reader: pending entries
  are re-read, applied at most once by version.

The publisher's queue is unbounded (results are never dropped for chaining); a slow Redis
delays only ``b``.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import redis.asyncio as aioredis

from drasi_ray.model import keys
from drasi_ray.model.backoff import Backoff
from drasi_ray.model.encoding import dumps
from drasi_ray.model.results import ControlResult, Delivered, QueryResult
from drasi_ray.reactions.base import Pending, stop_task
from drasi_ray.source.decode import encode_cloud_event

logger = logging.getLogger("drasi_ray.reaction")

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class NodeChange:
    """One change of a row node: ``op`` is the platform code (``i`` replace, ``d`` delete)."""

    op: str
    node_id: str
    row: Row


@dataclass(slots=True)
class Plan:
    """What one write does: the node changes, and the hash updates that go with them."""

    changes: list[NodeChange] = field(default_factory=list)
    put: dict[str, Row] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    next_number: int = 0
    token: str = field(default_factory=lambda: uuid.uuid4().hex)


def content(row: Mapping[str, Any]) -> bytes:
    """The key rows are matched by: their JSON with sorted keys."""
    return dumps(dict(row), sort_keys=True)


class RowLedger:
    """The rows published and the nodes holding them (no I/O).

    Planning a batch updates the ledger at once; the caller then writes the plan until it
    succeeds, so the ledger and the hash agree once the write is done.
    """

    def __init__(self, query_id: str, rows: Mapping[str, Row], next_number: int) -> None:
        self.query_id = query_id
        self._next = next_number
        self._rows: dict[str, Row] = dict(rows)
        self._by_content: dict[bytes, list[str]] = {}
        for node_id, row in self._rows.items():
            self._by_content.setdefault(content(row), []).append(node_id)

    def __len__(self) -> int:
        return len(self._rows)

    def rows(self) -> dict[str, Row]:
        return dict(self._rows)

    def plan_results(self, results: Iterable[QueryResult]) -> Plan:
        plan = Plan()
        for result in results:
            for diff in result.results:
                self._diff(diff, plan)
        plan.next_number = self._next
        return plan

    def plan_reconcile(self, current: Sequence[Row]) -> Plan:
        """Deletes of the published rows not in ``current``, inserts of those missing."""
        plan = Plan()
        wanted: dict[bytes, list[Row]] = {}
        for row in current:
            wanted.setdefault(content(row), []).append(row)
        for key, node_ids in list(self._by_content.items()):
            surplus = len(node_ids) - len(wanted.get(key, ()))
            for node_id in list(node_ids[:surplus]) if surplus > 0 else []:
                self._delete(node_id, plan)
        for key, rows in wanted.items():
            missing = len(rows) - len(self._by_content.get(key, ()))
            for row in rows[:missing] if missing > 0 else []:
                self._insert(row, plan)
        plan.next_number = self._next
        return plan

    def _diff(self, diff: Mapping[str, Any], plan: Plan) -> None:
        kind = diff["type"]
        if kind == "ADD":
            self._insert(diff["data"], plan)
        elif kind == "DELETE":
            node_id = self._holder(diff["data"])
            if node_id is not None:
                self._delete(node_id, plan)
        elif kind in ("UPDATE", "aggregation"):
            before = diff.get("before")
            node_id = None if before is None else self._holder(before)
            if node_id is None:
                self._insert(diff["after"], plan)
            else:
                self._replace(node_id, diff["after"], plan)

    def _holder(self, row: Mapping[str, Any]) -> str | None:
        node_ids = self._by_content.get(content(row))
        return node_ids[-1] if node_ids else None

    def _insert(self, row: Row, plan: Plan) -> None:
        node_id = f"{self.query_id}:{self._next}"
        self._next += 1
        self._set(node_id, row, plan)

    def _replace(self, node_id: str, row: Row, plan: Plan) -> None:
        self._unindex(node_id)
        self._set(node_id, row, plan)

    def _set(self, node_id: str, row: Row, plan: Plan) -> None:
        self._rows[node_id] = dict(row)
        self._by_content.setdefault(content(row), []).append(node_id)
        plan.changes.append(NodeChange("i", node_id, dict(row)))
        plan.put[node_id] = dict(row)
        if node_id in plan.dropped:
            plan.dropped.remove(node_id)

    def _delete(self, node_id: str, plan: Plan) -> None:
        row = self._unindex(node_id)
        del self._rows[node_id]
        plan.changes.append(NodeChange("d", node_id, row))
        plan.put.pop(node_id, None)
        plan.dropped.append(node_id)

    def _unindex(self, node_id: str) -> Row:
        row = self._rows[node_id]
        key = content(row)
        holders = self._by_content[key]
        holders.remove(node_id)
        if not holders:
            del self._by_content[key]
        return row


def platform_events(query_id: str, changes: Sequence[NodeChange]) -> list[dict[str, Any]]:
    """The node changes as platform change events (labels: the query's id)."""
    ts_ns = time.time_ns()
    events = []
    for change in changes:
        element = {"id": change.node_id, "labels": [query_id], "properties": change.row}
        side = "before" if change.op == "d" else "after"
        source = {"db": "drasi-ray-chain", "table": "node", "ts_ns": ts_ns}
        events.append({"op": change.op, "payload": {side: element, "source": source}})
    return events


@dataclass(frozen=True, slots=True)
class _Reconcile:
    rows: list[Row]


class ChainPublisher:
    """Writes one query's result rows to its chain stream (see the module docstring)."""

    def __init__(self, query_id: str, app_id: str, redis_url: str) -> None:
        self.query_id = query_id
        self.stream = keys.chain_stream(app_id, query_id)
        self.rows_key = keys.chain_rows(app_id, query_id)
        self._url = redis_url
        self._queue: list[QueryResult | _Reconcile] = []
        self._pending = Pending()
        self._ledger: RowLedger | None = None
        self._task: asyncio.Task[None] | None = None
        self._client: aioredis.Redis | None = None
        self.written = 0

    def start(self) -> None:
        self._task = asyncio.get_event_loop().create_task(self._run(), name=self.stream)

    def offer(self, item: Delivered) -> None:
        """Queue a result (control signals other than a finished bootstrap are skipped)."""
        if isinstance(item, QueryResult):
            self._push(item)

    def bootstrapped(self, rows: Sequence[Row]) -> None:
        """The query's rows right after a bootstrap: the published rows are brought to them."""
        self._push(_Reconcile([dict(row) for row in rows]))

    def _push(self, item: QueryResult | _Reconcile) -> None:
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
    def _plans(ledger: RowLedger, batch: Sequence[QueryResult | _Reconcile]) -> list[Plan]:
        """One plan per run of results, one per reconciliation, in order."""
        plans: list[Plan] = []
        results: list[QueryResult] = []
        for item in batch:
            if isinstance(item, QueryResult):
                results.append(item)
                continue
            if results:
                plans.append(ledger.plan_results(results))
                results = []
            plans.append(ledger.plan_reconcile(item.rows))
        if results:
            plans.append(ledger.plan_results(results))
        return plans

    async def _load(self) -> RowLedger:
        assert self._client is not None
        raw = await self._client.hgetall(self.rows_key)
        number = await self._client.get(self.rows_key + ":next")
        rows = {_text(key): orjson.loads(value) for key, value in raw.items()}
        return RowLedger(self.query_id, rows, int(number or 0))

    async def _write(self, plan: Plan) -> None:
        """The stream entry and the hash updates in one transaction (skipped when a previous
        attempt of the same plan already committed)."""
        assert self._client is not None
        if await self._client.get(self.rows_key + ":token") == plan.token.encode():
            return
        payload = encode_cloud_event(platform_events(self.query_id, plan.changes))
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.xadd(self.stream, {"data": payload})
            if plan.put:
                pipe.hset(self.rows_key, mapping={k: dumps(v) for k, v in plan.put.items()})
            if plan.dropped:
                pipe.hdel(self.rows_key, *plan.dropped)
            pipe.set(self.rows_key + ":next", plan.next_number)
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


def is_bootstrap_done(item: Delivered) -> bool:
    """Whether ``item`` is the signal that the query finished (re)loading its graph."""
    return isinstance(item, ControlResult) and item.signal.value == "bootstrapCompleted"
