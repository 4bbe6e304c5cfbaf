"""The built-in analytics: Spark jobs over the change-log DataFrame.

Each function takes the change log as a Spark DataFrame (columns of
:data:`drasi_ray.analytics.changelog.BASE_SCHEMA` plus typed ``prop_<key>`` columns) and returns
a lazy DataFrame (nothing runs until it is collected), except :func:`export_parquet`, which
writes. pyspark is imported inside the functions: importing this module costs nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from drasi_ray.analytics.changelog import TYPED_PREFIX

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "ExportProgress",
    "ExportResult",
    "change_counts",
    "export_parquet",
    "latest_state",
    "property_stats",
]

VERSION_ORDER: Final = ("version_ms", "version_seq", "change_index")
"""Column order of a change's version: (entry ms, entry seq, index in the entry)."""

STATE_COLUMNS: Final = (
    "source_id",
    "element_id",
    "kind",
    "labels",
    "properties",
    "start_id",
    "end_id",
    "effective_from",
)

PERCENTILES: Final = (0.5, 0.9, 0.99)
PROGRESS_POLL_S: Final = 0.5


def change_counts(changes: DataFrame, window: str = "1 minute") -> DataFrame:
    """Applied changes per time window x label x op, ordered by window, label, op.

    Windows are tumbling over ``effective_from`` (UTC), ``window`` in Spark's duration syntax
    ("30 seconds", "1 hour"). A change is counted once per label of its element; an element
    without labels counts under a null label. Columns: window_start, window_end, label, op,
    count.
    """
    from pyspark.sql import functions as F

    windowed = changes.select(
        F.window("effective_from", window).alias("window"),
        F.explode_outer("labels").alias("label"),
        "op",
    )
    counted = windowed.groupBy("window", "label", "op").count()
    return counted.select(
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "label",
        "op",
        "count",
    ).orderBy("window_start", "label", "op")


def latest_state(changes: DataFrame, as_of_ms: int | None = None) -> DataFrame:
    """Every element's state as of ``as_of_ms`` (None: now), one row per existing element.

    Considers the changes whose ``effective_from`` is at or before ``as_of_ms``; per
    (source_id, element_id) keeps the one with the newest version (duplicates never reach the
    log, and versions order changes as in-order application does) and drops elements that
    change left deleted. Its row holds the element's full state (the log records the state
    after each change). Equal to the coordinator's element store when every element's changes
    were applied in version order, which a single consumer per source guarantees; with several
    consumers an older change applied late that only fills in a property the newer one lacks
    (a rare interleaving) is not reflected. Columns: STATE_COLUMNS plus the typed columns.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if as_of_ms is not None:
        cutoff = F.timestamp_millis(F.lit(as_of_ms))
        changes = changes.where(F.col("effective_from") <= cutoff)
    newest_first = Window.partitionBy("source_id", "element_id").orderBy(
        *(F.col(name).desc() for name in VERSION_ORDER)
    )
    ranked = changes.withColumn("_rank", F.row_number().over(newest_first))
    typed = [name for name in changes.columns if name.startswith(TYPED_PREFIX)]
    latest = ranked.where((F.col("_rank") == 1) & F.col("present"))
    return latest.select(*STATE_COLUMNS, *typed)


def property_stats(changes: DataFrame, label: str) -> DataFrame:
    """Statistics of every numeric property of elements labelled ``label``.

    Over the values the changes of those elements carried (each applied insert or update
    contributes the element's value after it; deletes do not count): count, mean, min, max,
    stddev (sample) and approximate p50/p90/p99. Only properties with a typed numeric column
    (uniform numbers across the log) and at least one value appear. Columns: property, count,
    mean, min, max, stddev, p50, p90, p99; ordered by property.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType

    numeric = [
        field.name
        for field in changes.schema.fields
        if field.name.startswith(TYPED_PREFIX) and isinstance(field.dataType, DoubleType)
    ]
    spark = changes.sparkSession
    if not numeric:
        return spark.createDataFrame([], _STATS_SCHEMA)
    rows = changes.where(F.array_contains("labels", label) & (F.col("op") != "delete"))
    long = rows.select(*numeric).unpivot([], tuple(numeric), "column", "value")
    percentiles = F.percentile_approx("value", list(PERCENTILES))
    stats = long.groupBy("column").agg(
        F.count("value").alias("count"),
        F.mean("value").alias("mean"),
        F.min("value").alias("min"),
        F.max("value").alias("max"),
        F.stddev("value").alias("stddev"),
        percentiles.alias("_p"),
    )
    return (
        stats.where(F.col("count") > 0)
        .select(
            F.expr(f"substring(column, {len(TYPED_PREFIX) + 1})").alias("property"),
            "count",
            "mean",
            "min",
            "max",
            "stddev",
            *(F.col("_p")[i].alias(f"p{round(q * 100)}") for i, q in enumerate(PERCENTILES)),
        )
        .orderBy("property")
    )


_STATS_SCHEMA: Final = (
    "property string, count long, mean double, min double, max double, stddev double, "
    "p50 double, p90 double, p99 double"
)


@dataclass(frozen=True, slots=True)
class ExportProgress:
    """Spark tasks of an export: done out of known so far (stages appear as they start)."""

    done_tasks: int
    total_tasks: int


@dataclass(frozen=True, slots=True)
class ExportResult:
    path: str
    files: int
    dates: tuple[str, ...]


def export_parquet(
    changes: DataFrame,
    path: str,
    *,
    mode: str = "errorifexists",
    progress: Callable[[ExportProgress], None] | None = None,
) -> ExportResult:
    """Write the change log as Parquet partitioned by ``date`` (UTC day of effective_from).

    ``mode`` is Spark's save mode (errorifexists, overwrite, append, ignore). ``progress`` is
    called about twice a second while Spark works, and once at the end.
    """
    from pyspark.sql import functions as F

    dated = changes.withColumn("date", F.to_date("effective_from"))
    writer = dated.write.mode(mode).partitionBy("date")
    _run_with_progress(changes.sparkSession, lambda: writer.parquet(path), progress)
    root = Path(path)
    dates = sorted(p.name.removeprefix("date=") for p in root.glob("date=*") if p.is_dir())
    files = sum(1 for _ in root.glob("date=*/*.parquet"))
    return ExportResult(path=str(root), files=files, dates=tuple(dates))


def _run_with_progress(
    spark: SparkSession,
    action: Callable[[], None],
    progress: Callable[[ExportProgress], None] | None,
) -> None:
    """Run ``action`` in a thread tagged with a job group; report its tasks until it ends."""
    from pyspark import InheritableThread

    if progress is None:
        action()
        return
    group = f"drasi-ray-export-{threading.get_ident()}-{id(action)}"
    failure: list[BaseException] = []

    def work() -> None:
        spark.sparkContext.setJobGroup(group, "drasi-ray: export change log")
        try:
            action()
        except BaseException as exc:  # re-raised in the calling thread
            failure.append(exc)

    thread = InheritableThread(target=work, daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(PROGRESS_POLL_S)
        progress(_tasks_of(spark, group))
    if failure:
        raise failure[0]


def _tasks_of(spark: SparkSession, group: str) -> ExportProgress:
    tracker = spark.sparkContext.statusTracker()
    done = total = 0
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        for stage_id in job.stageIds if job is not None else ():
            stage = tracker.getStageInfo(stage_id)
            if stage is not None:
                done += stage.numCompletedTasks
                total += stage.numTasks
    return ExportProgress(done, total)
