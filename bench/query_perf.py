"""Drasi's query-perf scenarios (drasi-core ``query-perf/``), rebuilt on drasi_ray.

The data model is Drasi's *building comfort* model: ``--buildings`` buildings (default 10) x
10 floors x 20 rooms, every Room and Floor ``PART_OF`` its parent. At the default size that is
2,000 rooms + 100 floors + 10 buildings + 2,100 relations = 4,210 elements. Rooms start at
temperature 72.0, humidity 42.0, co2 500.0; names follow Drasi's (``Building 3``, ``Floor
f_3_1``, ``Room r_3_1_7_``). Each change picks a random room (uniform over buildings, floors,
rooms), one of temperature / humidity / co2 at random, moves it by a random delta in
[-2, 2], and sends the whole room node (as Drasi's generator does), 1-3 ms after the last.

The four scenarios and their queries, written out from drasi-core's query-perf README:

- ``single_node_property_projection``: ``MATCH (r:Room) RETURN r.name as RoomName,
  r.temperature AS Temperature, r.humidity AS Humidity, r.co2 AS CO2``
- ``single_node_calculation_projection``: the room's comfort level,
  ``floor(50 + (r.temperature - 72) + (r.humidity - 42) + CASE WHEN r.co2 > 500 THEN
  (r.co2 - 500) / 25 ELSE 0 END)``
- ``single_path_averaging_projection``: ``MATCH (r:Room)-[:PART_OF]->(f:Floor)`` then
  ``WITH f.name AS FloorName, <comfort level> AS RoomComfortLevel RETURN FloorName,
  avg(RoomComfortLevel) AS ComfortLevel``
- ``single_path_no_change_averaging_projection``: the same query. In drasi-core this scenario
  also uses the same change generator and delta ranges as the previous one (only its name
  differs), so here too it is the same workload, run again with another seed.

Measured as :mod:`bench.query_engine` does: in-process (ElementStore + ContinuousQuery, CPU
time; *bootstrap elements/s* is the query's bootstrap from the loaded store) at the base size
and scaled ``--scale`` times (default 100: 421,000 elements), and through the pipeline
(DrasiRay + Redis) at the base size unless ``--no-pipeline``.

Drasi's published sample figures (README, in-memory or RocksDB indexes, Rust):
single_node_property_projection 15,385 changes/s (RocksDB), bootstrap 57,671 elements/s.
"""

from __future__ import annotations

import argparse
import gc
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.common import (
    bench_env,
    command_line,
    format_table,
    load_average,
    print_lines,
    rate,
)
from bench.query_engine import (
    LEGEND,
    InProcess,
    Pipelined,
    Prepared,
    interleave,
    ratio_table,
    record_in_process,
    record_pipeline,
    run_pipeline,
)
from bench.results import Recorder
from drasi_ray.model.changes import Element, ElementChange, Op, Timing, node, relation

COMFORT = (
    "floor(50 + (r.temperature - 72) + (r.humidity - 42) + "
    "CASE WHEN r.co2 > 500 THEN (r.co2 - 500) / 25 ELSE 0 END)"
)
AVERAGING = (
    f"MATCH (r:Room)-[:PART_OF]->(f:Floor) WITH f.name AS FloorName, {COMFORT} AS "
    "RoomComfortLevel RETURN FloorName, avg(RoomComfortLevel) AS ComfortLevel"
)
SCENARIOS: dict[str, str] = {
    "single_node_property_projection": (
        "MATCH (r:Room) RETURN r.name as RoomName, r.temperature AS Temperature, "
        "r.humidity AS Humidity, r.co2 AS CO2"
    ),
    "single_node_calculation_projection": (
        f"MATCH (r:Room) RETURN r.name AS RoomName, {COMFORT} AS ComfortLevel"
    ),
    "single_path_averaging_projection": AVERAGING,
    "single_path_no_change_averaging_projection": AVERAGING,
}
FLOORS = 10
ROOMS = 20
PROPERTIES = ("temperature", "humidity", "co2")
DRASI_PEER = (
    "Drasi's published sample (query-perf README: Rust, in-memory index, another machine)",
    15_873.0,
    56_133.0,
)
"""The peer of single_node_property_projection at the base size: changes/s, bootstrap el/s."""
DRASI_FIGURES = (
    "Drasi's published sample (query-perf README, Rust): single_node_property_projection "
    "15,385 changes/s with the RocksDB index (15,873 in memory), bootstrap 57,671 elements/s "
    "(RocksDB; 56,133 in memory), 4,210 elements, 1,000 changes."
)


class BuildingModel:
    """The building comfort graph and its room-property change generator (seeded)."""

    def __init__(self, buildings: int) -> None:
        self.buildings = buildings
        self.elements: list[Element] = []
        self.rooms: dict[str, dict[str, Any]] = {}
        for b in range(buildings):
            self._add_building(b)

    def _add_building(self, b: int) -> None:
        building = f"b_{b}"
        self.elements.append(node(building, ["Building"], {"name": f"Building {b}"}))
        for f in range(FLOORS):
            floor = f"f_{b}_{f}"
            self.elements.append(node(floor, ["Floor"], {"name": f"Floor {floor}"}))
            self.elements.append(relation(f"po_{floor}_{building}", ["PART_OF"], floor, building))
            for r in range(ROOMS):
                room = f"r_{b}_{f}_{r}"
                properties = {
                    "name": f"Room {room}_",
                    "temperature": 72.0,
                    "humidity": 42.0,
                    "co2": 500.0,
                }
                self.rooms[room] = properties
                self.elements.append(node(room, ["Room"], properties))
                self.elements.append(relation(f"po_{room}_{floor}", ["PART_OF"], room, floor))

    def changes(self, count: int, seed: int, start_ms: int = 5_000_000) -> list[ElementChange]:
        """``count`` whole-room updates, each moving one property by a delta in [-2, 2]."""
        rng = random.Random(seed)
        time_ms = start_ms
        changes: list[ElementChange] = []
        for number in range(count):
            time_ms += rng.randint(1, 3)
            room = (
                f"r_{rng.randrange(self.buildings)}_{rng.randrange(FLOORS)}_{rng.randrange(ROOMS)}"
            )
            properties = self.rooms[room]
            name = PROPERTIES[rng.randrange(3)]
            properties[name] = properties[name] + rng.uniform(-2.0, 2.0)
            element = node(room, ["Room"], properties, time_ms)
            changes.append(ElementChange(Op.UPDATE, element, (time_ms, number, 0), Timing(0)))
        return changes


@dataclass(frozen=True)
class Options:
    scenarios: list[str]
    buildings: int
    scale: int
    changes: int
    seed: int
    pipeline: bool
    pipeline_changes: int
    record: bool


def parse_args(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(prog="python -m bench.query_perf", description=__doc__)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--buildings", type=int, default=10, help="base size (Drasi's: 10)")
    parser.add_argument("--scale", type=int, default=100, help="also run this many times bigger")
    parser.add_argument("--changes", type=int, default=20_000, help="timed changes per run")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument(
        "--no-pipeline", action="store_true", help="skip the runs through DrasiRay + Redis"
    )
    parser.add_argument("--pipeline", action="store_true", help="(the default) run them")
    parser.add_argument("--pipeline-changes", type=int, default=10_000)
    parser.add_argument("--no-record", action="store_true", help="do not append to results.jsonl")
    args = parser.parse_args(argv)
    return Options(
        scenarios=[s for s in args.scenarios.split(",") if s],
        buildings=args.buildings,
        scale=args.scale,
        changes=args.changes,
        seed=args.seed,
        pipeline=not args.no_pipeline,
        pipeline_changes=args.pipeline_changes,
        record=not args.no_record,
    )


def prepare(scenario: str, buildings: int, changes: int, seed: int) -> Prepared:
    model = BuildingModel(buildings)
    updates = model.changes(changes, seed + sorted(SCENARIOS).index(scenario))
    return Prepared(SCENARIOS[scenario], model.elements, updates)


def run_all(options: Options) -> dict[tuple[str, int], InProcess]:
    """Per scenario: prepare both sizes, then apply their changes interleaved."""
    sizes = [options.buildings]
    if options.scale > 1:
        sizes.append(options.buildings * options.scale)
    results: dict[tuple[str, int], InProcess] = {}
    for scenario in options.scenarios:
        runs = [prepare(scenario, b, options.changes, options.seed) for b in sizes]
        for buildings, run in zip(sizes, interleave(runs), strict=True):
            results[(scenario, buildings)] = run
            print(
                f"{scenario:44} {run.elements:>8,} el: bootstrap {run.bootstrap_per_s:,.0f} "
                f"el/s, {1e6 / run.median_us:,.0f} changes/s at the median, load "
                f"{load_average():.2f}",
                flush=True,
            )
        del runs
        gc.collect()
    return results


def in_process_table(results: dict[tuple[str, int], InProcess]) -> list[str]:
    rows = [
        [scenario, run.elements, run.bootstrap_per_s, run.changes, run.changes_per_s,
         run.wall_changes_per_s, run.store_us, run.query_us, run.change_us, run.median_us]
        for (scenario, _), run in results.items()
    ]  # fmt: skip
    headers = (
        "scenario", "elements", "bootstrap el/s", "changes", "changes/s", "changes/s (wall)",
        "store µs", "query µs", "µs/change", "median µs",
    )  # fmt: skip
    return format_table(headers, rows)


def run_pipelines(options: Options) -> dict[str, Pipelined]:
    results: dict[str, Pipelined] = {}
    with bench_env() as server:
        for scenario in options.scenarios:
            model = BuildingModel(options.buildings)
            updates = model.changes(options.pipeline_changes, options.seed)
            run = run_pipeline(server.url, SCENARIOS[scenario], model.elements, updates)
            results[scenario] = run
            print(
                f"pipeline {scenario:44} load {rate(run.elements, run.load_s):,.0f} el/s, "
                f"{rate(run.changes, run.change_s):,.0f} changes/s",
                flush=True,
            )
    return results


def pipeline_table(results: dict[str, Pipelined]) -> list[str]:
    rows = [
        [scenario, run.elements, rate(run.elements, run.load_s), run.changes,
         rate(run.changes, run.change_s), run.rows]
        for scenario, run in results.items()
    ]  # fmt: skip
    headers = ("scenario", "elements", "load el/s", "changes", "changes/s", "result rows")
    return format_table(headers, rows)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the scenarios in-process (and optionally through the pipeline); record them."""
    options = parse_args(argv)
    recorder = Recorder("query_perf", command_line("bench.query_perf", argv))
    load_before = load_average()
    results = run_all(options)
    lines = [
        "Drasi query-perf scenarios, in-process (ElementStore + ContinuousQuery, no Ray; rates "
        f"and µs in CPU time, plus wall changes/s), {options.changes:,} changes per run.",
        "",
        LEGEND,
        "",
        *in_process_table(results),
        "",
        *ratio_table(results, "scenario"),
        "",
        DRASI_FIGURES,
    ]
    if options.pipeline:
        pipelined = run_pipelines(options)
        lines += [
            "",
            "Through the pipeline (DrasiRay, 1 consumer, batch 500, private Redis, local Ray), "
            "base size; graph published as inserts (100 per entry), then one change per entry; "
            "rates in wall time, publishing included:",
            "",
            *pipeline_table(pipelined),
        ]
        for scenario, piped in pipelined.items():
            record_pipeline(recorder, scenario, piped)
    lines += ["", f"Load average (1 min): {load_before:.2f} before, {load_average():.2f} after."]
    print_lines(["", *lines])
    for (scenario, buildings), run in results.items():
        drasi = scenario == "single_node_property_projection" and buildings == 10
        record_in_process(recorder, scenario, run, DRASI_PEER if drasi else None)
    if options.record:
        recorder.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
