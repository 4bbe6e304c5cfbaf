"""What the chaos drills share: killing actors, spacing faults, comparing, reporting.

The chaos run (:mod:`drasi_ray.testing.chaos`) and the PostgreSQL chaos run
(:mod:`drasi_ray.testing.postgres_chaos`) differ in their workload and their faults; they
check and report alike: an app's result rows and element store against an in-process oracle's,
a report of counters printed one per line.
"""

from __future__ import annotations

import dataclasses
import os
import signal
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import ray

from drasi_ray.model.changes import Element
from drasi_ray.testing.conformance import diffs_match, values_equal

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


def actor_pid(actor: Any) -> int | None:
    """The process id of a drasi_ray actor (any actor with a ``pid`` method); None when it
    did not answer (Ray is still restarting it)."""
    try:
        pid = int(ray.get(actor.pid.remote(), timeout=5))
    except (ray.exceptions.RayError, TimeoutError):
        return None
    return pid


def sigkill(actor: Any) -> int | None:
    """SIGKILL the process of a drasi_ray actor (any actor with a ``pid`` method); its pid,
    or None when it did not answer (it is still restarting from an earlier kill)."""
    pid = actor_pid(actor)
    if pid is not None:
        os.kill(pid, signal.SIGKILL)
    return pid


def evenly_spaced(total: int, count: int) -> list[int]:
    """``count`` points splitting ``0..total`` into ``count + 1`` equal parts, in order."""
    return [total * (i + 1) // (count + 1) for i in range(count)]


def row_mismatches(expected: list[dict[str, Any]], actual: list[dict[str, Any]]) -> int:
    """How many rows are missing from ``actual`` or extra in it (values compared loosely)."""
    if diffs_match(expected, actual):
        return 0
    unmatched = list(actual)
    missing = 0
    for row in expected:
        index = next((i for i, got in enumerate(unmatched) if values_equal(row, got)), None)
        if index is None:
            missing += 1
        else:
            unmatched.pop(index)
    return missing + len(unmatched)


def store_mismatches(
    ours: Mapping[str, Element], theirs: Mapping[str, Element], also: Callable[[Element], Any]
) -> int:
    """Elements (by id) missing from ``theirs``, extra in it, or differing in their
    properties or in ``also`` (the labels, an end...)."""
    wrong = sum(
        1
        for element_id, element in ours.items()
        if element_id not in theirs
        or not values_equal(dict(element.properties), dict(theirs[element_id].properties))
        or also(element) != also(theirs[element_id])
    )
    return wrong + len(set(theirs) - set(ours))


def report_lines(report: DataclassInstance, hidden: str) -> list[str]:
    """Every field of ``report`` but ``hidden`` (a log), one ``name: value`` a line."""
    data = dataclasses.asdict(report)
    data.pop(hidden)
    return [f"{name:>22}: {value}" for name, value in data.items()]
