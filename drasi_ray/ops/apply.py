"""``drasi-ray apply -f FILE...``: create or update resources in a running app."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from drasi_ray.model import resources
from drasi_ray.ops import common, target

HELP = f"""\
Creates or updates the sources, continuous queries and reactions of Drasi resource files
(apiVersion: v1 documents of kind Source, ContinuousQuery, Reaction) in a running app, as
`drasi apply -f` does in Drasi. Each file is checked here first, then in the app against what
runs: any problem (a query that does not parse, a source or query that does not exist)
refuses the whole file and leaves the app as it was. A new query is bootstrapped before
apply returns; a changed query or reaction is replaced; a changed source is refused (delete
it first). Files are applied in the order given.

{target.TARGET_HELP}

examples:
  drasi-ray apply -f hello-world-source.yaml hello-world-queries.yaml
  drasi-ray apply -f queries.yaml --app shop --redis-url redis://redis.internal:6379
"""


def add_parser(commands: Any) -> None:
    parser = common.subcommand(
        commands, "apply", "create or update resources of Drasi files in a running app", HELP
    )
    parser.add_argument(
        "-f", "--files", metavar="FILE", nargs="+", required=True, help="Drasi resource files"
    )
    target.add_target_arguments(parser, timeout_s=120.0)


def run(args: argparse.Namespace) -> int:
    texts = [(path, target.read_text(path)) for path in args.files]
    for path, text in texts:
        resources.resource_names(text, path)  # not resources: refused here, nothing sent
    with target.client(args) as app:
        for path, text in texts:
            reply = app.call("apply", {"text": text, "file": path}, args.timeout)
            for notice in reply["notices"]:
                print(f"drasi-ray: {notice}", file=sys.stderr)
            for line in reply["lines"]:
                print(f"Apply: {line}")
    print("Apply operation successful")
    return 0
