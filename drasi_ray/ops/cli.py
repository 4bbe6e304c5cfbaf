"""The ``drasi-ray`` command line.

    drasi-ray demo                          the whole pipeline on an embedded Redis and local Ray
    drasi-ray run app.yaml                  run an app until Ctrl-C (result diffs, status line)
    drasi-ray dashboard app.yaml            run an app with its live dashboard (prints the URL)
    drasi-ray validate app.yaml             schema + query syntax, errors at file:line:column
    drasi-ray publish STREAM events.jsonl   XADD change events, pipelined, with progress
    drasi-ray status app.yaml [--json]      lag, pending, dead letters, result sequences
    drasi-ray dlq list|replay|purge SOURCE app.yaml
    drasi-ray replay SOURCE --from ID app.yaml
    drasi-ray scale SOURCE N app.yaml
    drasi-ray apply -f FILE...              create or update Drasi resources in a running app
    drasi-ray list [KIND]                   its sources, queries and reactions, with status
    drasi-ray describe KIND NAME            one of them: settings (as a Drasi document), status
    drasi-ray delete KIND NAME | -f FILE... remove resources from the running app
    drasi-ray watch QUERY                   a query's results as a live table
    drasi-ray analytics counts app.yaml     Spark analytics over the streams (also: latest,
                                            stats LABEL, export PATH); see --help

Environment variables are read here and nowhere else (``RAY_ADDRESS`` is Ray's own). The
subcommands live in :mod:`drasi_ray.ops` (and :mod:`drasi_ray.ops.analytics`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

from drasi_ray.model.errors import DrasiRayError
from drasi_ray.ops import analytics as analytics_command
from drasi_ray.ops import (
    apply,
    common,
    dashboard,
    delete,
    describe,
    dlq,
    listing,
    publish,
    replay,
    run,
    scale,
    status,
    validate,
    watch,
)

EPILOG = """\
Every subcommand has its own --help with examples, e.g. `drasi-ray status --help`.

a first session:
  drasi-ray demo                                   # no setup needed
  drasi-ray validate app.yaml                      # check the file
  drasi-ray run app.yaml                           # in one terminal
  drasi-ray publish sensor-changes events.jsonl    # in another
  drasi-ray status app.yaml                        # lag should fall to 0
"""

_MODULES = {
    "run": run,
    "dashboard": dashboard,
    "validate": validate,
    "publish": publish,
    "status": status,
    "dlq": dlq,
    "replay": replay,
    "scale": scale,
    "apply": apply,
    "list": listing,
    "describe": describe,
    "delete": delete,
    "watch": watch,
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="drasi-ray",
        description="Continuous Cypher queries over Redis Streams change feeds, on Ray.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = common.subcommand(
        commands,
        "demo",
        "run the demo: private Redis + local Ray, sensor events, live result diffs",
        "Starts a private Redis and a local Ray, publishes sample sensor change "
        "events and prints the diffs of a continuous query as they arrive.\n\n"
        "The dashboard's URL is printed first: open it to watch the results change.\n\n"
        "examples:\n  drasi-ray demo\n  drasi-ray demo --sensors 20 --updates 500 --consumers 3\n"
        "  drasi-ray demo --keep-running          # the dashboard stays up until Ctrl-C",
    )
    demo.add_argument("--sensors", type=int, default=5, help="number of sensors (default 5)")
    demo.add_argument("--updates", type=int, default=40, help="temperature updates (default 40)")
    demo.add_argument("--consumers", type=int, default=2, help="consumer actors (default 2)")
    demo.add_argument(
        "--keep-running", action="store_true", help="keep the app and dashboard up until Ctrl-C"
    )
    for module in _MODULES.values():
        module.add_parser(commands)
    analytics_command.add_parser(commands)
    return parser


def _cmd_demo(args: argparse.Namespace) -> int:
    from drasi_ray.ops.demo import run_demo

    run_demo(
        sensors=args.sensors,
        updates=args.updates,
        consumers=args.consumers,
        keep_running=args.keep_running,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "demo": _cmd_demo,
        "analytics": analytics_command.run,
        **{name: module.run for name, module in _MODULES.items()},
    }
    try:
        return handlers[args.command](args)
    except DrasiRayError as exc:
        print(f"drasi-ray: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
