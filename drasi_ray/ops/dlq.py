"""``drasi-ray dlq list|show|replay|purge``: inspect and act on a source's dead-letter stream.

``replay`` re-appends each dead letter's original fields (``orig:<name>``, copied byte for
byte, see :class:`~drasi_ray.streams.records.DeadLetter`) to the stream it came from (one of
the source's streams: a partitioned source has one dead-letter stream for all) as a new entry,
then deletes the dead letter: one ``MULTI``/``EXEC`` per batch, so a dead letter is never both
replayed and kept, nor deleted without being replayed.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import orjson
import redis

from drasi_ray.model.config import PlatformSourceConfig, SourceFormat
from drasi_ray.model.errors import ConfigError
from drasi_ray.ops import common
from drasi_ray.ops.publish import event_payload, parse_event_line
from drasi_ray.source.decode import entry_problem
from drasi_ray.source.formats import decoder_for
from drasi_ray.streams.records import DeadLetter

PAGE = 500

HELP = """\
Dead letters are entries the consumers gave up on (malformed, too large, or delivered more
than max_deliveries times), kept with the reason and the stream they came from in the
source's dead-letter stream (<first stream key>:dlq unless dead_letter_stream is set).

  list    show them: dead-letter id, original stream and entry id, deliveries, reason, and
          the start of the payload (the entry's 'data' field)
  show    one dead letter (--id) in full: every field of the original entry
  replay  re-append their original fields to their stream (after you fixed the cause: a
          consumer reads them again like new entries) and delete them from the DLQ. An entry
          whose payload a consumer would still reject is not replayed (nothing is, then):
          give a corrected payload with --id ID --payload FILE (a change event or a whole
          CloudEvent, as `drasi-ray publish` reads them), or --force
  purge   delete them

A dead-letter id that is not there is an error, for every action.

examples:
  drasi-ray dlq list sensors app.yaml
  drasi-ray dlq show sensors app.yaml --id 1700000000000-0
  drasi-ray dlq replay sensors app.yaml --id 1700000000000-0 --payload fixed.json
  drasi-ray dlq purge sensors app.yaml --id 1700000000000-0
"""

PAYLOAD_PREVIEW = 300
"""Characters of the payload ``dlq list`` shows (``dlq show`` shows it all)."""


def add_parser(commands: Any) -> None:
    parser = common.subcommand(
        commands,
        "dlq",
        "list, show, replay (optionally corrected) or purge a source's dead letters",
        HELP,
    )
    parser.add_argument("action", choices=("list", "show", "replay", "purge"))
    parser.add_argument("source", metavar="SOURCE", help="source id in APP_YAML")
    common.add_app_arguments(parser)
    parser.add_argument(
        "--id",
        dest="ids",
        action="append",
        metavar="DLQ_ID",
        help="only this dead letter (repeatable); default: all (show: required)",
    )
    parser.add_argument("--limit", type=int, default=100, help="list: show at most N (100)")
    parser.add_argument(
        "--payload",
        metavar="FILE",
        help="replay: the corrected payload of the one dead letter given with --id",
    )
    parser.add_argument(
        "--force", action="store_true", help="replay: also entries a consumer would reject"
    )


def run(args: argparse.Namespace) -> int:
    config = common.load_app(args.config, args.redis_url)
    props = common.source_spec(config, args.source).stream_settings(config.id)
    ids = _checked_ids(args.ids)
    payload = _corrected_payload(args, ids)
    _check_payload_format(props, payload)
    with common.connect(config, props.redis_url, f"source {args.source!r}") as client:
        if ids is not None:
            _require_present(client, props, ids)
        if args.action == "list":
            for line in list_lines(client, props, args.limit, ids):
                print(line)
        elif args.action == "show":
            if ids is None:
                raise ConfigError("dlq show needs --id DLQ_ID (see dlq list)")
            for dlq_id, letter in dead_letters(client, props, ids):
                print("\n".join(show_lines(dlq_id, letter)))
        elif args.action == "replay":
            replayed = replay(client, props, ids, payload=payload, force=args.force)
            print(f"replayed {len(replayed)} dead letter(s) to {props.streams_label}")
        else:
            purged = purge(client, props, ids)
            print(f"purged {purged} dead letter(s) from {props.dead_letter_key}")
    return 0


def _checked_ids(ids: list[str] | None) -> list[str] | None:
    """The ``--id`` values, each a stream entry id (``1700000000000-0``), or ConfigError."""
    for dlq_id in ids or ():
        ms, dash, seq = dlq_id.partition("-")
        if not (ms.isdigit() and dash and seq.isdigit()):
            raise ConfigError(
                f"--id {dlq_id!r} is not a dead-letter id (like 1700000000000-0: see dlq list)"
            )
    return ids


def _corrected_payload(args: argparse.Namespace, ids: list[str] | None) -> bytes | None:
    """The ``data`` field ``--payload FILE`` gives (wrapped into a CloudEvent if the file
    holds a change event), for exactly one ``--id``."""
    if args.payload is None:
        return None
    if args.action != "replay" or ids is None or len(ids) != 1:
        raise ConfigError("--payload goes with dlq replay and exactly one --id")
    path = Path(args.payload)
    document = parse_event_line(path.read_bytes(), str(path))
    return event_payload(document)


def _check_payload_format(props: PlatformSourceConfig, payload: bytes | None) -> None:
    if payload is not None and props.format is not SourceFormat.PLATFORM:
        raise ConfigError(
            f"--payload takes a platform change event; this source reads "
            f"{props.format.value} entries: fix the producer, then replay or purge"
        )


def _require_present(client: redis.Redis, props: PlatformSourceConfig, ids: list[str]) -> None:
    missing = [dlq_id for dlq_id in ids if not client.xrange(props.dead_letter_key, dlq_id, dlq_id)]
    if missing:
        raise ConfigError(
            f"no dead letter {', '.join(missing)} in {props.dead_letter_key} (see dlq list)"
        )


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
        payload = _payload_text(letter)
        if len(payload) > PAYLOAD_PREVIEW:
            payload = payload[:PAYLOAD_PREVIEW] + f"... ({len(payload)} characters: dlq show)"
        lines.append(f"    payload: {payload}")
    return lines


def show_lines(dlq_id: str, letter: DeadLetter) -> list[str]:
    """One dead letter in full: where it came from, why, and every original field."""
    lines = [
        f"dead letter {dlq_id}",
        f"  entry:      {letter.source_stream} {letter.entry_id}",
        f"  reason:     {letter.reason}",
        f"  deliveries: {letter.delivery_count} (consumer {letter.consumer})",
    ]
    if letter.fields is None:
        return [*lines, "  (the entry's data was deleted before it was read)"]
    for name, value in letter.fields.items():
        lines.append(f"  field {common.text(name)}:")
        lines += [f"    {line}" for line in _readable(value).splitlines()]
    return lines


def _payload_text(letter: DeadLetter) -> str:
    if letter.fields is None:
        return "(deleted)"
    value = letter.fields.get(b"data")
    if value is None:
        return "(no 'data' field) " + ", ".join(common.text(name) for name in letter.fields)
    return value.decode("utf-8", errors="replace")


def _readable(value: bytes) -> str:
    """A field's value: indented JSON if it is JSON, else its text (invalid UTF-8 replaced)."""
    try:
        return orjson.dumps(orjson.loads(value), option=orjson.OPT_INDENT_2).decode()
    except orjson.JSONDecodeError:
        return value.decode("utf-8", errors="replace")


def replay(
    client: redis.Redis,
    props: PlatformSourceConfig,
    ids: list[str] | None = None,
    *,
    payload: bytes | None = None,
    force: bool = False,
) -> list[str]:
    """Re-append the original fields to the source stream, delete the dead letters.

    Each goes back to the stream it came from, with ``payload`` as its ``data`` field when
    given (one dead letter). Dead letters without original fields (the entry's data was
    already deleted) are only deleted. Returns the new entry ids. ConfigError, before anything
    is written, if a dead letter came from a stream the source no longer reads, or (unless
    ``force``) if a consumer would reject one again (:func:`entry_problem` names why).
    """
    letters = dead_letters(client, props, ids)
    if payload is not None:
        letters = [
            (
                dlq_id,
                dataclasses.replace(letter, fields={**(letter.fields or {}), b"data": payload}),
            )
            for dlq_id, letter in letters
        ]
    strays = sorted({letter.source_stream for _, letter in letters} - set(props.stream_keys))
    if strays:
        raise ConfigError(
            f"dead letters came from stream(s) {', '.join(strays)}, not among the source's "
            f"({props.streams_label}); replay them with --id after fixing stream_keys"
        )
    if not force:
        _refuse_rejected(letters, props, corrected=payload is not None)
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


def _corrected(letter: DeadLetter, payload: bytes) -> DeadLetter:
    """``letter`` with ``payload`` as the ``data`` field of its entry."""
    return dataclasses.replace(letter, fields={**(letter.fields or {}), b"data": payload})


def _refuse_rejected(
    letters: list[tuple[str, DeadLetter]], props: PlatformSourceConfig, *, corrected: bool
) -> None:
    decode = decoder_for(props)
    rejected = [
        (dlq_id, problem)
        for dlq_id, letter in letters
        if letter.fields is not None
        and (problem := entry_problem(letter.fields, props.max_payload_bytes, decode)) is not None
    ]
    if not rejected:
        return
    dlq_id, problem = rejected[0]
    more = f" (and {len(rejected) - 1} more)" if len(rejected) > 1 else ""
    if corrected:
        raise ConfigError(f"the corrected payload for {dlq_id} would be rejected too: {problem}")
    raise ConfigError(
        f"dead letter {dlq_id}{more} would be rejected again: {problem}; nothing replayed. "
        f"Replay it corrected (--id {dlq_id} --payload FILE), purge it, or --force"
    )


def purge(client: redis.Redis, props: PlatformSourceConfig, ids: list[str] | None = None) -> int:
    """Delete the given dead letters (all when ``ids`` is None); returns how many. An id that
    is not there is a ConfigError, before anything is deleted."""
    if ids:
        _require_present(client, props, ids)
        return int(client.xdel(props.dead_letter_key, *ids))
    count = int(client.xlen(props.dead_letter_key))
    client.delete(props.dead_letter_key)
    return count
