"""``drasi-ray delete KIND NAME`` / ``delete -f FILE...``: remove resources from a running app."""

from __future__ import annotations

import argparse
from typing import Any

from drasi_ray.model import resources
from drasi_ray.model.errors import ConfigError
from drasi_ray.ops import common, target

HELP = f"""\
Deletes resources from a running app, as `drasi delete` does in Drasi: one named by its kind
(source, query or continuousquery, reaction) and name, or every resource of Drasi files (only
their kinds and names are read). Reactions go first, then queries, then sources. A query stops
(its reactions get its `stopped` signal and write what they hold; its result stream stays); a
source's consumers stop and its graph is dropped (its stream and consumer group stay). Unlike
Drasi, a source that queries still read is not deleted: delete the queries first.

{target.TARGET_HELP}

examples:
  drasi-ray delete query hello-world-from
  drasi-ray delete -f hello-world-reaction.yaml hello-world-queries.yaml
"""


def add_parser(commands: Any) -> None:
    parser = common.subcommand(commands, "delete", "delete resources from a running app", HELP)
    parser.add_argument("kind", metavar="KIND", nargs="?", help="source, query or reaction")
    parser.add_argument("name", metavar="NAME", nargs="?", help="the resource's name")
    parser.add_argument("-f", "--files", metavar="FILE", nargs="+", help="Drasi resource files")
    target.add_target_arguments(parser, timeout_s=60.0)


def run(args: argparse.Namespace) -> int:
    named = [(target.resource_kind(args.kind), args.name)] if args.kind is not None else []
    if args.kind is not None and args.name is None:
        raise ConfigError("delete: give KIND NAME, or -f FILE...")
    listed = [item for path in args.files or () for item in _names(path)]
    if bool(named) == bool(args.files):
        raise ConfigError("delete: give KIND NAME, or -f FILE..., not both")
    with target.client(args) as app:
        reply = app.call("delete", {"resources": named + listed}, args.timeout)
    for line in reply["lines"]:
        print(f"Delete: {line}")
    print("Delete operation successful")
    return 0


def _names(path: str) -> list[tuple[str, str]]:
    """The (kind, name) of every document of a Drasi file."""
    return [
        (kind, name) for kind, name, _ in resources.resource_names(target.read_text(path), path)
    ]
