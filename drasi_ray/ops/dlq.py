"""``drasi-ray dlq list|replay|purge``: inspect and act on a source's dead-letter stream.

``replay`` re-appends each dead letter's original fields (``orig:<name>``, copied byte for
byte, see :class:`~drasi_ray.streams.records.DeadLetter`) to the stream it came from (one of
the source's streams: a partitioned source has one dead-letter stream for all) as a new entry,
then deletes the dead letter: one ``MULTI``/``EXEC`` per batch, so a dead letter is never both
replayed and kept, nor deleted without being replayed.
"""

from __future__ import annotations

import argparse
from typing import Any

import redis

from drasi_ray.model.config import PlatformSourceConfig
from drasi_ray.model.errors import ConfigError
from drasi_ray.ops import common
from drasi_ray.streams.records import DeadLetter

PAGE = 500

HELP = """\
Dead letters are entries the consumers gave up on (malformed, too large, or delivered more
than max_deliveries times), kept with the reason and the stream they came from in the
source's dead-letter stream (<first stream key>:dlq unless dead_letter_stream is set).

  list    show them: dead-letter id, original stream and entry id, deliveries, reason
  replay  re-append their original fields to their stream (after you fixed the cause:
          a consumer reads them again like new entries) and delete them from the DLQ
  purge   delete them

examples:
  drasi-ray dlq list sensors app.yaml
  drasi-ray dlq replay sensors app.yaml --id 1700000000000-0
  drasi-ray dlq purge sensors app.yaml
"""


def add_parser(commands: Any) -> None:
    parser = common.subcommand(
        commands,
        "dlq",
        "list, replay or purge a source's dead letters",
        HELP,
    )
    parser.add_argument("action", choices=("list", "replay", "purge"))
    parser.add_argument("source", metavar="SOURCE", help="source id in APP_YAML")
    common.add_app_arguments(parser)
    parser.add_argument(
        "--id",
        dest="ids",
        action="append",
        metavar="DLQ_ID",
        help="only this dead letter (repeatable); default: all",
    )
    parser.add_argument("--limit", type=int, default=100, help="list: show at most N (100)")


def run(args: argparse.Namespace) -> int:
    config = common.load_app(args.config, args.redis_url)
    props = common.source_spec(config, args.source).stream_settings(config.id)
    with common.client(props.redis_url) as client:
        if args.action == "list":
            for line in list_lines(client, props, args.limit, args.ids):
                print(line)
        elif args.action == "replay":
            replayed = replay(client, props, args.ids)
            print(f"replayed {len(replayed)} dead letter(s) to {props.streams_label}")
        else:
            purged = purge(client, props, args.ids)
            print(f"purged {purged} dead letter(s) from {props.dead_letter_key}")
    return 0


def dead_letters(
    client: redis.Redis, props: PlatformSourceConfig, ids: list[str] | None = None
) -> list[tuple[str, DeadLetter]]:
    """``(dead-letter id, DeadLetter)`` pairs, oldest first (only ``ids`` if given)."""
    found: list[tuple[str, DeadLetter]] = []
    if ids:
        for dlq_id in ids:
            page: Any = client.xrange(props.dead_letter_key, dlq_id, dlq_id)
            found += [(common.text(i), DeadLetter.from_fields(f)) for i, f in page]
        return found
    start = "-"
    while True:
        page = client.xrange(props.dead_letter_key, start, "+", count=PAGE)
        found += [(common.text(i), DeadLetter.from_fields(f)) for i, f in page]
        if len(page) < PAGE:
            return found
        start = "(" + common.text(page[-1][0])


def list_lines(
    client: redis.Redis, props: PlatformSourceConfig, limit: int, ids: list[str] | None
) -> list[str]:
    letters = dead_letters(client, props, ids)
    lines = [f"{len(letters)} dead letter(s) in {props.dead_letter_key}"]
    for dlq_id, letter in letters[:limit]:
        lines.append(
            f"{dlq_id}  entry {letter.source_stream} {letter.entry_id}  "
            f"deliveries {letter.delivery_count}  "
            f"consumer {letter.consumer}  reason: {letter.reason}"
        )
    return lines


def replay(
    client: redis.Redis, props: PlatformSourceConfig, ids: list[str] | None = None
) -> list[str]:
    """Re-append the original fields to the source stream, delete the dead letters.

    Each goes back to the stream it came from. Dead letters without original fields (the
    entry's data was already deleted) are only deleted. Returns the new entry ids. ConfigError,
    before anything is written, if a dead letter came from a stream the source no longer reads.
    """
    letters = dead_letters(client, props, ids)
    strays = sorted({letter.source_stream for _, letter in letters} - set(props.stream_keys))
    if strays:
        raise ConfigError(
            f"dead letters came from stream(s) {', '.join(strays)}, not among the source's "
            f"({props.streams_label}); replay them with --id after fixing stream_keys"
        )
    new_ids: list[str] = []
    for start in range(0, len(letters), PAGE):
        chunk = letters[start : start + PAGE]
        pipe = client.pipeline(transaction=True)
        for dlq_id, letter in chunk:
            if letter.fields is not None:
                fields: Any = dict(letter.fields)
                pipe.xadd(letter.source_stream, fields)
            pipe.xdel(props.dead_letter_key, dlq_id)
        replies = pipe.execute()
        new_ids += [common.text(r) for r in replies if isinstance(r, (bytes, str))]
    return new_ids


def purge(client: redis.Redis, props: PlatformSourceConfig, ids: list[str] | None = None) -> int:
    """Delete the given dead letters (all when ``ids`` is None); returns how many."""
    if ids:
        return int(client.xdel(props.dead_letter_key, *ids))
    count = int(client.xlen(props.dead_letter_key))
    client.delete(props.dead_letter_key)
    return count
