"""The end-to-end peer: the filter query hand-written as one redis-py loop in its own process.

What a user would write instead of drasi_ray for ``MATCH (s:Sensor) WHERE s.temperature > 70
RETURN s.id AS id, s.temperature AS temperature`` (:data:`bench.common.SENSOR_QUERY`): one
process reads the stream with ``XREADGROUP`` (the same batch size and block time as the app
it is compared with), parses each entry with ``orjson``, keeps the current result rows in a
dict, works out ADD / UPDATE / DELETE for each change, acks the batch with one ``XACK``, and
sends the batch's results to the application (the benchmark process) through a
``multiprocessing`` pipe, where :class:`bench.latency.Collector` notes their arrival as it
does a subscription's.

It gives up what drasi_ray adds: no durable state (a restart forgets the rows), no
versioning (a redelivered or overtaken change is applied again), no validation or dead
letters, one process (no scaling out), one query hard-coded. Its figures are the floor of
the cost of reading, filtering and handing over results in Python on this machine.
"""

from __future__ import annotations

import multiprocessing
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import orjson
import redis

THRESHOLD = 70
STARTUP_TIMEOUT_S = 60.0
LABEL = "Sensor"

Arrival = tuple[tuple[str, float], int, int]
"""As :data:`bench.latency.Arrival`: ``((id, temperature), source_time_ms, produced_ms)``."""


def _row(element: dict[str, Any] | None) -> tuple[str, float] | None:
    """The result row of an element (id, temperature), or None if the filter drops it."""
    if element is None or LABEL not in element.get("labels", ()):
        return None
    properties: dict[str, Any] = element.get("properties") or {}
    temperature: Any = properties.get("temperature")
    if type(temperature) not in (int, float) or not temperature > THRESHOLD:
        return None
    identifier: Any = properties.get("id")
    return identifier, temperature


def apply_change(
    rows: dict[str, tuple[str, float]], change: dict[str, Any]
) -> tuple[str, float] | None:
    """Apply one Drasi change event to ``rows``; the row it adds or updates, else None.

    Each change's ``after`` is taken as the whole element: Drasi's update merges into the
    stored element, but every update of the benchmark's workload carries every property, so
    a loop written for it needs no element store. A row that leaves the result (a delete, or
    a value that fails the filter) is dropped from ``rows`` and yields None: the workload has
    none, so the loop does not send DELETE results.
    """
    payload = change["payload"]
    after = payload.get("after") if change["op"] != "d" else None
    element: dict[str, Any] = after if after is not None else payload.get("before") or {}
    element_id: Any = element.get("id")
    row = _row(after)
    if row is None:
        rows.pop(element_id, None)
        return None
    if rows.get(element_id) == row:
        return None  # the projection did not change: no UPDATE
    rows[element_id] = row
    return row


def run(
    url: str,
    stream: str,
    group: str,
    batch_size: int,
    block_ms: int,
    results: Connection,
    stop: Any,
) -> None:
    """The loop (the child process's target): until ``stop`` is set."""
    client = redis.Redis.from_url(url)
    client.ping()
    results.send([])  # ready: the caller's clock may start
    rows: dict[str, tuple[str, float]] = {}
    while not stop.is_set():
        reply: Any = client.xreadgroup(
            group, "peer", {stream: ">"}, count=batch_size, block=block_ms
        )
        if not reply:
            continue
        entries = reply[0][1]
        out: list[Arrival] = []
        for _entry_id, fields in entries:
            for change in orjson.loads(fields[b"data"])["data"]:
                row = apply_change(rows, change)
                if row is not None:
                    source_ms = change["payload"]["source"]["ts_ns"] // 1_000_000
                    out.append((row, source_ms, time.time_ns() // 1_000_000))
        client.xack(stream, group, *[entry_id for entry_id, _ in entries])
        if out:
            results.send(out)


@dataclass
class FilterLoop:
    """The peer's process: started with :meth:`start`, results read with :meth:`poll`."""

    url: str
    stream: str
    group: str
    batch_size: int
    block_ms: int

    def start(self) -> FilterLoop:
        # spawn, not fork: this process runs Ray's threads, which a fork would copy half-way.
        context = multiprocessing.get_context("spawn")
        self._receive, send = context.Pipe(duplex=False)
        self._stop = context.Event()
        self._process = context.Process(
            target=run,
            args=(self.url, self.stream, self.group, self.batch_size, self.block_ms, send,
                  self._stop),
            name="filter-loop",
            daemon=True,
        )  # fmt: skip
        self._process.start()
        send.close()
        if not self._receive.poll(STARTUP_TIMEOUT_S):
            self.stop()
            raise RuntimeError(f"the filter loop did not start in {STARTUP_TIMEOUT_S:g} s")
        self._receive.recv()  # its ready signal
        return self

    @property
    def pid(self) -> int:
        assert self._process.pid is not None
        return self._process.pid

    def poll(self, timeout: float) -> tuple[Arrival, ...]:
        """The next batch of results, or () if none comes within ``timeout`` seconds."""
        if not self._receive.poll(timeout):
            return ()
        try:
            return tuple(self._receive.recv())
        except EOFError:  # the loop ended
            return ()

    def stop(self) -> None:
        self._stop.set()
        self._process.join(timeout=10)
        if self._process.is_alive():
            self._process.kill()
        self._receive.close()
