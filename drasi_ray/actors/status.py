"""What a running app reports of itself: :class:`AppStatus`, gathered from its actors.

``DrasiRay.status()`` asks every actor for its report: each consumer (its
:class:`~drasi_ray.source.consumer.ConsumerReport`), every store shard
(:class:`~drasi_ray.shards.reports.ShardReport`, and their sum), each query host
(:class:`~drasi_ray.host.core.HostReport`), each query
(:class:`~drasi_ray.host.reports.QueryReport`), each PostgreSQL source's reader
(:class:`~drasi_ray.source.postgres.reader.ReaderReport`) and the app's reactions. An actor
that does not answer (dead, restarting, or busy past the timeout) is reported
:class:`Unavailable`, never raised. :meth:`AppStatus.as_dict` is the plain-data form
(``drasi-ray run --json``, logs); the accessors (:meth:`AppStatus.query`, ...) return the typed
reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import ray

from drasi_ray.actors.barriers import read_restartable
from drasi_ray.host.core import HostReport
from drasi_ray.host.reports import QueryReport
from drasi_ray.model.errors import NotRunningError, UnknownComponentError
from drasi_ray.shards.reports import ShardReport
from drasi_ray.source.consumer import ConsumerReport
from drasi_ray.source.postgres.reader import ReaderReport

T = TypeVar("T")

ASK_TIMEOUT_S = 10.0
"""How long the status waits for one actor's report."""
HOST_TIMEOUT_S = 30.0
"""How long it waits for a host's reports of its queries (each walks its query's memory)."""


@dataclass(frozen=True, slots=True)
class Unavailable:
    """A component that did not answer (``error``: the kind of failure, if one was raised)."""

    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"state": "unavailable"} | ({} if self.error is None else {"error": self.error})


@dataclass(frozen=True, slots=True)
class AppStatus:
    """A snapshot of every component of an app (module docstring).

    ``coordinator``: every store shard's report added up (None when the app does not run);
    ``shards``: each shard's, by index; ``sources``: each source's consumers, by index;
    ``hosts``: each query host's, by name; ``queries``: each query's, by id; ``readers``:
    each PostgreSQL source's reader, by source id; ``reactions``: each app reaction's status
    in its plain-data form (``state: unavailable`` when it did not answer), by id.
    """

    app: str
    running: bool
    coordinator: ShardReport | None = None
    shards: tuple[ShardReport, ...] = ()
    sources: Mapping[str, tuple[ConsumerReport | Unavailable, ...]] = field(default_factory=dict)
    hosts: Mapping[str, HostReport | Unavailable] = field(default_factory=dict)
    queries: Mapping[str, QueryReport | Unavailable] = field(default_factory=dict)
    readers: Mapping[str, ReaderReport | Unavailable] = field(default_factory=dict)
    reactions: Mapping[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def totals(self) -> ShardReport:
        """Every store shard's counters added up (NotRunningError if the app does not run)."""
        if self.coordinator is None:
            raise NotRunningError(f"app {self.app!r} is not running")
        return self.coordinator

    def query(self, query_id: str) -> QueryReport:
        """The report of ``query_id``; UnknownComponentError if it has none (unknown, or its
        host did not answer)."""
        return _answered(self.queries, query_id, "query")

    def host(self, name: str) -> HostReport:
        """The report of query host ``name`` (UnknownComponentError as for :meth:`query`)."""
        return _answered(self.hosts, name, "query host")

    def reader(self, source_id: str) -> ReaderReport:
        """The report of ``source_id``'s PostgreSQL reader (UnknownComponentError as for
        :meth:`query`)."""
        return _answered(self.readers, source_id, "reader of source")

    def consumers(self, source_id: str) -> list[ConsumerReport]:
        """The reports of ``source_id``'s consumers that answered."""
        if source_id not in self.sources:
            raise UnknownComponentError(f"source {source_id!r} has no consumers in the status")
        return [r for r in self.sources[source_id] if isinstance(r, ConsumerReport)]

    def as_dict(self) -> dict[str, Any]:
        """The plain-data form: ``{"app", "running"}``, and while running ``coordinator``,
        ``shards``, ``sources``, ``hosts`` and ``queries`` as each report's ``as_dict``."""
        if self.coordinator is None:
            return {"app": self.app, "running": self.running}
        return {
            "app": self.app,
            "running": self.running,
            "coordinator": self.coordinator.as_dict(),
            "shards": [report.as_dict() for report in self.shards],
            "sources": {
                source_id: [report.as_dict() for report in reports]
                for source_id, reports in self.sources.items()
            },
            "readers": {source: report.as_dict() for source, report in self.readers.items()},
            "hosts": {name: report.as_dict() for name, report in self.hosts.items()},
            "queries": {query_id: report.as_dict() for query_id, report in self.queries.items()},
            "reactions": dict(self.reactions),
        }


def _answered(reports: Mapping[str, T | Unavailable], key: str, what: str) -> T:
    report = reports.get(key)
    if report is None:
        raise UnknownComponentError(f"no {what} {key!r} in the status")
    if isinstance(report, Unavailable):
        raise UnknownComponentError(f"{what} {key!r} did not answer ({report.error})")
    return report


def gather_status(
    app_id: str,
    coordinator: Any,
    hosts: Mapping[str, Any],
    host_of: Mapping[str, str],
    consumers: Mapping[str, list[Any]],
    *,
    readers: Mapping[str, Any] | None = None,
    reactions: Mapping[str, dict[str, Any]] | None = None,
    timeout: float = HOST_TIMEOUT_S,
) -> AppStatus:
    """Ask every actor of a running app for its report (Ray handles: the coordinator, the
    query hosts by name, each query's host name, each source's consumers, each PostgreSQL
    reader by source id; ``reactions``: the app reactions' statuses, gathered already). An
    actor that does not answer is reported :class:`Unavailable`; while the coordinator
    restarts this waits, up to ``timeout``, then raises ComponentUnavailableError."""
    queries: dict[str, QueryReport | Unavailable] = {}
    host_reports: dict[str, HostReport | Unavailable] = {}
    for name, host in hosts.items():
        host_reports[name] = ask(host.host_info)
        reports = _ask_all(host.info)
        for query_id in [q for q, h in host_of.items() if h == name]:
            queries[query_id] = reports.get(query_id, Unavailable())
    shards: list[ShardReport] = read_restartable(
        lambda: coordinator.shard_stats.remote(), "the coordinator", timeout
    )
    stats: ShardReport = read_restartable(
        lambda: coordinator.stats.remote(), "the coordinator", timeout
    )
    return AppStatus(
        app_id,
        True,
        coordinator=stats,
        shards=tuple(shards),
        sources={
            source_id: tuple(ask(actor.stats) for actor in actors)
            for source_id, actors in consumers.items()
        },
        hosts=host_reports,
        queries=queries,
        readers={source_id: ask(reader.report) for source_id, reader in (readers or {}).items()},
        reactions=dict(reactions or {}),
    )


def ask(method: Any, timeout_s: float = ASK_TIMEOUT_S) -> Any:
    """An actor's report; :class:`Unavailable` if the actor is dead or does not answer."""
    try:
        return ray.get(method.remote(), timeout=timeout_s)
    except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError) as exc:
        return Unavailable(type(exc).__name__)


def _ask_all(method: Any, timeout_s: float = HOST_TIMEOUT_S) -> dict[str, QueryReport]:
    """A host's reports by query id (empty if the host is unavailable)."""
    try:
        reports: dict[str, QueryReport] = ray.get(method.remote(), timeout=timeout_s)
    except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
        return {}
    return reports
