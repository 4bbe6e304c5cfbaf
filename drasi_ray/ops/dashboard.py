"""``drasi-ray dashboard``: run an app with its live dashboard and print the page's URL."""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Callable
from typing import Any

from drasi_ray.model.config import AppConfig
from drasi_ray.model.reaction_specs import SseReaction
from drasi_ray.ops import common

HELP = """\
Runs APP_YAML as `drasi-ray run` does, with the dashboard: a page showing every query's
current results as tables that update live (rows highlighted as they are added, updated and
deleted; a chart for aggregating queries), served with the queries' changes as Server-Sent
Events (GET /events). The URL is printed once the app runs. The file's own `kind: sse`
reaction is used if it has one (--host and --port override its address), else one is added.
It listens on 127.0.0.1 unless told otherwise. Ctrl-C or SIGTERM stops the app cleanly.

examples:
  drasi-ray dashboard app.yaml                  # then open the printed URL
  drasi-ray dashboard app.yaml --port 0         # any free port
  drasi-ray dashboard app.yaml --host 0.0.0.0 --port 9000   # other machines can reach it
"""

DEFAULT_PORT = 8080


def add_parser(commands: Any) -> None:
    parser = common.subcommand(
        commands, "dashboard", "run an app with its live dashboard (prints the URL)", HELP
    )
    common.add_app_arguments(parser)
    parser.add_argument("--host", metavar="ADDRESS", help="bind address (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, metavar="PORT", help=f"TCP port (default {DEFAULT_PORT}; 0: any free)"
    )


def run(args: argparse.Namespace) -> int:
    config = with_dashboard(common.load_app(args.config, args.redis_url), args.host, args.port)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    return serve(config, stop)


def with_dashboard(config: AppConfig, host: str | None, port: int | None) -> AppConfig:
    """``config`` with an SSE reaction: its first one at ``host``/``port`` when given, else a
    new one (``dashboard``, on 127.0.0.1:8080 unless given)."""
    address: dict[str, Any] = {"host": host, "port": port}
    address = {key: value for key, value in address.items() if value is not None}
    reactions = list(config.reactions)
    index = next((i for i, r in enumerate(reactions) if isinstance(r, SseReaction)), None)
    if index is None:
        taken = {reaction.id for reaction in reactions}
        name = "dashboard" if "dashboard" not in taken else "drasi-ray-dashboard"
        reactions.append(SseReaction(id=name, **{"port": DEFAULT_PORT, **address}))
    else:
        reactions[index] = reactions[index].model_copy(update=address)
    raw = config.model_dump(mode="python")
    raw["reactions"] = [reaction.model_dump(mode="python") for reaction in reactions]
    return AppConfig.from_mapping(raw, origin="dashboard")


def _say(text: str) -> None:
    print(text, flush=True)


def serve(config: AppConfig, stop: threading.Event, echo: Callable[[str], Any] = _say) -> int:
    """Run the app until ``stop`` is set, printing each dashboard's URL once it listens."""
    from drasi_ray.app import DrasiRay

    app = DrasiRay.from_config(config)
    app.start()
    try:
        for reaction in config.reactions:
            if isinstance(reaction, SseReaction):
                url = app.reaction_url(reaction.id)
                echo(f"drasi-ray: app {app.app_id!r}: dashboard at {url} (Ctrl-C to stop)")
        stop.wait()
    finally:
        app.stop()
        echo("drasi-ray: stopped")
    return 0
