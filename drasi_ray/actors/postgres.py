"""The Ray shell of a PostgreSQL source's reader: ``drasi/<source>/postgres-reader``.

One per PostgreSQL source. The reader (:class:`~drasi_ray.source.postgres.reader.
PostgresReader`) runs its loop on a thread of its own; the actor answers ``ready``, ``sync``,
``report`` and ``stop`` beside it (a threaded actor). Ray restarts it for ever
(``max_restarts=-1``); the restarted reader resumes from the slot and the stream (the reader's
resume contract), and reads the password again from its environment or file.

What the reader needs of the pipeline is the elements the store holds (when it takes a new
snapshot over an old stream, or a table is truncated): the coordinator's ``elements``.
"""

from __future__ import annotations

import os
import threading

import ray

from drasi_ray.actors import names
from drasi_ray.actors.runtime import PIPELINE_NICENESS, tune_for_latency, tune_gc
from drasi_ray.model import keys
from drasi_ray.model.changes import Element
from drasi_ray.model.postgres_specs import PostgresSourceConfig
from drasi_ray.source.postgres.reader import PostgresReader, ReaderReport

STOP_TIMEOUT_S = 30.0


@ray.remote
class PostgresReaderActor:
    """Runs one source's reader (see the module docstring)."""

    def __init__(
        self,
        source_id: str,
        settings: PostgresSourceConfig,
        stream_key: str,
        consumer_group: str,
        app_id: str,
        niceness: int | None = PIPELINE_NICENESS,
    ) -> None:
        tune_for_latency(niceness)
        tune_gc()  # a backlog's transactions hold many containers until they are written
        self._source_id = source_id
        self._namespace = names.namespace(app_id)
        self._reader = PostgresReader(
            source_id,
            settings,
            stream_key=stream_key,
            state_key=keys.postgres_reader(app_id, source_id),
            consumer_group=consumer_group,
            known_elements=self._known_elements,
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._reader.run, args=(self._stop,), name="postgres-reader", daemon=True
        )
        self._thread.start()

    def _known_elements(self) -> list[Element]:
        coordinator = ray.get_actor(names.COORDINATOR, namespace=self._namespace)
        elements: list[Element] = ray.get(coordinator.elements.remote(self._source_id))
        return elements

    def ready(self, timeout_s: float) -> None:
        """Return once the reader streams (its snapshot written); raise its startup error."""
        self._reader.wait_started(timeout_s)

    def sync(self, timeout_s: float) -> None:
        """Return once every transaction committed before the call is on the stream."""
        self._reader.sync(timeout_s)

    def report(self) -> ReaderReport:
        return self._reader.report()

    def stop(self) -> None:
        """End the loop (the slot stays, confirmed up to what is on the stream)."""
        self._stop.set()
        self._thread.join(STOP_TIMEOUT_S)

    def start(self) -> None:
        """Run the loop again after :meth:`stop`: it resumes from the slot (benchmarks stop
        the reader, commit a backlog, then time how fast it drains)."""
        if self._thread.is_alive():
            return
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._reader.run, args=(self._stop,), name="postgres-reader", daemon=True
        )
        self._thread.start()

    def pid(self) -> int:
        return os.getpid()
