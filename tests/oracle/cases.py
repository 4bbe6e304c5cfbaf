"""Cases through Drasi: every query over each case's changes, each diff attributed to its change.

:func:`run_jobs` (and :func:`run_oracle`, one query set for every case) runs cases in the
oracle's child process (:mod:`tests.oracle.child`), one JSON line per finished case: a case
the child crashed in is retried once in a fresh child, then reported as failed.

Per case the child starts one Drasi instance with every query (start-up is paid once per
case, not per query), pushes the case's changes in order and attributes each result event to
the change that caused it: an event's ``profiling.source_send_ns`` is the time the source sent
that change, and a ``time.time_ns()`` stamp taken before each push brackets it.

Drasi runs each query in its own task, so the child waits for a condition before it reads:
after the last change it pushes a sentinel (the delete of a relation that never existed) on
every source and waits until every query has dequeued as many events as its
sources carried (changes and sentinels), counted from the query's debug log ("processing
event from source"); a query dequeues its next event
only after it has dispatched the results of the previous one. Then it waits until the
collector has received as many results as each query reports having sent
(``result_seq_advances``). A query Drasi refuses, one whose status leaves "Running" (an
error) and one that does not finish (a panic in its task, or the timeout) are reported with
``failure`` set, in the words :func:`status_of` reads back.

A case whose queries call one of Drasi's past functions (``drasi.getVersionByTimestamp``,
``drasi.getVersionsByTimeRange``) runs on a RocksDB index store with Drasi's archive on, in a
directory of its own: Drasi knows those functions only there (a request can also turn the
archive on or off for every case).
"""

from __future__ import annotations

import asyncio
import bisect
import re
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.oracle.child import Emit, create_drasi, run_child
from tests.oracle.model import (
    Case,
    CaseRun,
    GraphChange,
    QueryRun,
    QuerySpec,
    empty_steps,
)

PROCESSING = "processing event from source"
SENTINEL_LABEL = "DifferentialSentinel"
RUNNING = "Running"
LIVE = (RUNNING, "Starting")
"""A query's states in which it may still answer (a loaded machine can poll one starting)."""
STATUS_EVERY_S = 0.25
STALL_S = 3.0
ERROR_LOG_S = 2.0
PAST_FUNCTIONS = ("drasi.getversionbytimestamp", "drasi.getversionsbytimerange")
CHILD_MARGIN_S = 120.0
"""Time a child may take beyond the cases' own timeouts (start-up, instances) before it is
killed."""

REFUSED = "refused"
"""How the failure of a query Drasi refused when it was added starts."""
STOPPED = re.compile(r"^stopped running \(status (\w+)\)")
"""How the failure of a query whose status left "Running" starts (the status in group 1)."""


Job = tuple[Case, tuple[QuerySpec, ...]]
"""One case and the queries to run over it."""


@dataclass(frozen=True, slots=True)
class OracleRequest:
    """What the child runs: each case with its queries."""

    jobs: tuple[Job, ...]
    timeout_s: float
    archive: bool | None = None
    """Drasi's archive index on or off; None: on for a case whose queries need it."""

    def to_json(self) -> dict[str, Any]:
        jobs = [
            {"case": case.to_json(), "queries": [q.to_json() for q in queries]}
            for case, queries in self.jobs
        ]
        return {"jobs": jobs, "timeout_s": self.timeout_s, "archive": self.archive}

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> OracleRequest:
        jobs = tuple(
            (
                Case.from_json(job["case"]),
                tuple(QuerySpec.from_json(q) for q in job["queries"]),
            )
            for job in doc["jobs"]
        )
        return OracleRequest(jobs, doc["timeout_s"], doc["archive"])


# --------------------------------------------------------------------------- parent side


def run_oracle(
    cases: Sequence[Case], queries: Sequence[QuerySpec], timeout_s: float = 60.0
) -> dict[str, CaseRun]:
    """Drasi's run of every case with every query, by case name (module docstring)."""
    return run_jobs([(case, tuple(queries)) for case in cases], timeout_s)


def run_jobs(
    jobs: Sequence[Job], timeout_s: float = 60.0, archive: bool | None = None
) -> dict[str, CaseRun]:
    """Drasi's run of each case with its own queries, by case name (case names unique).
    ``archive``: Drasi's archive index on or off (None: on where a query needs it)."""
    done: dict[str, CaseRun] = {}
    pending = list(jobs)
    for _attempt in range(2):
        if not pending:
            break
        done.update(_run_child(OracleRequest(tuple(pending), timeout_s, archive)))
        pending = [job for job in pending if job[0].name not in done]
    for case, queries in pending:
        failure = "drasi-lib crashed while running this case"
        runs = {q.id: QueryRun(empty_steps(case.changes), [], failure) for q in queries}
        done[case.name] = CaseRun(case.name, runs)
    return done


def _run_child(request: OracleRequest) -> dict[str, CaseRun]:
    limit = request.timeout_s * len(request.jobs) + CHILD_MARGIN_S
    lines = run_child("cases", request.to_json(), limit)
    return {doc["case"]: CaseRun.from_json(doc) for doc in lines}


# --------------------------------------------------------------------------- child side


@dataclass(slots=True)
class _Collector:
    """Result events and per-query processed-event counts, filled by drasi-lib callbacks."""

    events: list[Mapping[str, Any]] = field(default_factory=list)
    received: Counter[str] = field(default_factory=Counter)
    processed: Counter[str] = field(default_factory=Counter)
    errors: dict[str, str] = field(default_factory=dict)

    def on_result(self, event: Mapping[str, Any]) -> None:
        self.events.append(event)
        self.received[event["query_id"]] += 1

    def on_log(self, message: Mapping[str, Any]) -> None:
        if PROCESSING in message["message"]:
            self.processed[message["component_id"]] += 1
        elif message["level"] == "Error":
            self.errors.setdefault(message["component_id"], message["message"])


async def _until(condition: Callable[[], Awaitable[bool]], deadline: float) -> bool:
    """Poll ``condition`` until it holds (True) or ``deadline`` (monotonic) passes (False)."""
    while not await condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.005)
    return True


class _CaseRunner:
    """One Drasi instance running every query over one case."""

    def __init__(self, drasi: Any, case: Case, queries: Sequence[QuerySpec]) -> None:
        self.drasi = drasi
        self.case = case
        self.queries = queries
        self.collector = _Collector()
        self.failures: dict[str, str] = {}
        self.stamps: list[int] = []

    async def run(self, timeout_s: float) -> CaseRun:
        await self.drasi.start()
        accepted = await self._add_queries()
        if accepted:
            await self.drasi.add_python_reaction("collector", accepted, self.collector.on_result)
            for query_id in accepted:
                await self.drasi.on_query_logs(query_id, self.collector.on_log)
        await self._push_all(accepted, time.monotonic() + timeout_s)
        await self._settle(accepted, time.monotonic() + timeout_s)
        return await self._collect(accepted)

    async def _add_queries(self) -> list[str]:
        accepted: list[str] = []
        for query in self.queries:
            try:
                await self.drasi.add_query(
                    query.id,
                    query.text,
                    query.subscriptions(),
                    language=query.language,
                    joins=list(query.joins) or None,
                    middleware=list(query.middleware) or None,
                    auto_start=False,
                )
                await self.drasi.start_query(query.id)  # where Drasi parses the query
            except Exception as error:  # drasi.DrasiError and friends: Drasi refuses it
                self.failures[query.id] = f"{REFUSED}: {error}"
            else:
                accepted.append(query.id)
        return accepted

    async def _push_all(self, accepted: list[str], deadline: float) -> None:
        """Push every change in order. Drasi runs each source in a task of its own, so with
        several sources a query could take a later change of one source before an earlier
        change of another: then each change is pushed only once every query reading its
        source has dequeued it (the next event a query dequeues comes after its results)."""
        in_step = len(self.case.sources) > 1 or any(len(q.sources) > 1 for q in self.queries)
        sent: Counter[str] = Counter()
        readers = {q.id: set(q.sources) for q in self.queries if q.id in accepted}
        for change in self.case.changes:
            self.stamps.append(time.time_ns())
            await self.drasi.push_change(change.source, change.drasi_change())
            for query_id, sources in readers.items():
                sent[query_id] += change.source in sources
            if in_step:
                await self._dequeued(sent, deadline)
        self.stamps.append(time.time_ns())
        for source in _sources(self.case, self.queries):
            await self.drasi.push_change(source, _sentinel(self.case).drasi_change())

    async def _dequeued(self, sent: Counter[str], deadline: float) -> None:
        """Wait until every query dequeued the events sent to it (or stopped, or stalled)."""

        async def caught_up() -> bool:
            return all(
                self.collector.processed[query_id] >= count or query_id in self.collector.errors
                for query_id, count in sent.items()
            )

        await _until(caught_up, min(deadline, time.monotonic() + STALL_S))

    async def _settle(self, accepted: list[str], deadline: float) -> None:
        """Wait until each query has processed its sentinels and its results have arrived.

        A query still short of the sentinel when no query made progress for ``STALL_S``
        (or at ``deadline``) is reported as not finished.
        """
        by_query = {query.id: query for query in self.queries}
        expected = {
            query_id: sum(c.source in by_query[query_id].sources for c in self.case.changes)
            + len(by_query[query_id].sources)
            for query_id in accepted
        }
        waiting = set(accepted)
        progress = (-1, time.monotonic())
        last_status = 0.0

        async def processed() -> bool:
            nonlocal last_status, progress
            for query_id in list(waiting):
                if self.collector.processed[query_id] >= expected[query_id]:
                    waiting.discard(query_id)
            now = time.monotonic()
            if waiting and now - last_status > STATUS_EVERY_S:
                last_status = now
                await self._drop_stopped(waiting)
            total = sum(self.collector.processed.values())
            if total != progress[0]:
                progress = (total, now)
            return not waiting or now - progress[1] > STALL_S

        await _until(processed, deadline)
        for query_id in waiting:
            error = self.collector.errors.get(query_id, "no error logged")
            self.failures[query_id] = f"drasi-lib did not finish the case: {error}"
        live = [q for q in accepted if q not in self.failures]
        sent = {q: (await self.drasi.get_query_metrics(q))["result_seq_advances"] for q in live}

        async def delivered() -> bool:
            return all(self.collector.received[q] >= count for q, count in sent.items())

        if not await _until(delivered, deadline):
            for query_id in live:
                self.failures[query_id] = "drasi-lib's results did not all arrive in time"

    async def _drop_stopped(self, waiting: set[str]) -> None:
        for query_id in list(waiting):
            status = await self.drasi.get_query_status(query_id)
            if status not in LIVE:
                error = await self._logged_error(query_id)
                self.failures[query_id] = f"stopped running (status {status}): {error}"
                waiting.discard(query_id)

    async def _logged_error(self, query_id: str) -> str:
        """The error the query logged: the status can change before the log line arrives."""
        errors = self.collector.errors

        async def logged() -> bool:
            return query_id in errors

        await _until(logged, time.monotonic() + ERROR_LOG_S)
        return errors.get(query_id, "no error logged")

    async def _collect(self, accepted: list[str]) -> CaseRun:
        runs = {q.id: QueryRun(empty_steps(self.case.changes)) for q in self.queries}
        for event in self.collector.events:
            step = bisect.bisect_right(self.stamps, event["profiling"]["source_send_ns"]) - 1
            run = runs[event["query_id"]]
            if 0 <= step < len(self.case.changes):
                run.steps[step].extend(event["results"])
            elif step != len(self.case.changes):  # the sentinel's: Drasi matches a relation
                self.failures[event["query_id"]] = f"result from outside the case (step {step})"
        for query_id in accepted:
            if query_id not in self.failures:
                runs[query_id].results = list(await self.drasi.get_query_results(query_id))
        for query_id, failure in self.failures.items():
            runs[query_id].failure = failure
        return CaseRun(self.case.name, runs)


def _sources(case: Case, queries: Sequence[QuerySpec]) -> list[str]:
    """Every source the case's changes or the queries name."""
    found = dict.fromkeys(case.sources)
    for query in queries:
        found.update(dict.fromkeys(query.sources))
    return list(found)


def _sentinel(case: Case) -> GraphChange:
    """A delete of an element that never existed: it changes no result, and middleware passes
    it on untouched (a delete carries no properties for a decoder or promote to fail on)."""
    last = case.changes[-1].effective_from if case.changes else 0
    return GraphChange(
        "delete", "differential-sentinel", (SENTINEL_LABEL,), {}, last + 1, "nowhere", "nowhere"
    )


def status_of(failure: str | None) -> str:
    """A query's state as drasi-lib names it, from its run's ``failure``: "Running" (no
    failure), "Refused" (refused when added), the status it left "Running" for ("Error"), or
    "Silent" (it did not finish: a panic in its task, a crash, the timeout)."""
    if failure is None:
        return RUNNING
    if failure.startswith(REFUSED):
        return "Refused"
    stopped = STOPPED.match(failure)
    return stopped.group(1) if stopped else "Silent"


def needs_archive(queries: Sequence[QuerySpec]) -> bool:
    """Whether a query calls a past function (module docstring)."""
    return any(name in query.text.lower() for query in queries for name in PAST_FUNCTIONS)


async def _run_case(
    number: int, case: Case, queries: Sequence[QuerySpec], request: OracleRequest
) -> CaseRun:
    name = f"differential-{number}"
    archive = needs_archive(queries) if request.archive is None else request.archive
    with tempfile.TemporaryDirectory(prefix="drasi-archive-") as directory:
        instance = await create_drasi(name, directory if archive else None)
        for source in _sources(case, queries):
            await instance.add_python_source(source)
        run = await _CaseRunner(instance, case, queries).run(request.timeout_s)
        await instance.stop()
    return run


async def serve(doc: Mapping[str, Any], emit: Emit) -> None:
    """The child's runner of a cases request: one line per case, as each finishes."""
    request = OracleRequest.from_json(doc)
    for number, (case, queries) in enumerate(request.jobs):
        emit((await _run_case(number, case, queries, request)).to_json())
