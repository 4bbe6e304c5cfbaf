"""``drasi-ray run``: run an app from its file, print result diffs and a live status line."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import IO, Any

from drasi_ray.ops import common, foreground
from drasi_ray.ops.status import source_status

HELP = """\
Starts every source and query of APP_YAML, or of Drasi resource files (Source,
ContinuousQuery, Reaction documents: several files, --app-id naming the app), on the Ray
cluster of ray.address or RAY_ADDRESS, else on a new local Ray listening on 127.0.0.1 only
(never a Ray that merely runs here); prints each query's result diffs as they arrive, those of
what the streams already hold included, and a status line (lag, pending, result sequence,
reaction state) on stderr, until Ctrl-C or SIGTERM, which stop it at any moment, start-up
included; then stops cleanly (consumers finish and ack their batch, reactions flush, `stopped`
is signalled). A Redis that does not answer
within connect_timeout_s (30 s) is one error naming it. While it runs it serves `drasi-ray
apply`, `list`, `describe`, `delete` and `watch` through the app's Redis (the state Redis, else
the first source's; docs/coming-from-drasi.md).

examples:
  drasi-ray run app.yaml
  drasi-ray run app.yaml --quiet --redis-url redis://redis.internal:6379
  drasi-ray run app.yaml --exit-when-idle      # process what is in the streams, then exit
  drasi-ray run hello-world-source.yaml hello-world-queries.yaml --app-id hello
  ray job submit --working-dir . -- drasi-ray run app.yaml
"""


def add_parser(commands: Any) -> None:
    parser = common.subcommand(
        commands,
        "run",
        "run an app from a YAML file until interrupted",
        HELP,
    )
    common.add_app_arguments(parser, several=True, app_id=True)
    parser.add_argument("--quiet", action="store_true", help="do not print result diffs")
    parser.add_argument(
        "--exit-when-idle",
        action="store_true",
        help="stop once everything in the source streams is applied (batch jobs, ray job)",
    )
    parser.add_argument(
        "--status-interval",
        type=float,
        default=1.0,
        metavar="S",
        help="seconds between status lines on stderr (0: none; 10 s minimum off a terminal)",
    )


def run(args: argparse.Namespace) -> int:
    """Run the app in the foreground (:mod:`drasi_ray.ops.foreground`: signals, clean stop)."""
    from drasi_ray.app import DrasiRay

    config = common.load_app(args.config, args.redis_url, args.app_id)
    app = DrasiRay.from_config(config)

    def loop(subscriptions: dict[str, Any], stop: threading.Event) -> None:
        connection = app.ray_connection
        where = "" if connection is None else f" on {connection.describe()}"
        print(f"drasi-ray: app {app.app_id!r} running{where}; Ctrl-C to stop", flush=True)
        if args.exit_when_idle:
            threading.Thread(target=_stop_when_idle, args=(app, stop), daemon=True).start()
        _serve(app, config, args, subscriptions, stop)

    return foreground.serve(app, lambda: _start(app), loop)


def _serve(
    app: Any,
    config: Any,
    args: argparse.Namespace,
    subscriptions: dict[str, Any],
    stop: threading.Event,
) -> None:
    """Until ``stop``: print the results, the status line, and answer the commands (which
    may add or remove subscriptions); then close what was opened."""
    line = StatusLine(config, sys.stderr, args.status_interval)
    commands = None
    try:
        commands = _serve_commands(app, config, args, subscriptions)
        while not stop.is_set():
            _print_results(list(subscriptions.values()), args.quiet)
            line.maybe_show(app)
            if commands is not None:
                commands.serve()
        _print_results(list(subscriptions.values()), args.quiet, wait=False)
    finally:
        if commands is not None:
            commands.close()
        for subscription in subscriptions.values():
            subscription.close()
        line.close()


def _start(app: Any) -> dict[str, Any]:
    """Start the queries, subscribe to each, then start the sources: so the results of what
    the streams already hold (a backlog, ``start_id: "0"``) are printed too."""
    app.start(sources=False)
    subscriptions = {query_id: app.subscribe(query_id) for query_id in app.query_ids}
    app.start_sources()
    return subscriptions


def _serve_commands(app: Any, config: Any, args: argparse.Namespace, subscriptions: Any) -> Any:
    """Serve apply, list, describe, delete and watch on the app's control Redis (its state
    Redis, else its first source's, else --redis-url); None when it has none."""
    from drasi_ray.ops.manage import serve_commands

    url = common.control_url(config) or args.redis_url
    if url is None:
        print("drasi-ray: no Redis to serve commands on (set state.redis_url)", file=sys.stderr)
        return None
    return serve_commands(app, url, list(args.config), subscriptions)


def _stop_when_idle(app: Any, stop: threading.Event) -> None:
    """``--exit-when-idle``: once everything in the streams is applied and delivered."""
    try:
        app.wait_until_idle(timeout=3600)
    except Exception as exc:  # the main loop stops and reports; the app is stopped there
        print(f"drasi-ray: error: {exc}", file=sys.stderr, flush=True)
    finally:
        stop.set()


def _print_results(subscriptions: list[Any], quiet: bool, *, wait: bool = True) -> None:
    """Print what the subscriptions hold (waiting a moment for it unless ``wait`` is False,
    then everything they hold)."""
    from drasi_ray.ops.demo import format_result

    if not subscriptions and wait:  # no query yet (one may be applied): wait as a round would
        time.sleep(0.2)
    timeout = 0.2 / max(1, len(subscriptions))
    for subscription in subscriptions:
        results = subscription.next(timeout=timeout) if wait else subscription.drain()
        for result in results:
            if not quiet:
                print(f"[{result.query_id}] {format_result(result)}", flush=True)


class StatusLine:
    """``sensors lag 0 pending 0 consumers 2 | hot #12 rows 3 reactions ok``, on ``out``.

    On a terminal the line is redrawn in place every ``interval`` seconds; elsewhere a new
    line is written at most every 10 seconds. ``interval`` 0 disables it.
    """

    def __init__(self, config: Any, out: IO[str], interval: float) -> None:
        self._config = config
        self._out = out
        self._tty = out.isatty()
        self._interval = 0.0 if interval <= 0 else interval if self._tty else max(interval, 10)
        self._last = time.monotonic()

    def maybe_show(self, app: Any) -> None:
        if not self._interval or time.monotonic() - self._last < self._interval:
            return
        self._last = time.monotonic()
        try:
            text = self.render(app)
        except Exception as exc:  # a status hiccup must never stop the app
            text = f"status unavailable: {exc}"
        self._out.write(f"\r\x1b[K{text}" if self._tty else f"{text}\n")
        self._out.flush()

    def render(self, app: Any) -> str:
        parts = []
        for spec in self._config.sources:
            s = source_status(spec, self._config.id)
            consumers = max(len(stream.consumers) for stream in s.streams)
            parts.append(f"{spec.id} lag {s.lag} pending {s.pending} consumers {consumers}")
        for query_id, info in app.status().as_dict().get("queries", {}).items():
            reactions = info.get("reactions", [])
            bad = [r["kind"] for r in reactions if r.get("state") != "running" or r["dropped"]]
            health = "ok" if not bad else "trouble: " + ",".join(bad)
            parts.append(f"{query_id} #{info.get('sequence')} rows {info.get('rows')}")
            if reactions:
                parts[-1] += f" reactions {health}"
        return " | ".join(parts)

    def close(self) -> None:
        if self._tty and self._interval:
            self._out.write("\n")
            self._out.flush()
