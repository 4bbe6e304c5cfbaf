"""Query-engine benchmark: changes/s of three query shapes, from 10k to 1M graph elements.

Queries (module constants): (a) **filter** — a WHERE on one node; (b) **two_hop** — a 2-hop
pattern Room -> Floor -> Building with a WHERE on the room; (c) **aggregate** — sensors grouped
by zone (100 zones) with count, avg and max.

**In-process** (no Ray, no Redis): the graph is loaded into an
:class:`~drasi_ray.shards.store.ElementStore` (insert changes), then a
:class:`~drasi_ray.query.engine.ContinuousQuery` is bootstrapped from it (timed:
*bootstrap elements/s*). Then ``--changes`` random updates, each setting one property of one
random element, are applied in 10 chunks; each chunk goes through the store (timed: *store
µs*), then its deltas through the query (timed: *query µs*), so no timer call sits inside the
loop. All sizes of one query are prepared first and their chunks then run in turn, so every
size sees the same stretches of machine load (the machine is shared). Figures are CPU time of
the process; *median µs* is the per-change cost of the median chunk. The 1M/10k ratio of
median per-change µs is the scaling check (target: at most 1.5).

**Pipeline** (skipped with ``--no-pipeline``; DrasiRay + private Redis + local Ray, one
consumer, batch 500): a smaller graph (``--pipeline-elements``, default 10k), because every
element then crosses Redis, the consumer actor and the coordinator. The graph is published as
insert events (100 per entry) to the running app and timed to ``wait_until_idle`` (*load
elements/s*); then ``--pipeline-changes`` updates (one per entry) are published and timed the
same way (*changes/s*, publishing included: it competes for the same 2 cores).

Every workload is seeded: the same arguments give the same graph and the same changes.
"""

from __future__ import annotations

import argparse
import gc
import random
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from bench.common import (
    bench_env,
    command_line,
    format_table,
    load_average,
    print_lines,
    publish,
    rate,
)
from bench.results import Recorder
from drasi_ray import DrasiRay
from drasi_ray.model.changes import Element, ElementChange, ElementDelta, Op, Timing, node, relation
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.shards.store import ElementStore
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.testing.apps import one_source_app

FILTER_QUERY = (
    "MATCH (s:Sensor) WHERE s.temperature > 70 RETURN s.id AS id, s.temperature AS temperature"
)
TWO_HOP_QUERY = (
    "MATCH (r:Room)-[:PART_OF]->(f:Floor)-[:PART_OF]->(b:Building) WHERE r.temp > 70 "
    "RETURN r.id AS room, f.id AS floor, b.id AS building, r.temp AS temp"
)
AGGREGATE_QUERY = (
    "MATCH (s:Sensor) RETURN s.zone AS zone, count(s) AS n, avg(s.temperature) AS avg, "
    "max(s.temperature) AS hottest"
)
ZONES = 100
FLOORS_PER_BUILDING = 10
ROOMS_PER_FLOOR = 20
BASE_TS_NS = 1_700_000_000_000_000_000
PIPELINE_TIMEOUT_S = 900.0

ChangeMaker = Callable[[random.Random, int], Element]
"""``make(rng, time_ms)``: the element of one random update (only the changed properties)."""


# --------------------------------------------------------------------------------------------
# workloads
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Graph:
    """A generated graph and how to change it."""

    elements: list[Element]
    change: ChangeMaker


@dataclass(frozen=True)
class Workload:
    """A query and a generator of graphs of about ``size`` elements for it."""

    name: str
    query: str
    build: Callable[[int, random.Random], Graph]


def sensor_graph(size: int, rng: random.Random) -> Graph:
    """``size`` Sensor nodes {id, temperature in [50, 90), zone of 100}; updates set
    ``temperature`` of a random sensor (about half of the values pass ``> 70``)."""
    elements = [
        node(
            f"s{i}",
            ["Sensor"],
            {"id": f"s{i}", "temperature": round(rng.uniform(50, 90), 2), "zone": f"z{i % ZONES}"},
        )
        for i in range(size)
    ]

    def change(rng: random.Random, time_ms: int) -> Element:
        i = rng.randrange(size)
        temperature = round(rng.uniform(50, 90), 2)
        return node(f"s{i}", ["Sensor"], {"temperature": temperature}, time_ms)

    return Graph(elements, change)


def building_graph(size: int, rng: random.Random) -> Graph:
    """Buildings of 10 floors x 20 rooms with PART_OF relations (421 elements per building,
    as many buildings as fit in ``size``); updates set ``temp`` of a random room."""
    buildings = max(1, size // (1 + FLOORS_PER_BUILDING * (2 + 2 * ROOMS_PER_FLOOR)))
    elements: list[Element] = []
    rooms: list[str] = []
    for b in range(buildings):
        building = f"b{b}"
        elements.append(node(building, ["Building"], {"id": building}))
        for f in range(FLOORS_PER_BUILDING):
            floor = f"f{b}_{f}"
            elements.append(node(floor, ["Floor"], {"id": floor}))
            elements.append(relation(f"p_{floor}", ["PART_OF"], floor, building))
            for r in range(ROOMS_PER_FLOOR):
                room = f"r{b}_{f}_{r}"
                rooms.append(room)
                temp = round(rng.uniform(50, 90), 2)
                elements.append(node(room, ["Room"], {"id": room, "temp": temp}))
                elements.append(relation(f"p_{room}", ["PART_OF"], room, floor))

    def change(rng: random.Random, time_ms: int) -> Element:
        room = rooms[rng.randrange(len(rooms))]
        return node(room, ["Room"], {"temp": round(rng.uniform(50, 90), 2)}, time_ms)

    return Graph(elements, change)


WORKLOADS = {
    "filter": Workload("filter", FILTER_QUERY, sensor_graph),
    "two_hop": Workload("two_hop", TWO_HOP_QUERY, building_graph),
    "aggregate": Workload("aggregate", AGGREGATE_QUERY, sensor_graph),
}


def update_changes(
    make: ChangeMaker, count: int, rng: random.Random, start_ms: int = 1_000
) -> list[ElementChange]:
    """``count`` update changes made by ``make``, at increasing versions and times."""
    changes: list[ElementChange] = []
    for number in range(count):
        time_ms = start_ms + number
        element = make(rng, time_ms)
        changes.append(ElementChange(Op.UPDATE, element, (time_ms, 0, 0), Timing(time_ms)))
    return changes


def insert_changes(elements: Sequence[Element]) -> Iterator[ElementChange]:
    """The insert changes that load ``elements`` (versions below every update's)."""
    for number, element in enumerate(elements):
        yield ElementChange(Op.INSERT, element, (0, number, 0), Timing(0))


# --------------------------------------------------------------------------------------------
# in-process measurement
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Span:
    """Seconds of one timed phase: wall clock and this process's CPU time.

    The machine is shared (2 cores, other engineers' test runs): CPU time is what the engine
    itself spent, wall time also includes waiting for a core. Rates below use CPU time.
    """

    wall: float
    cpu: float


class Stopwatch:
    """Started at construction; :meth:`stop` returns the :class:`Span` since then."""

    __slots__ = ("_cpu", "_wall")

    def __init__(self) -> None:
        self._wall = time.perf_counter()
        self._cpu = time.process_time()

    def stop(self) -> Span:
        return Span(time.perf_counter() - self._wall, time.process_time() - self._cpu)


@dataclass(frozen=True)
class InProcess:
    """One in-process run: a graph loaded, a query bootstrapped, changes applied.

    Seconds are CPU seconds (see :class:`Span`); ``wall_s`` is the wall time of store + query.
    ``store_s`` and ``query_s`` are the CPU seconds of all changes (garbage collection
    included). The changes are applied in :data:`CHUNKS` consecutive chunks, each timed; the
    ``*_median_s`` fields are the median chunk's cost scaled to all changes, which a burst of
    contention or one full garbage collection during one chunk does not move: the scaling
    ratios use them.
    """

    elements: int
    load_s: float
    bootstrap_s: float
    changes: int
    store_s: float
    query_s: float
    diffs: int
    wall_s: float
    store_median_s: float
    query_median_s: float

    @property
    def store_us(self) -> float:
        return 1e6 * self.store_s / self.changes

    @property
    def query_us(self) -> float:
        return 1e6 * self.query_s / self.changes

    @property
    def change_us(self) -> float:
        return self.store_us + self.query_us

    @property
    def changes_per_s(self) -> float:
        return rate(self.changes, self.store_s + self.query_s)

    @property
    def median_us(self) -> float:
        """Per-change µs (store + query) at the median chunks' cost."""
        return 1e6 * (self.store_median_s + self.query_median_s) / self.changes

    @property
    def query_median_us(self) -> float:
        return 1e6 * self.query_median_s / self.changes

    @property
    def wall_changes_per_s(self) -> float:
        return rate(self.changes, self.wall_s)

    @property
    def bootstrap_per_s(self) -> float:
        return rate(self.elements, self.bootstrap_s)

    @property
    def load_per_s(self) -> float:
        return rate(self.elements, self.load_s)


def load_store(elements: Sequence[Element]) -> tuple[ElementStore, Span]:
    """A store holding ``elements``, and the time the inserts took."""
    store = ElementStore()
    changes = list(insert_changes(elements))
    watch = Stopwatch()
    for change in changes:
        store.apply(change)
    return store, watch.stop()


CHUNKS = 10

LEGEND = (
    "Columns: *bootstrap el/s* = ContinuousQuery.bootstrap from the loaded store; *store load "
    "el/s* = the inserts into the ElementStore; *changes/s*, *store µs*, *query µs*, "
    "*µs/change* = CPU time of this process over all timed changes (GC included); *changes/s "
    "(wall)* = wall clock (includes waiting for a core on the shared machine); *median µs* = "
    f"store + query per change at the median of {CHUNKS} consecutive chunks (robust to bursts "
    "of contention and to one full GC); the sizes of one query are loaded together and their "
    "chunks alternate, so they share the machine's load. Ratios: large over small size, of "
    "median µs (store + "
    "query), of query-only median µs, and of the all-changes means."
)


def apply_to_store(store: ElementStore, changes: Sequence[ElementChange]) -> list[ElementDelta]:
    deltas: list[ElementDelta] = []
    for change in changes:
        delta = store.apply(change)
        if delta is not None:
            deltas.append(delta)
    return deltas


def apply_to_query(query: ContinuousQuery, deltas: Sequence[ElementDelta]) -> int:
    diffs = 0
    for delta in deltas:
        diffs += len(query.apply(delta))
    return diffs


def chunks(items: Sequence[Any], count: int) -> list[Sequence[Any]]:
    size = -(-len(items) // count)
    return [items[start : start + size] for start in range(0, len(items), size)]


def median_seconds(spans: Sequence[tuple[Span, int]]) -> float:
    """CPU seconds for all the changes of ``(span, changes)`` chunks, at the median chunk's
    per-change cost."""
    per_change = sorted(span.cpu / count for span, count in spans if count)
    return per_change[len(per_change) // 2] * sum(count for _, count in spans)


class Prepared:
    """A loaded store and a bootstrapped query, with changes to apply in timed chunks.

    Several prepared runs (the sizes of one workload) are advanced chunk by chunk in turn
    (:func:`interleave`), so that all sizes share the same stretches of machine load: on a
    shared machine that is what makes their per-change costs comparable.
    """

    def __init__(
        self, query_text: str, elements: Sequence[Element], changes: Sequence[ElementChange]
    ) -> None:
        gc.collect()  # the garbage of graph generation must not land inside a clock
        self.elements = len(elements)
        self.store, self.load = load_store(elements)
        self.query = ContinuousQuery("bench", query_text)
        watch = Stopwatch()
        self.query.bootstrap(self.store.elements())
        self.bootstrap = watch.stop()
        self.pending = chunks(changes, CHUNKS)
        self.changes = len(changes)
        self.store_spans: list[tuple[Span, int]] = []
        self.query_spans: list[tuple[Span, int]] = []
        self.diffs = 0

    def step(self) -> None:
        """Apply the next chunk: through the store, then its deltas through the query."""
        chunk = self.pending[len(self.store_spans)]
        watch = Stopwatch()
        deltas = apply_to_store(self.store, chunk)
        self.store_spans.append((watch.stop(), len(chunk)))
        watch = Stopwatch()
        self.diffs += apply_to_query(self.query, deltas)
        self.query_spans.append((watch.stop(), len(chunk)))

    def result(self) -> InProcess:
        spans = [span for span, _ in [*self.store_spans, *self.query_spans]]
        return InProcess(
            elements=self.elements,
            load_s=self.load.cpu,
            bootstrap_s=self.bootstrap.cpu,
            changes=self.changes,
            store_s=sum(span.cpu for span, _ in self.store_spans),
            query_s=sum(span.cpu for span, _ in self.query_spans),
            diffs=self.diffs,
            wall_s=sum(span.wall for span in spans),
            store_median_s=median_seconds(self.store_spans),
            query_median_s=median_seconds(self.query_spans),
        )


def interleave(runs: Sequence[Prepared]) -> list[InProcess]:
    """Advance every run one chunk at a time, in turn, until all changes are applied."""
    for _ in range(CHUNKS):
        for run in runs:
            run.step()
    return [run.result() for run in runs]


def prepare_workload(workload: Workload, size: int, changes: int, seed: int) -> Prepared:
    rng = random.Random(seed)
    graph = workload.build(size, rng)
    updates = update_changes(graph.change, changes, rng)
    return Prepared(workload.query, graph.elements, updates)


# --------------------------------------------------------------------------------------------
# pipeline measurement
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pipelined:
    elements: int
    load_s: float
    changes: int
    change_s: float
    rows: int


def entry_payloads(changes: Sequence[ElementChange], per_entry: int) -> list[bytes]:
    """Platform-format CloudEvents carrying ``per_entry`` changes each."""
    payloads: list[bytes] = []
    for first in range(0, len(changes), per_entry):
        events = [
            change_event(c.op, c.element, BASE_TS_NS + c.element.effective_from * 1_000_000)
            for c in changes[first : first + per_entry]
        ]
        payloads.append(encode_cloud_event(events, source="bench"))
    return payloads


def pipeline_app(url: str, stream: str, query_text: str) -> DrasiRay:
    return one_source_app(
        url,
        stream,
        {"q": query_text},
        source_id="graph",
        prefix="bench-query",
        batch_size=500,
        block_ms=200,
    )


def run_pipeline(
    url: str, query_text: str, elements: Sequence[Element], changes: Sequence[ElementChange]
) -> Pipelined:
    """Publish the graph to a running app, then the changes; each timed to idle."""
    inserts = entry_payloads(list(insert_changes(elements)), per_entry=100)
    updates = entry_payloads(changes, per_entry=1)
    stream = f"bench-query-{uuid.uuid4().hex[:6]}"
    app = pipeline_app(url, stream, query_text).start()
    try:
        start = time.perf_counter()
        publish(url, stream, inserts)
        app.wait_until_idle(PIPELINE_TIMEOUT_S)
        load_s = time.perf_counter() - start
        start = time.perf_counter()
        publish(url, stream, updates)
        app.wait_until_idle(PIPELINE_TIMEOUT_S)
        change_s = time.perf_counter() - start
        rows = len(app.results("q"))
    finally:
        app.stop()
    return Pipelined(len(elements), load_s, len(changes), change_s, rows)


def measure_pipeline(url: str, workload: Workload, size: int, changes: int, seed: int) -> Pipelined:
    rng = random.Random(seed)
    graph = workload.build(size, rng)
    updates = update_changes(graph.change, changes, rng)
    return run_pipeline(url, workload.query, graph.elements, updates)


# --------------------------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    workloads: list[str]
    sizes: list[int]
    changes: int
    seed: int
    pipeline: bool
    pipeline_elements: int
    pipeline_changes: int
    record: bool


def parse_args(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(prog="python -m bench.query_engine", description=__doc__)
    parser.add_argument("--workloads", default="filter,two_hop,aggregate")
    parser.add_argument("--sizes", default="10000,100000,1000000", help="graph elements")
    parser.add_argument("--changes", type=int, default=50_000, help="timed updates per run")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--no-pipeline", action="store_true", help="skip the runs through DrasiRay + Redis"
    )
    parser.add_argument("--pipeline", action="store_true", help="(the default) run them")
    parser.add_argument("--pipeline-elements", type=int, default=10_000)
    parser.add_argument("--pipeline-changes", type=int, default=20_000)
    parser.add_argument("--no-record", action="store_true", help="do not append to results.jsonl")
    args = parser.parse_args(argv)
    return Options(
        workloads=[w for w in args.workloads.split(",") if w],
        sizes=[int(s) for s in args.sizes.split(",") if s],
        changes=args.changes,
        seed=args.seed,
        pipeline=not args.no_pipeline,
        pipeline_elements=args.pipeline_elements,
        pipeline_changes=args.pipeline_changes,
        record=not args.no_record,
    )


def in_process_table(results: dict[tuple[str, int], InProcess]) -> list[str]:
    rows: list[list[Any]] = []
    for (name, _size), run in results.items():
        rows.append(
            [
                name,
                run.elements,
                run.bootstrap_per_s,
                run.load_per_s,
                run.changes,
                run.changes_per_s,
                run.wall_changes_per_s,
                run.store_us,
                run.query_us,
                run.change_us,
                run.median_us,
                run.diffs,
            ]
        )
    headers = (
        "query", "elements", "bootstrap el/s", "store load el/s", "changes", "changes/s",
        "changes/s (wall)", "store µs", "query µs", "µs/change", "median µs", "diffs",
    )  # fmt: skip
    return format_table(headers, rows)


def ratio_table(results: dict[tuple[str, int], InProcess], subject: str = "query") -> list[str]:
    """Per-change µs of the largest size over the smallest, per query (or other ``subject``
    the first part of the results' keys names: ``bench.query_perf``'s scenarios)."""
    rows: list[list[Any]] = []
    for name in dict.fromkeys(n for n, _ in results):
        sizes = sorted(s for n, s in results if n == name)
        if len(sizes) < 2:
            continue
        small, large = results[(name, sizes[0])], results[(name, sizes[-1])]
        rows.append(
            [
                name,
                f"{large.elements:,}/{small.elements:,}",
                f"{large.median_us / small.median_us:.2f}",
                f"{large.query_median_us / small.query_median_us:.2f}",
                f"{large.change_us / small.change_us:.2f}",
            ]
        )
    headers = (subject, "sizes", "µs/change ratio", "query-only ratio", "ratio of means")
    return format_table(headers, rows)


def pipeline_table(results: dict[str, Pipelined]) -> list[str]:
    rows = [
        [name, run.elements, rate(run.elements, run.load_s), run.changes,
         rate(run.changes, run.change_s), run.rows]
        for name, run in results.items()
    ]  # fmt: skip
    headers = ("query", "elements", "load el/s", "changes", "changes/s", "result rows")
    return format_table(headers, rows)


def record_in_process(
    recorder: Recorder,
    name: str,
    run: InProcess,
    peer: tuple[str, float, float] | None = None,
) -> None:
    """changes/s (CPU, at the median chunk) and bootstrap elements/s of one in-process run;
    ``peer``: a label, its changes/s and its bootstrap elements/s."""
    size = f"{run.elements:,} elements"
    recorder.add(
        f"in-process changes/s, {name}, {size}",
        1e6 / run.median_us,
        "changes/s",
        peer=peer[0] if peer else None,
        peer_value=peer[1] if peer else None,
        detail=f"CPU time at the median chunk, {run.changes:,} changes, {run.diffs:,} diffs",
    )
    recorder.add(
        f"in-process bootstrap, {name}, {size}",
        run.bootstrap_per_s,
        "elements/s",
        peer=peer[0] if peer else None,
        peer_value=peer[2] if peer else None,
    )


def record_pipeline(recorder: Recorder, name: str, run: Pipelined) -> None:
    """changes/s through DrasiRay + Redis, publishing included."""
    recorder.add(
        f"pipeline changes/s, {name}, {run.elements:,} elements",
        rate(run.changes, run.change_s),
        "changes/s",
        detail=f"wall time, publishing included, {run.changes:,} changes, 1 consumer",
    )


def run_in_process_all(options: Options) -> dict[tuple[str, int], InProcess]:
    """Per workload: prepare every size, then apply their changes interleaved."""
    results: dict[tuple[str, int], InProcess] = {}
    for name in options.workloads:
        runs = [
            prepare_workload(WORKLOADS[name], size, options.changes, options.seed)
            for size in options.sizes
        ]
        for size, run in zip(options.sizes, interleave(runs), strict=True):
            results[(name, size)] = run
            print(
                f"{name:10} {run.elements:>9,} el: bootstrap {run.bootstrap_per_s:,.0f} el/s, "
                f"{1e6 / run.median_us:,.0f} changes/s at the median, load "
                f"{load_average():.2f}",
                flush=True,
            )
        del runs
        gc.collect()
    return results


def run_pipeline_all(options: Options) -> dict[str, Pipelined]:
    results: dict[str, Pipelined] = {}
    with bench_env() as server:
        for name in options.workloads:
            run = measure_pipeline(
                server.url,
                WORKLOADS[name],
                options.pipeline_elements,
                options.pipeline_changes,
                options.seed,
            )
            results[name] = run
            print(
                f"pipeline {name:10} {run.elements:,} el: load "
                f"{rate(run.elements, run.load_s):,.0f} el/s, "
                f"{rate(run.changes, run.change_s):,.0f} changes/s",
                flush=True,
            )
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """Run the in-process (and optionally pipeline) measurements; record their figures."""
    options = parse_args(argv)
    recorder = Recorder("query_engine", command_line("bench.query_engine", argv))
    load_before = load_average()
    in_process = run_in_process_all(options)
    lines = [
        "In-process (ElementStore + ContinuousQuery, no Ray; rates and µs in CPU time of the "
        "process, plus changes/s in wall time), "
        f"{options.changes:,} random one-element updates per run.",
        "",
        LEGEND,
        "",
        *in_process_table(in_process),
        "",
        *ratio_table(in_process),
    ]
    if options.pipeline:
        pipelined = run_pipeline_all(options)
        lines += [
            "",
            "Pipeline (DrasiRay, 1 consumer, batch 500, private Redis, local Ray); "
            f"graph of {options.pipeline_elements:,} elements (smaller than in-process: every "
            "element crosses Redis and two actors), updates one per entry, publish included:",
            "",
            *pipeline_table(pipelined),
        ]
        for name, piped in pipelined.items():
            record_pipeline(recorder, name, piped)
    lines += ["", f"Load average (1 min): {load_before:.2f} before, {load_average():.2f} after."]
    print_lines(["", *lines])
    for (name, _size), run in in_process.items():
        record_in_process(recorder, name, run)
    if options.record:
        recorder.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
