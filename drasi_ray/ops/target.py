"""Which running app a command talks to: ``--app`` and ``--redis-url``.

``apply``, ``list``, ``describe``, ``delete`` and ``watch`` reach the app that ``drasi-ray
run`` serves on its control Redis (:mod:`drasi_ray.ops.control`): they name it by its id,
``--app`` (else ``DRASI_RAY_APP``, else ``default``, the id of an app run from Drasi resource
files without ``--app-id``), and that Redis, ``--redis-url`` (else ``DRASI_RAY_REDIS_URL``,
else ``redis://localhost:6379``). These defaults are read when the command line is parsed.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from drasi_ray.model.errors import ConfigError
from drasi_ray.model.resources import QUERY, REACTION, SOURCE
from drasi_ray.ops.control import ControlClient

DEFAULT_APP = "default"
DEFAULT_REDIS_URL = "redis://localhost:6379"
APP_VARIABLE = "DRASI_RAY_APP"
REDIS_VARIABLE = "DRASI_RAY_REDIS_URL"

TARGET_HELP = """\
the app: the one `drasi-ray run` serves, found by its id (--app, else $DRASI_RAY_APP, else
`default`) on its Redis (--redis-url, else $DRASI_RAY_REDIS_URL, else redis://localhost:6379):
the app's state.redis_url, else its first source's"""


def add_target_arguments(parser: argparse.ArgumentParser, timeout_s: float) -> None:
    """``--app``, ``--redis-url`` and ``--timeout`` (default ``timeout_s``)."""
    parser.add_argument(
        "-a",
        "--app",
        metavar="ID",
        default=os.environ.get(APP_VARIABLE, DEFAULT_APP),
        help=f"the running app's id (default: ${APP_VARIABLE}, else {DEFAULT_APP})",
    )
    parser.add_argument(
        "--redis-url",
        metavar="URL",
        default=os.environ.get(REDIS_VARIABLE, DEFAULT_REDIS_URL),
        help=f"the app's Redis (default: ${REDIS_VARIABLE}, else {DEFAULT_REDIS_URL})",
    )
    parser.add_argument(
        "--timeout",
        metavar="S",
        type=float,
        default=timeout_s,
        help=f"seconds to wait for the app's answer (default {timeout_s:g})",
    )


def client(args: argparse.Namespace) -> ControlClient:
    """The control client of the app the arguments name."""
    if args.timeout <= 0:
        raise ConfigError(f"--timeout must be positive, got {args.timeout:g}")
    return ControlClient(args.redis_url, args.app)


def read_text(path: str) -> str:
    """A file's text (an OSError names the file: the command line says it in one line)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not a UTF-8 text file") from exc


KIND_NAMES = {
    "source": SOURCE,
    "continuousquery": QUERY,
    "query": QUERY,
    "reaction": REACTION,
}
"""What the commands take for a kind (Drasi's CLI names, any case) -> the resource kind."""


def resource_kind(written: str) -> str:
    """The resource kind a command names (``source``, ``query``/``continuousquery``,
    ``reaction``, any case); ConfigError otherwise."""
    kind = KIND_NAMES.get(written.lower())
    if kind is None:
        raise ConfigError(f"unknown kind {written!r}: source, query (or continuousquery), reaction")
    return kind
