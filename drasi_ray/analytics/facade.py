"""``app.analytics``: the change log handed to Spark through RayDP, and the built-in jobs.

The hand-off: the analytics actor seals and consolidates its Arrow blocks (at most
``max_blocks``: each block becomes one Spark partition, and many small ones are slow), the
blocks become a Ray Dataset (``ray.data.from_arrow_refs``) that RayDP converts to a Spark
DataFrame (``Dataset.to_spark``: Spark's executors read the blocks from the object store, nothing
goes through pandas on the driver), and Parquet files the log spilled are read by Spark
directly and unioned in. A DataFrame is cached until the log changes.

Lifetime of a DataFrame: RayDP pins the blocks of every conversion until Spark stops. To keep
memory bounded, each new hand-off unpins the blocks the log has since merged or spilled, so a
DataFrame from an earlier call may fail once the log has changed: call :meth:`Analytics.dataframe`
(or the job) again rather than keeping DataFrames around.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ray

from drasi_ray.analytics import jobs
from drasi_ray.analytics.changelog import LogSnapshot
from drasi_ray.analytics.jobs import ExportProgress, ExportResult
from drasi_ray.analytics.spark import SparkRuntime
from drasi_ray.model.config import AnalyticsConfig
from drasi_ray.model.errors import ConfigError, NotRunningError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Analytics"]

STOP_TIMEOUT_S = 30.0
RAYDP_MASTER_SUFFIX = "_SPARK_MASTER"
"""RayDP names the actor that pins converted blocks ``<spark app name>_SPARK_MASTER``."""


class Analytics:
    """The analytics side of a running app (``app.analytics``); Spark starts on first use.

    The app creates it with the analytics actor, then :meth:`attach`es the coordinator, which
    is the barrier: :meth:`flush` goes through it, so everything the coordinator applied
    before the call is in the log (see :mod:`drasi_ray.analytics.actor`).
    """

    def __init__(self, actor: Any, config: AnalyticsConfig) -> None:
        self._actor = actor
        self._coordinator: Any = None
        self._config = config
        self._runtime = SparkRuntime(config.spark)
        self._cached: tuple[int, DataFrame] | None = None
        self._pinned: set[str] = set()

    def attach(self, coordinator: Any) -> None:
        """Route :meth:`flush` through ``coordinator`` (the actor that feeds the log)."""
        self._coordinator = coordinator

    # -- the log ------------------------------------------------------------------------

    def flush(self) -> int:
        """Seal every change the coordinator applied so far; the rows the log now holds."""
        if self._coordinator is None:
            raise NotRunningError("analytics are not attached to a running coordinator")
        rows: int = ray.get(self._coordinator.flush_analytics.remote())
        return rows

    def stats(self) -> dict[str, Any]:
        """The log's accounting: rows appended, sealed, in store, spilled, bytes in store."""
        stats: dict[str, Any] = ray.get(self._actor.stats.remote())
        return stats

    # -- Spark --------------------------------------------------------------------------

    @property
    def spark(self) -> SparkSession:
        """The Spark session (RayDP on this Ray cluster), started on first use."""
        return self._runtime.session()

    def dataframe(self) -> DataFrame:
        """The whole change log as a Spark DataFrame, including every change applied so far."""
        self.flush()
        snapshot: LogSnapshot[Any] = ray.get(self._actor.snapshot.remote())
        if self._cached is not None and self._cached[0] == snapshot.epoch:
            return self._cached[1]
        frame = self._hand_off(snapshot)
        self._cached = (snapshot.epoch, frame)
        return frame

    def _hand_off(self, snapshot: LogSnapshot[Any]) -> DataFrame:
        from pyspark.sql.pandas.types import from_arrow_schema

        spark = self.spark
        schema = from_arrow_schema(snapshot.schema)
        parts: list[DataFrame] = []
        if snapshot.blocks:
            parts.append(_blocks_to_spark(spark, list(snapshot.blocks)))
        if snapshot.spilled:
            parts.append(spark.read.schema(schema).parquet(*snapshot.spilled))
        self._unpin_all_but({ref.hex() for ref in snapshot.blocks})
        if not parts:
            return spark.createDataFrame([], schema)
        return functools.reduce(lambda a, b: a.unionByName(b), parts)

    def _unpin_all_but(self, current: set[str]) -> None:
        """Drop RayDP's pins on blocks the log no longer holds (merged or spilled)."""
        stale = self._pinned - current
        self._pinned = current
        if stale:
            app_name = self.spark.sparkContext.appName or self._config.spark.app_name
            master = ray.get_actor(app_name + RAYDP_MASTER_SUFFIX)
            ray.get(master.__ray_call__.remote(_forget_conversions, frozenset(stale)))

    # -- jobs ---------------------------------------------------------------------------

    def change_counts(self, window: str = "1 minute") -> DataFrame:
        """Changes per time window x label x op (:func:`drasi_ray.analytics.jobs.change_counts`)."""
        return jobs.change_counts(self.dataframe(), window)

    def latest_state(self, as_of_ms: int | None = None) -> DataFrame:
        """Each element's state as of a time (:func:`drasi_ray.analytics.jobs.latest_state`)."""
        return jobs.latest_state(self.dataframe(), as_of_ms)

    def property_stats(self, label: str) -> DataFrame:
        """Numeric property statistics (:func:`drasi_ray.analytics.jobs.property_stats`)."""
        return jobs.property_stats(self.dataframe(), label)

    def export_parquet(
        self,
        path: str | None = None,
        *,
        mode: str = "errorifexists",
        progress: Callable[[ExportProgress], None] | None = None,
    ) -> ExportResult:
        """Write the log as Parquet partitioned by date to ``path`` (default: output_path)."""
        target = path or self._config.output_path
        if target is None:
            raise ConfigError("no export path: pass one or set analytics.output_path")
        return jobs.export_parquet(self.dataframe(), target, mode=mode, progress=progress)

    def stop(self) -> None:
        """Stop Spark if this app started it, then the log's actor (the app is stopping)."""
        self._cached = None
        self._pinned = set()
        try:
            self._runtime.stop()
        finally:
            try:
                ray.get(self._actor.close.remote(), timeout=STOP_TIMEOUT_S)
            finally:
                ray.kill(self._actor)


def _blocks_to_spark(spark: SparkSession, blocks: list[Any]) -> DataFrame:
    """Ray Dataset over the blocks, converted by RayDP (executors read the object store)."""
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False  # one block per partition: nothing worth a bar
    dataset = ray.data.from_arrow_refs(blocks)
    frame: DataFrame = dataset.to_spark(spark)
    return frame


def _forget_conversions(master: Any, stale: frozenset[str]) -> int:
    """Runs inside RayDP's master actor: drop the conversions that hold any ``stale`` block.

    RayDP keeps every converted DataFrame's blocks in ``_objects`` (id -> refs) and offers no
    way to release them; without this, merged and spilled blocks would stay in memory.
    """
    objects: dict[Any, list[Any]] = master._objects
    doomed = [key for key, refs in objects.items() if any(ref.hex() in stale for ref in refs)]
    for key in doomed:
        del objects[key]
    return len(doomed)
