"""The Spark session on Ray (RayDP), started lazily on first use.

pyspark and raydp are imported inside the functions here, never at module level, so
``import drasi_ray`` (and an app without analytics) does not load them.

RayDP keeps one Spark session per driver process. :class:`SparkRuntime` reuses a RayDP session
that is already running in the process (a notebook's, or a test session's) and then leaves it
running on :meth:`SparkRuntime.stop`; it stops only a session it started itself.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING, Any, Final

from drasi_ray.model.config import SparkConfig

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["JAVA_17_OPTIONS", "SparkRuntime", "spark_configs"]

logger = logging.getLogger("drasi_ray.analytics")

_OPENED_PACKAGES: Final = (
    "java.lang",
    "java.lang.invoke",
    "java.io",
    "java.net",
    "java.nio",
    "java.math",
    "java.text",
    "java.util",
    "java.util.concurrent",
    "java.util.concurrent.atomic",
    "sun.nio.ch",
    "sun.nio.cs",
    "sun.security.action",
    "sun.util.calendar",
)

JAVA_17_OPTIONS: Final = " ".join(
    [
        "-XX:+IgnoreUnrecognizedVMOptions",
        *(f"--add-opens=java.base/{package}=ALL-UNNAMED" for package in _OPENED_PACKAGES),
        "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
    ]
)
"""Without these, Java 17 crashes the JVM actor on Spark<->Ray conversion (DESIGN.md)."""


def spark_configs(config: SparkConfig) -> dict[str, str]:
    """The Spark settings drasi_ray starts RayDP with; ``config.configs`` overrides them."""
    settings = {
        "spark.executor.extraJavaOptions": JAVA_17_OPTIONS,
        "spark.driver.extraJavaOptions": JAVA_17_OPTIONS,
        "spark.ray.raydp_app_master.extraJavaOptions": JAVA_17_OPTIONS,
        "spark.sql.shuffle.partitions": str(config.shuffle_partitions),
        # Windows and partition dates in UTC, whatever the machine's zone.
        "spark.sql.session.timeZone": "UTC",
        # Parquet that pyarrow and other readers understand (Spark's default is INT96).
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        # Spark's console progress bars would interleave with the CLI's output.
        "spark.ui.showConsoleProgress": "false",
    }
    settings.update(config.configs)
    return settings


def running_session() -> SparkSession | None:
    """The RayDP session already running in this process, if any."""
    from raydp import context

    # raydp exposes no accessor; its module-level context is the one source of truth.
    spark_context: Any = getattr(context, "_global_spark_context", None)
    session: SparkSession | None = getattr(spark_context, "_spark_session", None)
    return session


class SparkRuntime:
    """A lazily started RayDP Spark session (requires Ray to be initialised)."""

    def __init__(self, config: SparkConfig) -> None:
        self._config = config
        self._session: SparkSession | None = None
        self._owned = False

    @property
    def started(self) -> bool:
        return self._session is not None

    def session(self) -> SparkSession:
        """The Spark session, started on the first call (about 10 s)."""
        if self._session is None:
            existing = running_session()
            if existing is not None:
                self._session = existing
            else:
                self._session = self._start()
                self._owned = True
        return self._session

    def _start(self) -> SparkSession:
        import raydp

        # Spark's Python workers run the conversion code and must use this interpreter.
        os.environ["PYSPARK_PYTHON"] = sys.executable
        config = self._config
        logger.info("starting Spark on Ray (%d executor(s))", config.num_executors)
        session: SparkSession = raydp.init_spark(
            app_name=config.app_name,
            num_executors=config.num_executors,
            executor_cores=config.executor_cores,
            executor_memory=config.executor_memory,
            configs=spark_configs(config),
        )
        return session

    def stop(self) -> None:
        """Stop Spark if this runtime started it; a borrowed session keeps running."""
        if self._session is None:
            return
        if self._owned:
            import raydp

            raydp.stop_spark()
        self._session = None
        self._owned = False
