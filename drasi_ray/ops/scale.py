"""``drasi-ray scale``: change a running app's consumer count for one source, or its number of
store shards."""

from __future__ import annotations

import argparse
import os
from typing import Any

from drasi_ray.model.errors import ConfigError
from drasi_ray.ops import common

HELP = """\
  drasi-ray scale SOURCE N APP_YAML      N consumer actors for SOURCE
  drasi-ray scale --shards K APP_YAML    the element store partitioned over K store shards

Works on the running app of APP_YAML (its actors found by name in the Ray namespace
drasi_ray.<app id>; connect with --address or RAY_ADDRESS, default: the local cluster).

Consumers: scaling up starts consumers <name>-<i> that read at once; scaling down stops the
highest-numbered ones gracefully (the batch in hand is finished and acked), hands whatever is
still pending on them to consumer 0 and deletes them from the group (XGROUP DELCONSUMER).
Consumers started here are detached actors: `drasi-ray run` stops them when it stops.

Shards: every consumer pauses (the batch in hand finishes), the shards hand each other the
elements whose owner changes, every query is bootstrapped again from the new shards, and the
consumers resume; nothing is lost or applied twice.

examples:
  drasi-ray scale sensors 4 app.yaml
  drasi-ray scale --shards 3 app.yaml
  RAY_ADDRESS=http://head:8265 drasi-ray scale sensors 1 app.yaml
"""


def add_parser(commands: Any) -> None:
    parser = common.subcommand(
        commands,
        "scale",
        "change a running app's consumer actors of a source, or its store shards",
        HELP,
    )
    parser.add_argument(
        "target",
        metavar="SOURCE N APP_YAML | APP_YAML",
        nargs="+",
        help="the source, the consumer count wanted (>= 1) and the application file; with "
        "--shards, the application file alone",
    )
    parser.add_argument("--shards", metavar="K", type=int, help="store shards wanted (>= 1)")
    parser.add_argument(
        "--redis-url",
        metavar="URL",
        help="use this Redis for every source (and state), overriding the file",
    )
    parser.add_argument("--address", help="Ray cluster address (default: RAY_ADDRESS or auto)")


def run(args: argparse.Namespace) -> int:
    from drasi_ray.actors import cluster, names
    from drasi_ray.app import DrasiRay

    wanted = 1 if args.shards is not None else 3
    if len(args.target) != wanted:
        usage = "APP_YAML with --shards" if wanted == 1 else "SOURCE N APP_YAML"
        raise ConfigError(f"scale: expected {usage}, got {' '.join(args.target)}")
    if args.shards is None and not args.target[1].isdigit():
        raise ConfigError(f"scale: N must be a whole number, got {args.target[1]!r}")
    config = common.load_app(args.target[-1], args.redis_url)
    app = DrasiRay.from_config(config)
    address = args.address or os.environ.get("RAY_ADDRESS") or "auto"
    ray_config = config.ray.model_copy(update={"address": address})
    cluster.connect(ray_config, names.namespace(config.id), config.connect_timeout_s)
    if args.shards is not None:
        before = app.scale_shards(args.shards)
        print(f"app {config.id}: {before} -> {args.shards} store shards")
        return 0
    source, consumers = args.target[0], int(args.target[1])
    before = app.scale(source, consumers)
    print(f"source {source}: {before} -> {consumers} consumers")
    return 0
