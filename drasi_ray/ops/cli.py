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
import importlib
import logging
import signal
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from drasi_ray.model.errors import DrasiRayError

EPILOG = """\
Every subcommand has its own --help with examples, e.g. `drasi-ray status --help`.

a first session:
  drasi-ray demo                                   # no setup needed
  drasi-ray validate app.yaml                      # check the file
  drasi-ray run app.yaml                           # in one terminal
  drasi-ray publish sensor-changes events.jsonl    # in another
  drasi-ray status app.yaml                        # lag should fall to 0
"""

_COMMANDS = (
    "run", "dashboard", "validate", "publish", "status", "results", "dlq", "replay", "scale",
    "apply", "list", "describe", "delete", "watch",
)  # fmt: skip
_MODULE_OF = {"list": "listing"}
"""A command whose module is named otherwise (``list`` is a builtin's name)."""


def _modules() -> dict[str, ModuleType]:
    """The subcommands' modules, imported here (not when this module is), so a Ctrl-C while
    they load is handled like any other."""
    return {
        name: importlib.import_module(f"drasi_ray.ops.{_MODULE_OF.get(name, name)}")
        for name in _COMMANDS
    }


def _parser(modules: dict[str, ModuleType]) -> argparse.ArgumentParser:
    from drasi_ray.ops import analytics as analytics_command
    from drasi_ray.ops import common

    parser = argparse.ArgumentParser(
        prog="drasi-ray",
        description="Continuous Cypher queries over Redis Streams change feeds, on Ray.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    parser.add_argument(
        "--debug", action="store_true", help="show the Python traceback of an error (and log)"
    )
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
    for module in modules.values():
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
    """Run one command; 0 on success, 2 for a user's mistake or an unreachable server (one
    line on stderr, the traceback only with ``--debug``), 130 when interrupted (Ctrl-C or
    SIGTERM, at any moment, the imports included)."""
    words = list(sys.argv[1:] if argv is None else argv)
    previous = signal.signal(signal.SIGTERM, _interrupted)
    try:
        return _main(words)
    except KeyboardInterrupt:
        print("drasi-ray: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if "--debug" in words:
            raise
        print(f"drasi-ray: error: {describe(exc)}", file=sys.stderr)
        return 2 if isinstance(exc, (DrasiRayError, OSError)) else 1
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupted(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _main(words: list[str]) -> int:
    from drasi_ray.ops import analytics as analytics_command

    modules = _modules()
    args = _parser(modules).parse_args(words)
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "demo": _cmd_demo,
        "analytics": analytics_command.run,
        **{name: module.run for name, module in modules.items()},
    }
    result: int = handlers[args.command](args)
    return result


def describe(exc: BaseException) -> str:
    """One line saying what went wrong: the package's own message, a file problem with its
    path, or for anything else its type and text and the hint to run with ``--debug``."""
    if isinstance(exc, DrasiRayError):
        return str(exc)
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text} (run with --debug for the traceback)"


if __name__ == "__main__":
    sys.exit(main())
