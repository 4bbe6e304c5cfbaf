"""The ``drasi-ray`` command line.

    drasi-ray demo              run the whole pipeline on an embedded Redis and local Ray
    drasi-ray run app.yaml      run an app described in YAML until Ctrl-C
    drasi-ray analytics counts app.yaml      Spark analytics over the streams (also: latest,
                                             stats LABEL, export PATH); see --help

Environment variables are read here and nowhere else (``RAY_ADDRESS`` is Ray's own).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence

from drasi_ray.analytics import command as analytics_command
from drasi_ray.errors import DrasiRayError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="drasi-ray",
        description="Continuous Cypher queries over Redis Streams change feeds, on Ray.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="run the demo: private Redis + local Ray, sensor events, live result diffs",
        description="Starts a private Redis and a local Ray, publishes sample sensor change "
        "events and prints the diffs of a continuous query as they arrive.",
    )
    demo.add_argument("--sensors", type=int, default=5, help="number of sensors (default 5)")
    demo.add_argument("--updates", type=int, default=40, help="temperature updates (default 40)")
    demo.add_argument("--consumers", type=int, default=2, help="consumer actors (default 2)")

    run = commands.add_parser(
        "run",
        help="run an app from a YAML file until interrupted",
        description="Starts every source and query of APP_YAML and prints each query's result "
        "diffs until Ctrl-C (or SIGTERM), then stops cleanly.",
    )
    run.add_argument("config", metavar="APP_YAML", help="application file (sources, queries)")
    run.add_argument("--quiet", action="store_true", help="do not print result diffs")
    analytics_command.add_parser(commands)
    return parser


def _cmd_demo(args: argparse.Namespace) -> int:
    from drasi_ray.demo import run_demo

    run_demo(sensors=args.sensors, updates=args.updates, consumers=args.consumers)
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from drasi_ray.app import DrasiRay
    from drasi_ray.demo import format_result

    app = DrasiRay.from_yaml(args.config)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    app.start()
    print(f"drasi-ray: app {app.app_id!r} running; Ctrl-C to stop", flush=True)
    subscriptions = [app.subscribe(query_id) for query_id in app.query_ids]
    try:
        while not stop.is_set():
            for subscription in subscriptions:
                for result in subscription.next(timeout=0.2 / max(1, len(subscriptions))):
                    if not args.quiet:
                        print(f"[{result.query_id}] {format_result(result)}", flush=True)
    finally:
        for subscription in subscriptions:
            subscription.close()
        app.stop()
        print("drasi-ray: stopped", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    handlers = {"demo": _cmd_demo, "run": _cmd_run, "analytics": analytics_command.run}
    try:
        return handlers[args.command](args)
    except DrasiRayError as exc:
        print(f"drasi-ray: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
