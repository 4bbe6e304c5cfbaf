"""Ingest benchmark: how fast change events leave a Redis stream, four ways, in one run.

All sections read the same stream contents (the seeded sensor workload of
:mod:`bench.common`), each from its own fresh stream, pre-published with the pipelined
:class:`~drasi_ray.streams.publisher.Publisher` before its clock starts:

(a) **peer**: a bare hand-written redis-py loop, XREADGROUP COUNT 500, ``orjson.loads`` of each
    entry's ``data``, ONE XACK per batch. The yardstick; every ratio is against it.
(b) **per-message XACK**: the loop of typical docs, XREADGROUP COUNT 10, ``json.loads``, one
    XACK per message (on fewer events: it is slow).
(c) **one drasi_ray consumer actor**: the real :class:`~drasi_ray.actors.consumer.ConsumerActor`
    (StreamConsumer: XREADGROUP -> decode + validate -> one call per batch -> XACK)
    dispatching to a sink actor in the place of the only store shard, which unpacks each batch
    into the change model's structs as a shard does, and only counts (:mod:`bench.sink`). The
    consumer builds the structs and the sink decodes them, so (c) includes the work of the
    model on both ends (until the msgspec representation the consumer sent rows and the store
    built the objects while applying, outside (c)). batch_size 500 with the
    default adaptive reads (up to 2,000 while there is a backlog), and again with reads fixed
    at COUNT 500 like the peer's.
(d) **whole pipeline** through the public API: DrasiRay + PlatformSource (batch 500) + the
    README's filter query, with 1 and 2 consumer actors. ``backlog``: a pre-published backlog
    released to already-running actors; ``live``: the app is running, the clock starts at the
    first publish and stops when ``wait_until_idle`` returns (publishing competes for the CPUs).

(p) **paired**: (a) and (c) run alternately, ``--pairs`` times, and each pair's ratio is
    reported with their median. The machine's speed drifts by tens of percent within minutes
    (the peer alone ran at 53k-104k events/s on one day), so the ratio of two runs taken far
    apart says more about the drift than about the consumer; a pair is taken back to back.

(m) **per-event CPU costs** in this process, no Ray or Redis: orjson alone, ``decode_entry``
    (what the consumer does), and Ray's pickling of a decoded batch (the ``EntryPacket`` the
    consumer sends, and a plain list of the structs for comparison), best of 15 batches of 500.

(a) and (b) are timed from the first XREADGROUP to the read that finds the stream drained.
(c) and d-backlog use a *release*: the backlog (all events but one) is published, the consumer
group is created at ``$`` (after it), the actors start and block in XREADGROUP; the clock starts,
``XGROUP SETID`` moves the group back to ``0`` and one XADD (the last event) wakes the readers;
the clock stops when every entry is acked (d: ``wait_until_idle``; c: the same check polled every
5 ms). So actor start-up is outside the clock and every event is consumed from a backlog.
"""

from __future__ import annotations

import argparse
import functools
import json
import pickle
import statistics
import tempfile
import timeit
import uuid
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import redis
from ray import cloudpickle

from bench import profiling
from bench.common import (
    SENSOR_QUERY,
    bench_env,
    command_line,
    format_table,
    load_average,
    print_lines,
    publish,
    rate,
    sensor_payloads,
    timed,
)
from bench.results import Recorder
from bench.sink import start_consumer
from drasi_ray import DrasiRay
from drasi_ray.model.config import PlatformSourceConfig
from drasi_ray.model.wire import EntryPacket
from drasi_ray.source.decode import decode_entry
from drasi_ray.streams import admin
from drasi_ray.testing.apps import one_source_app
from drasi_ray.testing.waiting import wait_until

GROUP = "bench"
BATCH = 500
TIMEOUT_S = 600.0
TARGET_RATIO = 0.6
"""Issue #7's target for (c) against (a), judged on the median of the pairs' ratios."""


@dataclass
class Section:
    """Repeated measurements of one way of ingesting."""

    key: str
    label: str
    events: int
    seconds: list[float] = field(default_factory=list)
    loads: list[tuple[float, float]] = field(default_factory=list)

    @property
    def rates(self) -> list[float]:
        return [rate(self.events, s) for s in self.seconds]

    @property
    def median_rate(self) -> float:
        return statistics.median(self.rates)


# --------------------------------------------------------------------------------------------
# streams
# --------------------------------------------------------------------------------------------


def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, decode_responses=False)


def fresh_stream(prefix: str) -> str:
    return f"ingest-{prefix}-{uuid.uuid4().hex[:6]}"


def prepare_backlog(url: str, stream: str, payloads: Sequence[bytes]) -> None:
    """Publish every payload, then create the group at ``0``: all of it is to be read."""
    publish(url, stream, payloads)
    with _client(url) as client:
        client.xgroup_create(stream, GROUP, id="0")


def arm_backlog(url: str, stream: str, payloads: Sequence[bytes]) -> bytes:
    """Publish all but the last payload and create the group *after* them (``$``).

    Readers started now see nothing; :func:`release_backlog` hands them the whole backlog.
    Returns the last payload, which release publishes to wake blocked readers.
    """
    publish(url, stream, payloads[:-1])
    with _client(url) as client:
        client.xgroup_create(stream, GROUP, id="$")
    return payloads[-1]


def release_backlog(client: redis.Redis, stream: str, wake: bytes) -> str:
    """Move the group back to ``0`` and XADD ``wake``; returns the stream's last entry id."""
    client.xgroup_setid(stream, GROUP, "0")
    last = client.xadd(stream, {b"data": wake})
    return last.decode() if isinstance(last, bytes) else str(last)


HELD = "18446744073709551615-18446744073709551615"
"""The largest stream id: a group moved there delivers nothing that is added afterwards."""


def create_group(url: str, stream: str) -> None:
    """Create the (empty) stream and its group, for backlogs held with :func:`hold_backlog`."""
    with _client(url) as client:
        client.xgroup_create(stream, GROUP, id="$", mkstream=True)


@dataclass(frozen=True)
class Held:
    """A held backlog: the id its group goes back to, and the payload that wakes readers."""

    before: str
    wake: bytes


def hold_backlog(client: redis.Redis, url: str, stream: str, payloads: Sequence[bytes]) -> Held:
    """Publish all but the last payload to a stream whose group exists and may have running
    readers, without them seeing any of it: the group's last-delivered id is moved past every
    id first. :func:`release_held` then hands the readers the whole backlog at once, as
    :func:`release_backlog` does an armed one (that one only works once per stream)."""
    last: Any = client.xrevrange(stream, count=1)
    before = last[0][0].decode() if last else "0"
    client.xgroup_setid(stream, GROUP, HELD)
    publish(url, stream, payloads[:-1])
    return Held(before, payloads[-1])


def release_held(client: redis.Redis, stream: str, held: Held) -> None:
    client.xgroup_setid(stream, GROUP, held.before)
    client.xadd(stream, {b"data": held.wake})


def drop_stream(url: str, stream: str) -> None:
    with _client(url) as client:
        client.delete(stream)


# --------------------------------------------------------------------------------------------
# (a) and (b): hand-written redis-py loops
# --------------------------------------------------------------------------------------------


def peer_batch_loop(client: redis.Redis, stream: str, count: int = BATCH) -> int:
    """XREADGROUP ``count``, ``orjson.loads`` each entry, ONE XACK per batch; until drained."""
    consumed = 0
    while True:
        reply: Any = client.xreadgroup(GROUP, "peer", {stream: ">"}, count=count)
        if not reply:
            return consumed
        entries = reply[0][1]
        for _entry_id, fields in entries:
            orjson.loads(fields[b"data"])
        client.xack(stream, GROUP, *[entry_id for entry_id, _ in entries])
        consumed += len(entries)


def per_message_loop(client: redis.Redis, stream: str, count: int = 10) -> int:
    """The docs' loop: XREADGROUP ``count``, ``json.loads``, XACK per message; until drained."""
    consumed = 0
    while True:
        reply: Any = client.xreadgroup(GROUP, "docs", {stream: ">"}, count=count)
        if not reply:
            return consumed
        for entry_id, fields in reply[0][1]:
            json.loads(fields[b"data"])
            client.xack(stream, GROUP, entry_id)
            consumed += 1


def time_loop(
    url: str, payloads: Sequence[bytes], loop: Callable[[redis.Redis, str], int], prefix: str
) -> float:
    """Seconds ``loop`` takes to drain a fresh pre-published stream of ``payloads``."""
    stream = fresh_stream(prefix)
    prepare_backlog(url, stream, payloads)
    with _client(url) as client, timed() as timer:
        consumed = loop(client, stream)
    drop_stream(url, stream)
    _check(consumed, len(payloads), prefix)
    return timer.seconds


# --------------------------------------------------------------------------------------------
# (c): one consumer actor and a counting sink
# --------------------------------------------------------------------------------------------


def consumer_config(url: str, stream: str, max_batch: int | None = None) -> PlatformSourceConfig:
    """batch_size 500; reads grow up to ``max_batch`` (None: the source's default, 2,000)."""
    return PlatformSourceConfig(
        redis_url=url,
        stream_keys=(stream,),
        consumer_group=GROUP,
        batch_size=BATCH,
        max_batch_size=max_batch,
        block_ms=1000,
        start_id="0",
    )


def time_consumer(
    url: str,
    payloads: Sequence[bytes],
    profile_dir: Path | None = None,
    max_batch: int | None = None,
) -> tuple[float, dict[str, Any]]:
    """Seconds one consumer actor takes to drain a released backlog; and its stats.

    With ``profile_dir``, py-spy samples the consumer and the sink processes meanwhile
    (``consumer.txt``, ``sink.txt``).
    """
    stream = fresh_stream("c")
    wake = arm_backlog(url, stream, payloads)
    config = consumer_config(url, stream, max_batch)
    running = start_consumer(config)
    profiled = _profiled(running.consumer_pid, running.sink_pid, profile_dir)
    try:
        with _client(url) as client, profiled, timed() as timer:
            last_id = release_backlog(client, stream, wake)
            upto = {stream: last_id}
            wait_until(lambda: admin.drained(client, config, upto), TIMEOUT_S, poll_s=0.005)
        stats = running.stats()
    finally:
        running.stop()
        drop_stream(url, stream)
    _check(stats["sink"]["changes"], len(payloads), "c")
    return timer.seconds, stats


def _profiled(consumer_pid: int, sink_pid: int, profile_dir: Path | None) -> ExitStack:
    """Both processes under py-spy when ``profile_dir`` is given, else a no-op context."""
    stack = ExitStack()
    if profile_dir is not None:
        stack.enter_context(profiling.py_spy(consumer_pid, profile_dir / "consumer.txt"))
        stack.enter_context(profiling.py_spy(sink_pid, profile_dir / "sink.txt"))
    return stack


# --------------------------------------------------------------------------------------------
# (d): the whole pipeline through the public API
# --------------------------------------------------------------------------------------------


def pipeline_app(url: str, stream: str, consumers: int) -> DrasiRay:
    """DrasiRay with one PlatformSource (batch 500, group start ``0``) and the filter query."""
    return one_source_app(
        url,
        stream,
        {"hot": SENSOR_QUERY},
        source_id="sensors",
        prefix="bench-ingest",
        consumer_group=GROUP,
        consumers=consumers,
        batch_size=BATCH,
        block_ms=1000,
        start_id="0",
    )


def time_pipeline_backlog(url: str, payloads: Sequence[bytes], consumers: int) -> float:
    """Seconds the running pipeline takes from the backlog's release to ``wait_until_idle``."""
    stream = fresh_stream(f"d{consumers}")
    wake = arm_backlog(url, stream, payloads)
    app = pipeline_app(url, stream, consumers).start()
    try:
        with _client(url) as client, timed() as timer:
            release_backlog(client, stream, wake)
            app.wait_until_idle(TIMEOUT_S)
        _check_pipeline(app, len(payloads))
    finally:
        app.stop()
        drop_stream(url, stream)
    return timer.seconds


def time_pipeline_live(url: str, payloads: Sequence[bytes], consumers: int) -> float:
    """Seconds from the first publish to ``wait_until_idle``, the app already running."""
    stream = fresh_stream(f"live{consumers}")
    app = pipeline_app(url, stream, consumers).start()
    try:
        with timed() as timer:
            publish(url, stream, payloads)
            app.wait_until_idle(TIMEOUT_S)
        _check_pipeline(app, len(payloads))
    finally:
        app.stop()
        drop_stream(url, stream)
    return timer.seconds


def _check_pipeline(app: DrasiRay, events: int) -> None:
    changes = app.status().totals.changes
    _check(changes, events, "pipeline")
    if not app.results("hot"):
        raise RuntimeError("pipeline: the filter query has no results")


def _check(seen: int, expected: int, what: str) -> None:
    if seen != expected:
        raise RuntimeError(f"{what}: consumed {seen} events, expected {expected}")


# --------------------------------------------------------------------------------------------
# (m): per-event costs of the consumer's CPU work, in this process, without Ray or Redis
# --------------------------------------------------------------------------------------------


def best_us_per_event(work: Callable[[], object], events: int, repeat: int = 15) -> float:
    """Best of ``repeat`` runs of ``work`` (which handles ``events`` events), in µs per event."""
    return min(timeit.repeat(work, number=1, repeat=repeat)) / events * 1e6


def per_event_costs(payloads: Sequence[bytes]) -> list[tuple[str, float]]:
    """µs per event of each CPU step of one consumer batch (``BATCH`` entries).

    The consumer decodes each entry into the change model's structs (``decode_entry``) and
    sends them as an :class:`~drasi_ray.model.wire.EntryPacket` (MessagePack); the
    coordinator's unpickling decodes the structs back. A plain list of :class:`DecodedEntry`
    (Ray's own pickling of the structs) is measured for comparison.
    """
    entries = [(f"1700000000000-{i}", {b"data": p}) for i, p in enumerate(payloads[:BATCH])]
    count = len(entries)
    decoded = [decode_entry(entry_id, fields) for entry_id, fields in entries]
    rows = [
        ("orjson.loads of the entry (what the peer does)",
         best_us_per_event(lambda: [orjson.loads(f[b"data"]) for _, f in entries], count)),
        ("decode_entry: JSON parse + validate + build changes (what the consumer does)",
         best_us_per_event(lambda: [decode_entry(i, f) for i, f in entries], count)),
    ]  # fmt: skip
    batches = (
        ("EntryPacket", EntryPacket(decoded, json_values=True)),
        ("list[DecodedEntry]", decoded),
    )
    for label, value in batches:
        blob = _ray_dumps(value)
        rows += [
            (f"cloudpickle.dumps of {label} (Ray call args)",
             best_us_per_event(functools.partial(_ray_dumps, value), count)),
            (f"pickle.loads of {label} (receiving actor)",
             best_us_per_event(functools.partial(pickle.loads, blob), count)),
        ]  # fmt: skip
    return rows


def _ray_dumps(value: object) -> bytes:
    blob: bytes = cloudpickle.dumps(value, protocol=5)  # type: ignore[no-untyped-call]
    return blob


# --------------------------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    events: int
    slow_events: int
    pipeline_events: int
    repeat: int
    sections: str
    pairs: int
    profile: bool
    profile_dir: Path | None
    record: bool


def parse_args(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest", description=__doc__)
    parser.add_argument("--events", type=int, default=200_000, help="events for (a) and (c)")
    parser.add_argument("--slow-events", type=int, default=20_000, help="events for (b)")
    parser.add_argument(
        "--pipeline-events", type=int, default=50_000, help="events for (d): ~3-6k/s here"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per section (median shown)")
    parser.add_argument("--sections", default="mabcdp", help="which of m, a, b, c, d, p to run")
    parser.add_argument("--pairs", type=int, default=3, help="alternating (a), (c) pairs for (p)")
    parser.add_argument("--profile", action="store_true", help="py-spy profile of (c) too")
    parser.add_argument("--profile-dir", type=Path, help="keep py-spy's collapsed stacks here")
    parser.add_argument("--no-record", action="store_true", help="do not append to results.jsonl")
    args = parser.parse_args(argv)
    return Options(
        args.events,
        args.slow_events,
        args.pipeline_events,
        args.repeat,
        args.sections,
        args.pairs,
        args.profile or args.profile_dir is not None,
        args.profile_dir,
        not args.no_record,
    )


def measure(section: Section, run: Callable[[], float], repeat: int) -> Section:
    """Run ``run`` ``repeat`` times, noting the 1-minute load before and after each."""
    for _ in range(repeat):
        before = load_average()
        section.seconds.append(run())
        section.loads.append((before, load_average()))
        print(
            f"  {section.key}: {section.rates[-1]:,.0f} events/s "
            f"({section.events:,} in {section.seconds[-1]:.2f}s, "
            f"load {before:.1f}->{section.loads[-1][1]:.1f})",
            flush=True,
        )
    return section


def run_sections(url: str, options: Options) -> list[Section]:
    """Every selected section, on payloads from the same seeded generator."""
    largest = max(options.events, options.slow_events, options.pipeline_events)
    payloads = sensor_payloads(largest)
    main_set, slow_set, pipe_set = (
        payloads[: options.events],
        payloads[: options.slow_events],
        payloads[: options.pipeline_events],
    )
    plan: list[tuple[str, str, int, Callable[[], float]]] = [
        ("a", "peer: redis-py, COUNT 500, orjson, 1 XACK/batch", len(main_set),
         lambda: time_loop(url, main_set, peer_batch_loop, "a")),
        ("b", "docs: COUNT 10, json, XACK per message", len(slow_set),
         lambda: time_loop(url, slow_set, per_message_loop, "b")),
        ("c", "drasi_ray: 1 consumer actor -> counting sink", len(main_set),
         lambda: time_consumer(url, main_set)[0]),
        ("c", "the same, reads fixed at COUNT 500 (max_batch_size 500)", len(main_set),
         lambda: time_consumer(url, main_set, max_batch=BATCH)[0]),
        ("d", "pipeline backlog, 1 consumer", len(pipe_set),
         lambda: time_pipeline_backlog(url, pipe_set, 1)),
        ("d", "pipeline backlog, 2 consumers", len(pipe_set),
         lambda: time_pipeline_backlog(url, pipe_set, 2)),
        ("d", "pipeline live (publish+consume), 1 consumer", len(pipe_set),
         lambda: time_pipeline_live(url, pipe_set, 1)),
        ("d", "pipeline live (publish+consume), 2 consumers", len(pipe_set),
         lambda: time_pipeline_live(url, pipe_set, 2)),
    ]  # fmt: skip
    sections = []
    for key, label, events, run in plan:
        if key in options.sections:
            print(f"{key}: {label}", flush=True)
            sections.append(measure(Section(key, label, events), run, options.repeat))
    return sections


def paired_runs(url: str, payloads: Sequence[bytes], pairs: int) -> list[tuple[float, float]]:
    """(p): ``pairs`` times (a) then (c) back to back; their events/s, pair by pair."""
    rates = []
    for number in range(1, pairs + 1):
        peer = len(payloads) / time_loop(url, payloads, peer_batch_loop, "a")
        ours = len(payloads) / time_consumer(url, payloads)[0]
        print(f"  p{number}: (a) {peer:,.0f}, (c) {ours:,.0f} events/s: {ours / peer:.2f}x")
        rates.append((peer, ours))
    return rates


def paired_table(rates: Sequence[tuple[float, float]]) -> list[str]:
    """One row per pair and the median of the pairs' ratios."""
    rows = [
        (f"p{number}", f"{peer:,.0f}", f"{ours:,.0f}", f"{ours / peer:.2f}x")
        for number, (peer, ours) in enumerate(rates, 1)
    ]
    median = statistics.median(ours / peer for peer, ours in rates)
    headers = ("(p) pair", "(a) peer events/s", "(c) one consumer actor events/s", "(c) / (a)")
    met = "MET" if median >= TARGET_RATIO else "NOT MET"
    return [
        *format_table(headers, rows),
        "",
        f"(p) median of the pairs' ratios: {median:.2f}x",
        f"Target one consumer actor >= {TARGET_RATIO}x the bare redis-py loop: {median:.2f}x "
        f"-> {met}.",
    ]


def results_table(sections: Sequence[Section]) -> list[str]:
    """events/s (median of runs), every run, ratio vs (a), load before->after."""
    peer = next((s.median_rate for s in sections if s.key == "a"), 0.0)
    rows = [
        (
            section.key,
            section.label,
            section.events,
            section.median_rate,
            f"{section.median_rate / peer:.2f}x" if peer else "-",
            ", ".join(f"{r:,.0f}" for r in section.rates),
            ", ".join(f"{b:.1f}->{a:.1f}" for b, a in section.loads),
        )
        for section in sections
    ]
    headers = ("", "what", "events", "events/s", "vs (a)", "runs (events/s)", "load 1m")
    return format_table(headers, rows)


def micro_table(rows: Sequence[tuple[str, float]]) -> list[str]:
    """Section (m) as a table: µs per event of each step, best of 15 batches."""
    headers = (f"(m) CPU per event, batches of {BATCH}, in one process", "µs/event")
    return format_table(headers, [(label, f"{us:.2f}") for label, us in rows])


def profile_consumer(
    url: str, payloads: Sequence[bytes], keep: Path | None = None, limit: int = 15
) -> list[str]:
    """One more (c) run under py-spy; tables of the top frames of consumer and sink.

    The collapsed stacks go to ``keep`` if given (for flame graphs), else to a temp dir.
    """
    with tempfile.TemporaryDirectory(prefix="bench-pyspy-") as tmp:
        directory = keep or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        seconds, _ = time_consumer(url, payloads, profile_dir=directory)
        consumer = profiling.summarize(directory / "consumer.txt")
        sink = profiling.summarize(directory / "sink.txt")
    lines = [
        f"py-spy (250 Hz, nonblocking, by function) of one (c) run: {len(payloads):,} events "
        f"in {seconds:.2f}s ({rate(len(payloads), seconds):,.0f} events/s under the sampler).",
        f"Consumer actor: {consumer.samples} samples of Python threads on CPU.",
        "",
        *_breakdown_table(consumer),
        "",
        *_profile_table(consumer, "self", limit),
        "",
        *_profile_table(consumer, "inclusive", limit),
        "",
        f"Sink actor: {sink.samples} samples.",
        "",
        *_profile_table(sink, "self", 8),
    ]
    return lines


CONSUMER_PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "XREADGROUP incl. reply parsing",
        ("RedisStreamBackend.read_new", "RedisStreamBackend.read_pending"),
    ),
    ("decode + validate (StreamConsumer._screen)", ("StreamConsumer._screen",)),
    ("  of which JSON parse + envelope (_read_events)", ("_read_events",)),
    ("Ray call (ActorMethod.remote)", ("ActorMethod.remote",)),
    ("  of which cloudpickle dumps", ("dumps",)),
    ("  of which dataclass __getstate__ (fields())", ("_dataclass_getstate",)),
    ("XACK", ("RedisStreamBackend.ack",)),
    ("metrics task (ConsumerRole._record_metrics)", ("ConsumerRole._record_metrics",)),
    ("Ray worker main thread (C++ core worker loop)", ("Worker.main_loop",)),
    ("event loop in epoll (waiting)", ("EpollSelector.select",)),
)
"""Where the consumer's time goes: inclusive samples under these functions."""


def _breakdown_table(profile: profiling.Profile) -> list[str]:
    total = max(profile.samples, 1)
    rows = []
    for label, functions in CONSUMER_PARTS:
        samples = profile.inclusive_of(*functions)
        rows.append((label, samples, f"{100.0 * samples / total:.1f}%"))
    return format_table(("consumer time (inclusive)", "samples", "share"), rows)


def _profile_table(profile: profiling.Profile, view: str, limit: int) -> list[str]:
    rows = [
        (profiling.shorten(frame), n, f"{pct:.1f}%") for frame, n, pct in profile.top(view, limit)
    ]
    return format_table((f"frame ({view})", "samples", "share"), rows)


NOTES = [
    "Method (bench/ingest.py docstring): every section reads the same seeded workload from its own",
    "pre-published stream. (a)/(b): first XREADGROUP to drained. (c) and d-backlog: actors start",
    "and block on an empty group; the clock runs from releasing the backlog (XGROUP SETID 0 + one",
    "XADD) until every entry is acked. d-live: app running, clock from the first publish to",
    "`wait_until_idle`. events/s = median of the runs; `load 1m` = load average before->after",
    "each run (2 cores: above ~2, other processes competed for the CPUs). (p): (a) and (c) run",
    "alternately, back to back, so each pair's ratio sees the same machine speed.",
]


PEER_LABEL = "bare redis-py loop (a), same run"
WHAT = {
    "peer: redis-py, COUNT 500, orjson, 1 XACK/batch":
        "bare redis-py loop (a): XREADGROUP COUNT 500, 1 XACK per batch",
    "docs: COUNT 10, json, XACK per message": "per-message XACK loop of typical docs (b)",
    "drasi_ray: 1 consumer actor -> counting sink": "one consumer actor -> counting sink (c)",
    "the same, reads fixed at COUNT 500 (max_batch_size 500)":
        "one consumer actor, reads fixed at COUNT 500 (c)",
    "pipeline backlog, 1 consumer": "whole pipeline, backlog, 1 consumer (d)",
    "pipeline backlog, 2 consumers": "whole pipeline, backlog, 2 consumers (d)",
    "pipeline live (publish+consume), 1 consumer":
        "whole pipeline, live publish + consume, 1 consumer (d)",
    "pipeline live (publish+consume), 2 consumers":
        "whole pipeline, live publish + consume, 2 consumers (d)",
}  # fmt: skip
"""The figure names of the sections in the results file (stable across runs)."""


def record_sections(recorder: Recorder, sections: Sequence[Section]) -> None:
    """One figure per section: the median events/s, against the peer (a) of the same run."""
    peer = next((s.median_rate for s in sections if s.key == "a"), None)
    for section in sections:
        runs = len(section.rates)
        detail = f"{section.events:,} events, median of {runs} run{'s' if runs > 1 else ''}"
        is_peer = section.key == "a"
        recorder.add(
            WHAT[section.label],
            section.median_rate,
            "events/s",
            peer=None if is_peer else PEER_LABEL,
            peer_value=None if is_peer else peer,
            detail=detail,
        )


def record_pairs(recorder: Recorder, rates: Sequence[tuple[float, float]], events: int) -> None:
    """(p): the median of the back-to-back pairs, each side, and the median of their ratios."""
    recorder.add(
        "one consumer actor vs bare loop, back-to-back pairs (p)",
        statistics.median(ours for _, ours in rates),
        "events/s",
        peer="bare redis-py loop, median of the pairs",
        peer_value=statistics.median(peer for peer, _ in rates),
        ratio=statistics.median(ours / peer for peer, ours in rates),
        detail=f"{len(rates)} pairs of {events:,} events; ratio = median of the pairs' ratios",
    )


def record_micro(recorder: Recorder, rows: Sequence[tuple[str, float]]) -> None:
    """(m): µs of CPU per event of each step; the consumer's decode against orjson alone."""
    peer_label, peer_us = rows[0]
    for label, us in rows:
        compared = "what the consumer does" in label
        recorder.add(
            f"CPU per event (m): {label}",
            us,
            "µs",
            peer=peer_label if compared else None,
            peer_value=peer_us if compared else None,
            detail=f"best of 15 batches of {BATCH}, one process",
        )


def main(argv: list[str] | None = None) -> int:
    """Run the selected sections, print the tables, append the figures to results.jsonl."""
    options = parse_args(argv)
    recorder = Recorder("ingest", command_line("bench.ingest", argv))
    print_lines(NOTES)
    with bench_env() as server:
        micro_rows: list[tuple[str, float]] = []
        if "m" in options.sections:
            micro_rows = per_event_costs(sensor_payloads(BATCH))
            print_lines(micro_table(micro_rows))
            record_micro(recorder, micro_rows)
        sections = run_sections(server.url, options)
        if sections:
            print_lines(["", *results_table(sections)])
            record_sections(recorder, sections)
        if "p" in options.sections and options.pairs > 0:
            print(f"p: {options.pairs} alternating pairs of (a) and (c)", flush=True)
            payloads = sensor_payloads(options.events)
            rates = paired_runs(server.url, payloads, options.pairs)
            print_lines(["", *paired_table(rates)])
            record_pairs(recorder, rates, options.events)
        if options.profile and profiling.available():
            print("profiling (c) with py-spy ...", flush=True)
            profile_lines = profile_consumer(
                server.url, sensor_payloads(options.events), options.profile_dir
            )
            print_lines(["", *profile_lines])
    if options.record:
        recorder.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
