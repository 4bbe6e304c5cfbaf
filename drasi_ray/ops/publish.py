"""``drasi-ray publish``: append change events from a JSON-lines file (or stdin) to a stream,
or partitioned over several streams (a partitioned source's ``stream_keys``).

Each non-blank line is either one platform change event (``{"op": ..., "payload": ...}``),
wrapped into a CloudEvent here, or a whole CloudEvent (``{"data": [event, ...], ...}``) sent
as is. Entries go out in pipelined batches (one round trip per ``--batch`` entries) into the
field ``data``; a progress bar is drawn on stderr when it is a terminal.

Over several streams each change event goes to :func:`~drasi_ray.model.partitions.stream_for`
its element id, so every change of an element is on one stream, in the file's order; events are
packed into one entry only with events of the same stream. A whole CloudEvent goes to the stream
of its first event's element (its producer keeps its elements together).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import orjson

from drasi_ray.model.config import PlatformSourceConfig
from drasi_ray.model.errors import ConfigError
from drasi_ray.model.partitions import event_element_id, stream_for
from drasi_ray.ops import common
from drasi_ray.source.decode import encode_cloud_event, entry_problem
from drasi_ray.streams import connections
from drasi_ray.streams.publisher import Publisher

DEFAULT_MAX_PAYLOAD: int = PlatformSourceConfig.model_fields["max_payload_bytes"].default

HELP = """\
Appends events to STREAM, one entry per line of FILE (default: stdin). A line is either a
platform change event, wrapped into a CloudEvent for you:

  {"op": "i", "payload": {"after": {"id": "s1", "labels": ["Sensor"],
   "properties": {"temperature": 75.5}}, "source": {"db": "sensors", "table": "node",
   "ts_ns": 1699900000000000000}}}

or a complete CloudEvent ({"id": ..., "data": [event, ...], ...}), sent unchanged.

STREAM may name several streams, comma-separated (a source's stream_keys, in its order): each
element's changes then all go to one of them (crc32 of the element id modulo their number).

Every line is checked as a consumer would check it (a valid op, element, labels, ts_ns, ...;
at most --max-payload-bytes) before anything is sent: a line it would dead-letter stops the
command, naming the line and why, with nothing published (from stdin: the entries before it
are). --no-check sends lines as they are (to exercise dead-lettering).

examples:
  drasi-ray publish sensor-changes events.jsonl --redis-url redis://localhost:6379
  cat events.jsonl | drasi-ray publish sensor-changes - --batch 5000
  drasi-ray publish sensor-changes events.jsonl --events-per-entry 10 --maxlen 1000000
  drasi-ray publish sensors-0,sensors-1,sensors-2 events.jsonl
"""


def add_parser(commands: Any) -> None:
    parser = common.subcommand(
        commands,
        "publish",
        "XADD JSON-lines change events (or CloudEvents) to a stream, pipelined",
        HELP,
    )
    parser.add_argument(
        "stream", metavar="STREAM", help="the stream key to append to; several: comma-separated"
    )
    parser.add_argument("file", metavar="FILE", nargs="?", default="-", help="'-' for stdin")
    parser.add_argument("--redis-url", default="redis://localhost:6379", metavar="URL")
    parser.add_argument("--batch", type=int, default=1000, help="entries per pipeline (1000)")
    parser.add_argument(
        "--events-per-entry",
        type=int,
        default=1,
        metavar="N",
        help="pack up to N consecutive change events into one CloudEvent (1)",
    )
    parser.add_argument("--maxlen", type=int, help="trim the stream with MAXLEN ~ N")
    parser.add_argument(
        "--max-payload-bytes",
        type=int,
        default=DEFAULT_MAX_PAYLOAD,
        metavar="N",
        help=f"refuse an entry larger than this, as a consumer would ({DEFAULT_MAX_PAYLOAD})",
    )
    parser.add_argument(
        "--no-check",
        dest="check",
        action="store_false",
        help="do not check the events as a consumer would",
    )
    parser.add_argument(
        "--connect-timeout",
        type=float,
        default=connections.DEFAULT_DEADLINE_S,
        metavar="S",
        help="seconds to wait for Redis to answer (30)",
    )
    parser.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="progress bar on stderr (auto: when stderr is a terminal)",
    )


def run(args: argparse.Namespace) -> int:
    if args.batch < 1 or args.events_per_entry < 1:
        raise ConfigError("--batch and --events-per-entry must be >= 1")
    streams = args.stream.split(",")
    if not all(streams):
        raise ConfigError(f"STREAM {args.stream!r}: a stream key must not be empty")
    check = args.max_payload_bytes if args.check else None
    total = None
    if args.file != "-":
        with Path(args.file).open("rb") as lines:
            total = check_lines(lines, check)  # every line, before anything is sent
    connections.check(args.redis_url, "publish --redis-url", args.connect_timeout)
    source = sys.stdin.buffer if args.file == "-" else Path(args.file).open("rb")  # noqa: SIM115
    show = args.progress == "always" or (args.progress == "auto" and sys.stderr.isatty())
    progress = Progress(total, sys.stderr if show else None)
    try:
        with Publisher.from_url(args.redis_url, socket_connect_timeout=5.0) as publisher:
            ids = publish_lines(
                publisher, streams, source, args.batch, args.events_per_entry,
                args.maxlen, progress, check,
            )  # fmt: skip
    finally:
        if source is not sys.stdin.buffer:
            source.close()
    progress.finish()
    span = f" ({ids[0]} .. {ids[-1]})" if ids else ""
    print(f"published {len(ids)} entries to {', '.join(streams)}{span}", file=sys.stderr)
    return 0


def publish_lines(
    publisher: Publisher,
    stream: str | Sequence[str],
    lines: Iterable[bytes],
    batch: int = 1000,
    events_per_entry: int = 1,
    maxlen: int | None = None,
    progress: Progress | None = None,
    check: int | None = None,
) -> list[str]:
    """Publish every line (see the module doc) to ``stream``, or partitioned over several
    streams; returns the new entry ids in the order they were written (per stream, in order).

    A line that is not valid JSON, or neither a change event nor a CloudEvent, or (with
    ``check``, a max payload size) one a consumer would dead-letter, raises ConfigError
    naming its line number; the batches before it are already published.
    """
    streams = [stream] if isinstance(stream, str) else list(stream)
    if not streams:
        raise ConfigError("publish needs at least one stream")
    ids: list[str] = []
    pending: dict[str, list[bytes]] = {name: [] for name in streams}
    waiting = 0
    lines_done = 0
    for target, payload, lines_done in _payloads(lines, events_per_entry, streams, check):
        pending[target].append(payload)
        waiting += 1
        if waiting >= batch:
            ids += _flush(publisher, pending, maxlen, batch)
            waiting = 0
            if progress is not None:
                progress.update(lines_done)
    ids += _flush(publisher, pending, maxlen, batch)
    if progress is not None:
        progress.update(lines_done)
    return ids


def _flush(
    publisher: Publisher, pending: dict[str, list[bytes]], maxlen: int | None, chunk: int
) -> list[str]:
    """Publish every stream's waiting payloads; empty the lists."""
    ids: list[str] = []
    for stream, payloads in pending.items():
        if payloads:
            ids += publisher.publish(stream, payloads, maxlen=maxlen, chunk=chunk)
            payloads.clear()
    return ids


def check_lines(lines: Iterable[bytes], check: int | None) -> int:
    """Parse (and with ``check``, a max payload size, check as a consumer would) every line;
    the number of non-blank lines. ConfigError naming the first bad line."""
    count = 0
    for number, line in enumerate(lines, start=1):
        if line.strip():
            document = parse_event_line(line, f"line {number}")
            if check is not None:
                _check(document, number, check)
            count += 1
    return count


def _check(document: dict[str, Any], number: int, max_bytes: int) -> None:
    """ConfigError if a consumer would dead-letter the entry of this line on its own."""
    problem = entry_problem({b"data": event_payload(document)}, max_bytes)
    if problem is not None:
        raise ConfigError(f"line {number}: a consumer would dead-letter it: {problem}")


def _payloads(
    lines: Iterable[bytes], per_entry: int, streams: Sequence[str], check: int | None = None
) -> Iterator[tuple[str, bytes, int]]:
    """(stream, entry payload, input lines consumed so far), packing the change events of one
    stream ``per_entry`` (each element's events stay in the file's order on its stream)."""
    events: dict[str, list[dict[str, Any]]] = {name: [] for name in streams}
    number = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        document = parse_event_line(line, f"line {number}")
        if check is not None:
            _check(document, number, check)
        if "op" in document:
            target = _stream_of(document, streams)
            held = events[target]
            held.append(document)
            if len(held) >= per_entry:
                yield target, encode_cloud_event(held), number
                events[target] = []
            continue
        # A whole CloudEvent: what came before it on its stream goes out first, in order.
        first = document["data"][0] if document["data"] else {}
        target = _stream_of(first if isinstance(first, dict) else {}, streams)
        if events[target]:
            yield target, encode_cloud_event(events[target]), number - 1
            events[target] = []
        yield target, orjson.dumps(document), number
    for target, held in events.items():
        if held:
            yield target, encode_cloud_event(held), number


def _stream_of(event: dict[str, Any], streams: Sequence[str]) -> str:
    """The stream of ``event``'s element; an event naming no element goes to the first (the
    consumers dead-letter it there)."""
    if len(streams) == 1:
        return streams[0]
    element_id = event_element_id(event)
    return streams[0] if element_id is None else stream_for(element_id, streams)


def parse_event_line(line: bytes, where: str) -> dict[str, Any]:
    """A change event or a whole CloudEvent from its JSON text; ConfigError naming ``where``
    (``line 3``, a file) otherwise."""
    try:
        document = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise ConfigError(f"{where}: expected a JSON object")
    if "op" not in document and not isinstance(document.get("data"), list):
        raise ConfigError(
            f"{where}: neither a change event (no 'op') nor a CloudEvent (no 'data' array)"
        )
    return document


def event_payload(document: dict[str, Any]) -> bytes:
    """The ``data`` field of the entry for one parsed line: a change event wrapped into a
    CloudEvent, a CloudEvent as it is."""
    return encode_cloud_event([document]) if "op" in document else orjson.dumps(document)


class Progress:
    """A one-line progress bar: ``[#####.....] 500/1000 lines  12000/s``."""

    WIDTH = 30

    def __init__(self, total: int | None, out: IO[str] | None) -> None:
        self.total = total
        self._out = out
        self._started = time.monotonic()
        self.done = 0

    def update(self, done: int) -> None:
        self.done = done
        if self._out is None:
            return
        rate = done / max(time.monotonic() - self._started, 1e-6)
        if self.total:
            filled = int(self.WIDTH * min(done, self.total) / self.total)
            bar = "#" * filled + "." * (self.WIDTH - filled)
            text = f"\r[{bar}] {done}/{self.total} lines  {rate:,.0f}/s"
        else:
            text = f"\r{done} lines  {rate:,.0f}/s"
        self._out.write(text)
        self._out.flush()

    def finish(self) -> None:
        if self._out is not None:
            self.update(self.total or self.done)
            self._out.write("\n")
