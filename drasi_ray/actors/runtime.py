"""Small helpers for code that runs inside Ray actors.

Hot methods (one call per batch or per subscriber poll: the coordinator's ``apply_batch``, the
query actors' ``deliver`` and ``take``) are declared with ``@ray.method(enable_task_events=
False)``: Ray then records no task event per call, so those calls do not show in ``ray list
tasks`` or the dashboard's task table (they would be thousands per second), and each costs
less (``python -m bench.hops`` measures a Ray call with and without them; figures in
bench/CURRENT.md).
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import warnings

import ray


def was_restarted() -> bool:
    """True when the current actor is a restart (Ray reconstructed it after a failure)."""
    with warnings.catch_warnings():
        # Ray 2.60's own implementation of this call trips one of its deprecation warnings.
        warnings.simplefilter("ignore", DeprecationWarning)
        return bool(ray.get_runtime_context().was_current_actor_reconstructed)


SWITCH_INTERVAL_S = 0.0005
"""The GIL hand-over interval of pipeline actors (CPython's default is 5 ms)."""


PIPELINE_NICENESS = 0
"""The nice level of the pipeline actors' threads (Ray starts worker processes at 15)."""

logger = logging.getLogger("drasi_ray.runtime")


def tune_for_latency(niceness: int | None = PIPELINE_NICENESS) -> None:
    """Let a thread waiting for the GIL get it within 0.5 ms instead of 5 ms, and run the
    actor's threads at ``niceness`` (None: leave Ray's 15).

    An async Ray actor runs its event loop in one thread while Ray's own threads hand it calls
    and replies; each hand-over needs the GIL. With CPython's default 5 ms switch interval a
    busy event loop (decoding or applying a batch) holds back every reply it is waiting for by
    up to 5 ms per hop.

    Ray starts its workers at nice 15 so that they never starve Ray's own processes. The
    pipeline's actors are the data path: at nice 15 the producer, Redis and the application
    reading results (all at 0) take the CPU first on a busy node, and each hop waits: p99
    latency at a fixed load (``bench.latency``) was clearly lower with the actors at 0 than at
    15 in alternating runs (docs/operations.md, "Machine facts"). Lowering a nice value needs
    CAP_SYS_NICE (root in most containers); without it the actor logs once and keeps Ray's
    level.
    """
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    if niceness is not None:
        _renice(niceness)


def _renice(niceness: int) -> None:
    """Set every thread of this process to ``niceness`` (Linux nice values are per thread;
    threads started later inherit their creator's)."""
    try:
        threads = [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:  # no /proc (not Linux, where nice is per process): this process
        threads = [0]
    for thread in threads:
        try:
            os.setpriority(os.PRIO_PROCESS, thread, niceness)
        except PermissionError:
            logger.info("actor threads stay at Ray's nice level: no permission for %d", niceness)
            return
        except ProcessLookupError:  # a thread that ended meanwhile
            continue


GC_YOUNG_THRESHOLD = 50_000
"""Container allocations between two young-generation collections (CPython's default: 700)."""
GC_MIDDLE_THRESHOLD = 2
"""Young collections between two middle-generation ones (CPython's default: 10)."""


def tune_gc() -> None:
    """Keep the cyclic garbage collector off the per-batch path of a pipeline actor.

    Two costs (docs/operations.md, "Machine facts"):

    - An actor process holds about 90,000 objects once Ray and drasi_ray are imported, and a
      full collection walks all of them, stalling the actor for tens of milliseconds.
      :func:`gc.freeze` moves what exists now to the permanent generation, which no collection
      visits again; the query and coordinator actors freeze once more after loading their graph.
    - A batch's changes, deltas and results hold several tracked containers per event
      (version tuples, property maps, diffs) until the batch is handed on, and a backlog
      keeps up to ``max_in_flight`` entries in flight. CPython counts allocations less
      deallocations since the last collection, so a young threshold above what the batches
      in flight hold is never reached while a backlog is drained: their objects are freed by
      reference counting and no collection walks them (at the former 10,000, a young
      collection ran every few thousand events and walked the batches in flight each time).
      The middle generation is collected every 2 young collections, so it holds as many
      objects as it did at 10,000 x 10; a young collection where the graph grows walks up
      to 50,000 objects, a longer pause than at 10,000 (docs/performance.md has both).

    Cyclic garbage is still collected, only in fewer passes.
    """
    gc.freeze()
    oldest = gc.get_threshold()[2]
    gc.set_threshold(GC_YOUNG_THRESHOLD, GC_MIDDLE_THRESHOLD, oldest)
