"""``drasi-ray dashboard``: run an app with its live dashboard and print the page's URL."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from typing import Any

from drasi_ray.model.config import AppConfig
from drasi_ray.model.reaction_specs import SseReaction
from drasi_ray.ops import common, foreground

HELP = """\
Runs APP_YAML as `drasi-ray run` does, with the dashboard: a page showing every query's
current results as tables that update live (rows highlighted as they are added, updated and
deleted; a chart for aggregating queries), served with the queries' changes as Server-Sent
Events (GET /events). The URL is printed once the app runs. The file's own `kind: sse`
reaction is used if it has one (--host and --port override its address), else one is added.
It listens on 127.0.0.1 unless told otherwise. Ctrl-C or SIGTERM stops it at any moment,
start-up included, and the app cleanly (as `drasi-ray run`).

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
    return serve(config)


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


def serve(
    config: AppConfig,
    stop: threading.Event | None = None,
    echo: Callable[[str], Any] = foreground.say,
) -> int:
    """Run the app until ``stop`` is set or Ctrl-C / SIGTERM (start-up included: as ``run``,
    :mod:`drasi_ray.ops.foreground`), printing each dashboard's URL once it listens."""
    from drasi_ray.app import DrasiRay

    app = DrasiRay.from_config(config)

    def announce(_started: Any, stop: threading.Event) -> None:
        for reaction in config.reactions:
            if isinstance(reaction, SseReaction):
                url = app.reaction_url(reaction.id)
                echo(f"drasi-ray: app {app.app_id!r}: dashboard at {url} (Ctrl-C to stop)")
        stop.wait()

    return foreground.serve(app, app.start, announce, stop=stop, echo=echo)
