"""``drasi-ray publish``: append change events from a JSON-lines file (or stdin) to a stream.

Each non-blank line is either one platform change event (``{"op": ..., "payload": ...}``),
wrapped into a CloudEvent here, or a whole CloudEvent (``{"data": [event, ...], ...}``) sent
as is. Entries go out in pipelined batches (one round trip per ``--batch`` entries) into the
field ``data``; a progress bar is drawn on stderr when it is a terminal.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from drasi_ray.model.errors import ConfigError
from drasi_ray.ops import common
from drasi_ray.source.decode import encode_cloud_event
from drasi_ray.streams.publisher import Publisher

HELP = """\
Appends events to STREAM, one entry per line of FILE (default: stdin). A line is either a
platform change event, wrapped into a CloudEvent for you:

  {"op": "i", "payload": {"after": {"id": "s1", "labels": ["Sensor"],
   "properties": {"temperature": 75.5}}, "source": {"db": "sensors", "table": "node",
   "ts_ns": 1699900000000000000}}}

or a complete CloudEvent ({"id": ..., "data": [event, ...], ...}), sent unchanged.

examples:
  drasi-ray publish sensor-changes events.jsonl --redis-url redis://localhost:6379
  cat events.jsonl | drasi-ray publish sensor-changes - --batch 5000
  drasi-ray publish sensor-changes events.jsonl --events-per-entry 10 --maxlen 1000000
"""


def add_parser(commands: Any) -> None:
    parser = common.subcommand(
        commands,
        "publish",
        "XADD JSON-lines change events (or CloudEvents) to a stream, pipelined",
        HELP,
    )
    parser.add_argument("stream", metavar="STREAM", help="the stream key to append to")
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
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="progress bar on stderr (auto: when stderr is a terminal)",
    )


def run(args: argparse.Namespace) -> int:
    if args.batch < 1 or args.events_per_entry < 1:
        raise ConfigError("--batch and --events-per-entry must be >= 1")
    source = sys.stdin.buffer if args.file == "-" else Path(args.file).open("rb")  # noqa: SIM115
    total = None if args.file == "-" else _count_lines(Path(args.file))
    show = args.progress == "always" or (args.progress == "auto" and sys.stderr.isatty())
    progress = Progress(total, sys.stderr if show else None)
    try:
        with Publisher.from_url(args.redis_url) as publisher:
            ids = publish_lines(
                publisher, args.stream, source, args.batch, args.events_per_entry,
                args.maxlen, progress,
            )  # fmt: skip
    finally:
        if source is not sys.stdin.buffer:
            source.close()
    progress.finish()
    span = f" ({ids[0]} .. {ids[-1]})" if ids else ""
    print(f"published {len(ids)} entries to {args.stream}{span}", file=sys.stderr)
    return 0


def publish_lines(
    publisher: Publisher,
    stream: str,
    lines: Iterable[bytes],
    batch: int = 1000,
    events_per_entry: int = 1,
    maxlen: int | None = None,
    progress: Progress | None = None,
) -> list[str]:
    """Publish every line (see the module doc); returns the new entry ids in order.

    A line that is not valid JSON, or neither a change event nor a CloudEvent, raises
    ConfigError naming its line number; the batches before it are already published.
    """
    ids: list[str] = []
    pending: list[bytes] = []
    lines_done = 0
    for payload, lines_done in _payloads(lines, events_per_entry):
        pending.append(payload)
        if len(pending) >= batch:
            ids += publisher.publish(stream, pending, maxlen=maxlen, chunk=batch)
            pending.clear()
            if progress is not None:
                progress.update(lines_done)
    if pending:
        ids += publisher.publish(stream, pending, maxlen=maxlen, chunk=batch)
    if progress is not None:
        progress.update(lines_done)
    return ids


def _payloads(lines: Iterable[bytes], per_entry: int) -> Iterator[tuple[bytes, int]]:
    """(entry payload, input lines consumed so far), packing change events ``per_entry``."""
    events: list[dict[str, Any]] = []
    number = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        document = _parse(line, number)
        if "op" in document:
            events.append(document)
            if len(events) >= per_entry:
                yield encode_cloud_event(events), number
                events = []
            continue
        if events:
            yield encode_cloud_event(events), number - 1
            events = []
        yield orjson.dumps(document), number
    if events:
        yield encode_cloud_event(events), number


def _parse(line: bytes, number: int) -> dict[str, Any]:
    try:
        document = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"line {number}: not JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise ConfigError(f"line {number}: expected a JSON object")
    if "op" not in document and not isinstance(document.get("data"), list):
        raise ConfigError(
            f"line {number}: neither a change event (no 'op') nor a CloudEvent (no 'data' array)"
        )
    return document


def _count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


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
