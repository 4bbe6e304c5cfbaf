"""``drasi-ray describe KIND NAME``: a resource of a running app, its settings and status."""

from __future__ import annotations

import argparse
from typing import Any

import yaml

from drasi_ray.ops import common, target

HELP = f"""\
Shows a resource of a running app as `drasi describe` does in Drasi: the Drasi resource
document that would create it again (its settings as Drasi spells them, only those that differ
from their defaults, a Redis password masked; what only drasi_ray has under spec.drasiRay),
then its status.

{target.TARGET_HELP}

examples:
  drasi-ray describe query hello-world-from
  drasi-ray describe source hello-world --app shop
"""


def add_parser(commands: Any) -> None:
    parser = common.subcommand(
        commands, "describe", "a resource of a running app: its settings and status", HELP
    )
    parser.add_argument("kind", metavar="KIND", help="source, query (continuousquery), reaction")
    parser.add_argument("name", metavar="NAME", help="the resource's name")
    target.add_target_arguments(parser, timeout_s=30.0)


def run(args: argparse.Namespace) -> int:
    kind = target.resource_kind(args.kind)
    with target.client(args) as app:
        document = app.call("describe", {"kind": kind, "name": args.name}, args.timeout)
    print(as_yaml(document))
    return 0


class _Dumper(yaml.SafeDumper):
    """Multi-line text (a query) as a literal block, as people write it."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def as_yaml(document: Any) -> str:
    """``document`` as YAML, keys in their order, multi-line text as literal blocks."""
    return yaml.dump(document, Dumper=_Dumper, sort_keys=False, width=100).rstrip()
