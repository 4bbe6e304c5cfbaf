"""``drasi-ray scale``: change a running app's consumer count for one source."""

from __future__ import annotations

import argparse
from typing import Any

import ray

from drasi_ray.actors import names
from drasi_ray.ops import common

HELP = """\
Runs N consumer actors for SOURCE in the running app of APP_YAML (found by name in the Ray
namespace drasi_ray.<app id>; connect with --address or RAY_ADDRESS, default: the local
cluster). Scaling up starts consumers <name>-<i> that read at once; scaling down stops the
highest-numbered ones gracefully (the batch in hand is finished and acked), hands whatever is
still pending on them to consumer 0 and deletes them from the group (XGROUP DELCONSUMER).
Consumers started here are detached actors: `drasi-ray run` stops them when it stops.

examples:
  drasi-ray scale sensors 4 app.yaml
  RAY_ADDRESS=http://head:8265 drasi-ray scale sensors 1 app.yaml
"""


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "scale",
        help="change the number of consumer actors of a running app's source",
        description=HELP,
        formatter_class=common.EPILOG_FORMATTER,
    )
    parser.add_argument("source", metavar="SOURCE", help="source id in APP_YAML")
    parser.add_argument("consumers", metavar="N", type=int, help="consumer actors wanted (>= 1)")
    common.add_app_arguments(parser)
    parser.add_argument("--address", help="Ray cluster address (default: RAY_ADDRESS or auto)")


def run(args: argparse.Namespace) -> int:
    from drasi_ray.app import DrasiRay

    config = common.load_app(args.config, args.redis_url)
    app = DrasiRay.from_config(config)
    if not ray.is_initialized():
        ray.init(
            address=args.address or "auto",
            namespace=names.namespace(config.id),
            log_to_driver=False,
        )
    before = app.scale(args.source, args.consumers)
    print(f"source {args.source}: {before} -> {args.consumers} consumers")
    return 0
