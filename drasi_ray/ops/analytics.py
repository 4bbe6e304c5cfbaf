"""``drasi-ray analytics ...``: one-shot Spark analytics over an app's source streams.

    drasi-ray analytics counts APP_YAML [--window "1 minute"]
    drasi-ray analytics latest APP_YAML [--as-of-ms MS]
    drasi-ray analytics stats  APP_YAML LABEL
    drasi-ray analytics export APP_YAML [PATH] [--overwrite]

Each command replays every source stream of APP_YAML from its first entry under a temporary
consumer group (``<group>.analytics-<random>``, deleted afterwards, so the app's own group and
its position are untouched), with analytics enabled and without the app's queries; waits until
the streams are drained; runs the Spark job; prints the result; and stops.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from drasi_ray.model.config import AppConfig, PostgresSourceSpec, SourceSpec
from drasi_ray.model.errors import ConfigError
from drasi_ray.ops import common

if TYPE_CHECKING:
    from drasi_ray.analytics.facade import Analytics
    from drasi_ray.analytics.jobs import ExportProgress
    from drasi_ray.app import DrasiRay

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """Register ``analytics`` and its subcommands on the CLI's subparsers."""
    analytics = common.subcommand(
        commands,
        "analytics",
        "replay the source streams into Spark (RayDP) and run an analytics job",
        __doc__ or "",
    )
    jobs = analytics.add_subparsers(dest="job", required=True, metavar="JOB")
    counts = _job(jobs, "counts", "changes per time window x label x op")
    counts.add_argument("--window", default="1 minute", help="Spark duration (default 1 minute)")
    latest = _job(jobs, "latest", "the latest state of every element")
    latest.add_argument("--as-of-ms", type=int, help="state as of this time (ms since epoch)")
    stats = _job(jobs, "stats", "numeric property statistics of one label")
    stats.add_argument("label", help="element label, e.g. Sensor")
    export = _job(jobs, "export", "write the change log as Parquet partitioned by date")
    export.add_argument("path", nargs="?", help="target directory (default analytics.output_path)")
    export.add_argument("--overwrite", action="store_true", help="replace an existing export")


def _job(jobs: Any, name: str, summary: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = jobs.add_parser(name, help=summary, description=summary)
    common.add_app_arguments(parser)
    parser.add_argument("--rows", type=int, default=1000, help="rows to print (default 1000)")
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds to replay the streams (default 600)"
    )
    return parser


def run(args: argparse.Namespace) -> int:
    """Run one ``analytics`` subcommand (see the module docstring); the exit status."""
    config = replay_config(common.load_app(args.config, args.redis_url), uuid.uuid4().hex[:8])
    if not config.sources:
        raise ConfigError(f"{args.config}: no sources to analyse")
    common.check_all(config)
    with _running(config) as app:
        app.wait_until_idle(timeout=args.timeout)
        _run_job(app.analytics, args)
    return 0


def replay_config(config: AppConfig, tag: str) -> AppConfig:
    """``config`` reading every stream from its start under temporary groups, analytics on."""
    sources = tuple(_replay_source(spec, tag, config.id) for spec in config.sources)
    analytics = config.analytics.model_copy(update={"enabled": True})
    return config.model_copy(update={"sources": sources, "queries": (), "analytics": analytics})


def _replay_source(spec: SourceSpec | PostgresSourceSpec, tag: str, app_id: str) -> SourceSpec:
    """A platform source reading ``spec``'s streams (a PostgreSQL source's too: no reader)
    from their start, under a group of its own."""
    settings = spec.stream_settings(app_id)
    group = f"{settings.consumer_group}.analytics-{tag}"
    properties = settings.model_copy(
        update={"consumer_group": group, "start_id": "0", "consumer_name": f"analytics-{tag}"}
    )
    return SourceSpec(
        id=spec.id,
        dispatch_mode=spec.dispatch_mode,
        dispatch_buffer_capacity=spec.dispatch_buffer_capacity,
        properties=properties,
    )


@contextmanager
def _running(config: AppConfig) -> Iterator[DrasiRay]:
    """The app, started; on exit stopped and its temporary groups deleted."""
    import redis

    from drasi_ray.app import DrasiRay

    app = DrasiRay.from_config(config)
    try:
        app.start()
        yield app
    finally:
        app.stop()
        with contextlib.suppress(redis.RedisError):  # never hides why the job failed
            for spec in config.sources:
                settings = spec.stream_settings(config.id)
                with common.client(settings.redis_url) as client:
                    for stream in settings.stream_keys:
                        client.xgroup_destroy(stream, settings.consumer_group)


def _run_job(analytics: Analytics, args: argparse.Namespace) -> None:
    if args.job == "counts":
        analytics.change_counts(args.window).show(args.rows, truncate=False)
    elif args.job == "latest":
        analytics.latest_state(args.as_of_ms).show(args.rows, truncate=False)
    elif args.job == "stats":
        analytics.property_stats(args.label).show(args.rows, truncate=False)
    else:
        mode = "overwrite" if args.overwrite else "errorifexists"
        result = analytics.export_parquet(args.path, mode=mode, progress=_print_progress)
        print(file=sys.stderr)  # ends the progress line
        print(
            f"exported {analytics.flush()} changes to {result.path}: {result.files} file(s), "
            f"dates {', '.join(result.dates) or '-'}"
        )


def _print_progress(progress: ExportProgress) -> None:
    print(
        f"\rexport: {progress.done_tasks}/{progress.total_tasks} Spark tasks",
        end="",
        file=sys.stderr,
        flush=True,
    )
