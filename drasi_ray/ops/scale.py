"""``drasi-ray scale``: change a running app's consumer count for one source, or its number of
store shards."""

from __future__ import annotations

import argparse
from typing import Any

import ray

from drasi_ray.actors import names
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
    from drasi_ray.app import DrasiRay

    wanted = 1 if args.shards is not None else 3
    if len(args.target) != wanted:
        usage = "APP_YAML with --shards" if wanted == 1 else "SOURCE N APP_YAML"
        raise SystemExit(f"drasi-ray scale: expected {usage}, got {' '.join(args.target)}")
    config = common.load_app(args.target[-1], args.redis_url)
    app = DrasiRay.from_config(config)
    if not ray.is_initialized():
        ray.init(
            address=args.address or "auto",
            namespace=names.namespace(config.id),
            log_to_driver=False,
        )
    if args.shards is not None:
        before = app.scale_shards(args.shards)
        print(f"app {config.id}: {before} -> {args.shards} store shards")
        return 0
    source, count = args.target[0], args.target[1]
    if not count.isdigit():
        raise SystemExit(f"drasi-ray scale: N must be a whole number, got {count!r}")
    consumers = int(count)
    before = app.scale(source, consumers)
    print(f"source {source}: {before} -> {consumers} consumers")
    return 0
