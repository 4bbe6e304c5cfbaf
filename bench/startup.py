"""How long ``DrasiRay.start()`` takes for an app of many queries.

One platform source (one consumer) and ``--queries`` filter queries over it (each its own
threshold, so no two are the same text), durable state on a private Redis, a local Ray already
running (its own start is not counted). For each store-shard count in ``--shards`` (1: the
default scaling, the fused layout; more: every part an actor of its own, the queries on one
host per CPU), the app is built, ``start()`` is timed from the call to its return (every query
registered and bootstrapped from every shard, every consumer reading), then the app is stopped;
``--runs`` times each, the median kept. No peer: the goal (issue #32) is an absolute figure.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

from bench.common import bench_env, command_line, format_table, load_average, print_lines
from bench.results import Recorder
from drasi_ray.model.config import ScalingConfig
from drasi_ray.testing.apps import one_source_app


def _queries(count: int) -> dict[str, str]:
    return {
        f"q{index}": f"MATCH (s:Sensor) WHERE s.temperature > {index} RETURN s.id AS id"
        for index in range(count)
    }


def time_start(redis_url: str, queries: int, shards: int) -> float:
    """Seconds one ``start()`` of an app of ``queries`` queries on ``shards`` shards took."""
    scaling = ScalingConfig() if shards == 1 else ScalingConfig(shards=shards)
    app = one_source_app(
        redis_url, f"startup-{shards}", _queries(queries), prefix="startup", scaling_config=scaling
    )
    started = time.perf_counter()
    app.start()
    seconds = time.perf_counter() - started
    app.stop()
    return seconds


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--shards", default="1,4", help="comma-separated store-shard counts")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-record", action="store_true")
    options = parser.parse_args(argv)
    recorder = Recorder("startup", command_line("bench.startup", argv))
    rows = []
    with bench_env() as server:
        for shards in (int(part) for part in options.shards.split(",")):
            runs = [time_start(server.url, options.queries, shards) for _ in range(options.runs)]
            median = statistics.median(runs)
            layout = "fused layout" if shards == 1 else "actors"
            rows.append((shards, layout, " / ".join(f"{s:.2f}" for s in runs), f"{median:.2f}"))
            recorder.add(
                f"start() of an app with {options.queries} queries, {shards} store shard(s), "
                f"{layout} (median of {options.runs})",
                median,
                "s",
                detail=f"runs {', '.join(f'{s:.2f}' for s in runs)} s; load {load_average():.1f}",
            )
    print_lines(format_table(("shards", "layout", "runs s", "median s"), rows))
    if not options.no_record:
        recorder.write()


if __name__ == "__main__":
    main()
