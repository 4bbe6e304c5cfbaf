"""``drasi-ray replay``: move a source's consumer group back (``XGROUP SETID``), on every
stream of the source or on one (``--stream``).

Destructive for the group's position: every entry after ``--from`` is delivered again, to
running consumers at once. Re-delivered changes that the element store already holds are
no-ops (versions), so replaying over applied history emits nothing; replaying history the app
never applied (a group created at ``$`` after producers had written, a store that was reset)
applies it. Entries still pending stay pending.
"""

from __future__ import annotations

import argparse
from typing import Any

from drasi_ray.model.config import ENTRY_ID, PlatformSourceConfig
from drasi_ray.model.errors import ConfigError
from drasi_ray.ops import common
from drasi_ray.streams import admin

HELP = """\
Sets the consumer group's last-delivered id to ID, so every entry after it is delivered again.
This REWRITES THE GROUP'S POSITION for every consumer of the group (it is what Drasi's
"delete and recreate the group at 0" does, without deleting anything). Use 0 to replay the
whole stream, $ to skip to the end. A source of several streams is moved on every stream (an
entry id is a time, so ID means the same moment on each), or on one with --stream.

examples:
  drasi-ray replay sensors --from 0 app.yaml
  drasi-ray replay sensors --from 1699900000000-0 app.yaml
"""


def add_parser(commands: Any) -> None:
    parser = common.subcommand(
        commands,
        "replay",
        "re-deliver a source's stream from an id (XGROUP SETID; destructive)",
        HELP,
    )
    parser.add_argument("source", metavar="SOURCE", help="source id in APP_YAML")
    parser.add_argument("--from", dest="start", required=True, metavar="ID", help="0, $ or an id")
    parser.add_argument(
        "--stream", metavar="STREAM", help="only this stream of the source (default: all)"
    )
    common.add_app_arguments(parser)


def run(args: argparse.Namespace) -> int:
    config = common.load_app(args.config, args.redis_url)
    props = common.source_spec(config, args.source).stream_settings(config.id)
    streams = props.stream_keys if args.stream is None else (args.stream,)
    if args.stream is not None and args.stream not in props.stream_keys:
        raise ConfigError(
            f"source {args.source!r} reads {props.streams_label}, not {args.stream!r}"
        )
    if args.start != "$" and not ENTRY_ID.match(args.start):
        raise ConfigError(f"--from {args.start!r}: give 0, $ or an entry id like 1700000000000-0")
    common.connect(config, props.redis_url, f"source {args.source!r}").close()
    for stream in streams:
        previous = set_position(props, args.start, stream)
        print(
            f"group {props.consumer_group} of {stream}: last-delivered id "
            f"{previous} -> {args.start}"
        )
    return 0


def set_position(props: PlatformSourceConfig, start: str, stream: str) -> str:
    """``XGROUP SETID`` on ``stream`` (creating the group there if missing); returns the
    previous position."""
    with common.client(props.redis_url) as client:
        group = props.consumer_group
        current = admin.group_progress(client, stream, group, consumers=False)
        if current is None:  # no group (or no stream yet: MKSTREAM creates it)
            client.xgroup_create(stream, group, id=start, mkstream=True)
            return "(no group)"
        client.xgroup_setid(stream, group, start)
        return current.last_delivered_id
