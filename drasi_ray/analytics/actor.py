"""The analytics actor: holds the app's change log, its blocks in Ray's object store.

Named ``drasi/analytics`` in the app's namespace. The coordinator sends it one ``append`` per
applied batch, fire-and-forget, and ``flush`` as a barrier: this is a plain (not async,
single-threaded) actor, so Ray runs the calls of one caller in the order they were submitted,
and a ``flush`` the coordinator submits runs after every ``append`` it submitted before. A timer
thread seals open rows every ``flush_every_seconds``; a lock serialises it with the calls.

The actor is not restarted when it dies: the change log is an in-memory (and spilled) buffer for
analytics, not durable state. The app's analytics report it as gone.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any, Final

import pyarrow as pa
import ray

from drasi_ray.analytics.changelog import ChangeLog, LogSnapshot
from drasi_ray.model.config import AnalyticsConfig
from drasi_ray.shards.records import ChangeRecord

__all__ = ["ANALYTICS_ACTOR", "AnalyticsActor", "ObjectStoreBlocks"]

logger = logging.getLogger("drasi_ray.analytics")

ANALYTICS_ACTOR: Final = "drasi/analytics"


class ObjectStoreBlocks:
    """:class:`~drasi_ray.analytics.changelog.BlockStore` over Ray's object store.

    The actor owns every block it puts; dropping the last reference frees it.
    """

    def put(self, table: pa.Table) -> ray.ObjectRef[pa.Table]:
        return ray.put(table)

    def get(self, handle: ray.ObjectRef[pa.Table]) -> pa.Table:
        table: pa.Table = ray.get(handle)
        return table


class _Timer(threading.Thread):
    """Calls ``action`` every ``period_s`` until stopped."""

    def __init__(self, period_s: float, action: Any) -> None:
        super().__init__(name="drasi-analytics-flush", daemon=True)
        self._period_s = period_s
        self._action = action
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self._period_s):
            try:
                self._action()
            except Exception:  # a failed seal must not end the timer; the next call retries
                logger.exception("periodic change-log flush failed")


@ray.remote
class AnalyticsActor:
    """Ray wrapper of :class:`ChangeLog` (see the module docstring for the ordering contract)."""

    def __init__(self, config: AnalyticsConfig) -> None:
        self._config = config
        self._log: ChangeLog[ray.ObjectRef[pa.Table]] = ChangeLog(
            ObjectStoreBlocks(), spill_bytes=config.spill_bytes, spill_dir=config.spill_dir
        )
        self._lock = threading.Lock()
        self._batches = 0
        self._timer = _Timer(config.flush_every_seconds, self._seal_if_due)
        self._last_seal = time.monotonic()
        self._timer.start()

    def append(
        self,
        source_id: str,
        records: Sequence[ChangeRecord],
        unapplied: Sequence[ChangeRecord] = (),
    ) -> None:
        """Append one batch (its applied changes, and those the store took nothing from);
        seal once ``flush_every_changes`` rows are open (:meth:`ChangeLog.append`)."""
        with self._lock:
            self._batches += 1
            open_rows = self._log.append(source_id, records, unapplied)
            if open_rows >= self._config.flush_every_changes:
                self._seal()

    def _seal(self) -> int:
        self._last_seal = time.monotonic()
        return self._log.seal()

    def _seal_if_due(self) -> None:
        with self._lock:
            if time.monotonic() - self._last_seal >= self._config.flush_every_seconds:
                self._seal()

    def flush(self) -> int:
        """Seal the open rows now; returns the rows the log holds (in store and spilled)."""
        with self._lock:
            self._seal()
            return self._log.rows

    def snapshot(self) -> LogSnapshot[ray.ObjectRef[pa.Table]]:
        """Seal and consolidate; the blocks and spilled files to hand to Spark."""
        with self._lock:
            self._last_seal = time.monotonic()
            return self._log.snapshot(self._config.max_blocks)

    def spill(self) -> str | None:
        """Write the in-store blocks to Parquet now (normally done past ``spill_bytes``)."""
        with self._lock:
            self._seal()
            return self._log.spill()

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"batches": self._batches, **self._log.stats()}

    def close(self) -> None:
        """Stop the timer, release the blocks, delete spilled files (the app is stopping)."""
        self._timer.stopped.set()
        with self._lock:
            self._log.close()
