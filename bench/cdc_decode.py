"""What decoding one entry of each source format costs: CPU per entry, in one process.

The consumer decodes every entry at the boundary (:mod:`drasi_ray.source.formats`): the
platform decoder for platform entries, a CDC decoder for a source of format ``debezium`` or
``deltaforge`` (docs/sources.md). This times each on the same ``--entries`` row changes (a
6-column row of a ``sensors`` table: updates at rising LSNs, written by
:mod:`drasi_ray.testing.cdc` as each tool writes them): the best of ``--repeat`` rounds, each
timing the whole batch of every shape in turn, in µs per entry, beside ``orjson.loads`` of the
same JSON (the least a consumer does) and the platform decoder of the same change as a platform
entry (the peer). No Redis, no Ray: the decoder alone.

Shapes: Debezium Server's ``compact`` entries with the JSON converter's inline schemas (its
default: ~2 KB per entry, most of it the schema, which the decoder skips unparsed) and without
(``schemas.enable=false``), its ``extended`` entries, DeltaForge's ``native`` and ``debezium``
envelopes.
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import orjson

from bench.common import command_line, format_table, print_lines
from bench.results import Recorder
from drasi_ray.model.config import CdcConfig
from drasi_ray.source.cdc import Decoder
from drasi_ray.source.debezium import DebeziumDecoder
from drasi_ray.source.decode import decode_entry, encode_cloud_event
from drasi_ray.source.deltaforge import DeltaForgeDecoder
from drasi_ray.testing.cdc import RowChange, debezium_fields, deltaforge_fields, platform_event

Entries = list[tuple[str, Mapping[bytes, bytes]]]
PEER = "decode_entry of the same change as a platform entry"


@dataclass(frozen=True)
class Shape:
    """One way of writing the changes, and the decoder that reads it."""

    label: str
    entries: Entries
    payload: Callable[[Mapping[bytes, bytes]], bytes]
    decoder: Decoder


def changes(count: int) -> list[RowChange]:
    """``count`` updates of 1,000 sensors, in turn, at rising LSNs."""
    return [
        RowChange(
            "u",
            "sensors",
            None,
            {
                "id": i % 1000,
                "name": f"sensor-{i % 1000}",
                "zone": f"zone-{i % 17}",
                "temperature": 20.0 + (i % 300) / 10,
                "active": i % 2 == 0,
                "updated_at": 1_700_000_000_000 + i,
            },
            1_700_000_000_000 + i,
            lsn=0x16_0000_0000 + 64 * i,
        )
        for i in range(count)
    ]


def shapes(rows: Sequence[RowChange]) -> list[Shape]:
    def ids(fields: list[dict[bytes, bytes]]) -> Entries:
        return [(f"1700000000000-{n}", entry) for n, entry in enumerate(fields)]

    debezium = DebeziumDecoder(CdcConfig())
    deltaforge = DeltaForgeDecoder(CdcConfig(keys={"*": ("id",)}))
    platform = [{b"data": encode_cloud_event([platform_event(row)])} for row in rows]

    def one_value(fields: Mapping[bytes, bytes]) -> bytes:
        return next(iter(fields.values()))

    return [
        Shape("platform entry (decode_entry)", ids(platform), one_value, decode_entry),
        Shape("Debezium compact, inline schemas (Debezium Server's default)",
              ids([debezium_fields(row) for row in rows]), one_value, debezium),
        Shape("Debezium compact, schemas.enable=false",
              ids([debezium_fields(row, schemas=False) for row in rows]), one_value, debezium),
        Shape("Debezium extended (key, value, headers), inline schemas",
              ids([debezium_fields(row, extended=True) for row in rows]),
              lambda fields: fields[b"value"], debezium),
        Shape("DeltaForge native envelope",
              ids([deltaforge_fields(row) for row in rows]),
              lambda fields: fields[b"df-event"], deltaforge),
        Shape("DeltaForge debezium envelope",
              ids([deltaforge_fields(row, envelope="debezium") for row in rows]),
              lambda fields: fields[b"df-event"], deltaforge),
    ]  # fmt: skip


def measure(shapes: Sequence[Shape], repeat: int) -> list[tuple[str, float, float, int]]:
    """Per shape: (label, decoder µs, orjson.loads µs, bytes) per entry, the best of
    ``repeat`` rounds; each round times every shape once, in turn, so a slow spell of the
    shared machine falls on all of them rather than on one."""
    best: dict[str, list[float]] = {shape.label: [float("inf")] * 2 for shape in shapes}
    for shape in shapes:
        decoded = [shape.decoder(entry_id, fields) for entry_id, fields in shape.entries]
        assert all(len(entry.changes) == 1 for entry in decoded), shape.label
    for _round in range(repeat):
        for shape in shapes:
            times = best[shape.label]
            times[0] = min(times[0], _seconds(_decoding(shape)))
            times[1] = min(times[1], _seconds(_parsing(shape)))
    rows = []
    for shape in shapes:
        count = len(shape.entries)
        size = sum(sum(map(len, f)) + sum(map(len, f.values())) for _, f in shape.entries)
        decode_s, loads_s = best[shape.label]
        rows.append((shape.label, decode_s / count * 1e6, loads_s / count * 1e6, size // count))
    return rows


def _decoding(shape: Shape) -> Callable[[], object]:
    entries, decoder = shape.entries, shape.decoder
    return lambda: [decoder(entry_id, fields) for entry_id, fields in entries]


def _parsing(shape: Shape) -> Callable[[], object]:
    entries, payload = shape.entries, shape.payload
    return lambda: [orjson.loads(payload(fields)) for _, fields in entries]


def _seconds(work: Callable[[], object]) -> float:
    return timeit.timeit(work, number=1)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.cdc_decode", description=__doc__)
    parser.add_argument("--entries", type=int, default=2000, help="entries per shape")
    parser.add_argument("--repeat", type=int, default=15, help="runs per shape (best taken)")
    parser.add_argument("--no-record", dest="record", action="store_false")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    recorder = Recorder("cdc_decode", command_line("bench.cdc_decode", argv))
    measured = measure(shapes(changes(options.entries)), options.repeat)
    peer = measured[0][1]
    print_lines([
        f"Method (bench/cdc_decode.py docstring): {options.entries:,} entries per shape, best "
        f"of {options.repeat}, one process.",
        "",
        *format_table(
            ("shape", "decode µs/entry", "vs platform", "orjson.loads µs", "bytes/entry"),
            [(label, f"{us:.2f}", f"{us / peer:.2f}x", f"{loads:.2f}", size)
             for label, us, loads, size in measured],
        ),
    ])  # fmt: skip
    if options.record:
        detail = f"{options.entries:,} entries of a 6-column row, best of {options.repeat}"
        for label, us, loads, size in measured[1:]:
            recorder.add(
                f"decode per entry: {label}",
                us,
                "µs",
                peer=PEER,
                peer_value=peer,
                detail=f"{detail}; {size} bytes/entry; orjson.loads alone {loads:.2f} µs",
            )
        recorder.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
