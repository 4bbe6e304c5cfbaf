"""The records both engines' runs are made of: changes, cases, queries and what each ran.

A :class:`GraphChange` is one source change as both engines receive it: Drasi's through
drasi-lib's Python source (:meth:`GraphChange.drasi_change`), drasi_ray's as a platform
CloudEvent (:meth:`GraphChange.platform_event`). Everything here is plain data that survives a
JSON round trip, so the oracle can run in a child process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

Op: TypeAlias = Literal["insert", "update", "delete"]
Row: TypeAlias = dict[str, Any]
Diff: TypeAlias = dict[str, Any]
"""One result diff as the engines emit it: ``{"type": "ADD" | "DELETE", "data": row}``,
``{"type": "UPDATE", "before": row, "after": row}`` or ``{"type": "aggregation", "before":
row | None, "after": row}`` (Drasi's UPDATE also carries ``data``, a copy of ``after``)."""

SOURCE_ID = "s"
"""The one source every case's queries read."""

_OP_CODES: Mapping[str, str] = {"insert": "i", "update": "u", "delete": "d"}


@dataclass(frozen=True, slots=True)
class GraphChange:
    """One change of one element. A relation has both ``start_id`` and ``end_id``."""

    op: Op
    id: str
    labels: tuple[str, ...]
    properties: Mapping[str, Any] = field(default_factory=dict)
    effective_from: int = 0
    """Milliseconds since the epoch, as Drasi keeps an element's time."""
    start_id: str | None = None
    end_id: str | None = None
    source: str = SOURCE_ID
    """The source the change arrives on."""

    @property
    def is_relation(self) -> bool:
        return self.start_id is not None

    def drasi_change(self) -> dict[str, Any]:
        """The change as drasi-lib's ``push_change`` takes it."""
        change: dict[str, Any] = {
            "op": self.op,
            "id": self.id,
            "labels": list(self.labels),
            "properties": dict(self.properties),
            "effective_from": self.effective_from,
        }
        if self.is_relation:
            change["start_id"] = self.start_id
            change["end_id"] = self.end_id
        return change

    def platform_event(self) -> dict[str, Any]:
        """The change as Drasi's platform source reads it from a Redis stream."""
        data: dict[str, Any] = {
            "id": self.id,
            "labels": list(self.labels),
            "properties": dict(self.properties),
        }
        if self.is_relation:
            data["startId"] = self.start_id
            data["endId"] = self.end_id
        return {
            "op": _OP_CODES[self.op],
            "payload": {
                "before" if self.op == "delete" else "after": data,
                "source": {
                    "db": "differential",
                    "table": "rel" if self.is_relation else "node",
                    "ts_ns": self.effective_from * 1_000_000,
                },
            },
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "id": self.id,
            "labels": list(self.labels),
            "properties": dict(self.properties),
            "effective_from": self.effective_from,
            "start_id": self.start_id,
            "end_id": self.end_id,
            "source": self.source,
        }

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> GraphChange:
        return GraphChange(
            doc["op"],
            doc["id"],
            tuple(doc["labels"]),
            dict(doc["properties"]),
            doc["effective_from"],
            doc.get("start_id"),
            doc.get("end_id"),
            doc.get("source", SOURCE_ID),
        )


@dataclass(frozen=True, slots=True)
class Case:
    """A sequence of changes applied to an empty graph."""

    name: str
    changes: tuple[GraphChange, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "changes": [c.to_json() for c in self.changes]}

    @property
    def sources(self) -> tuple[str, ...]:
        """Every source a change of the case arrives on (the default one first)."""
        found = dict.fromkeys([SOURCE_ID, *(change.source for change in self.changes)])
        return tuple(found)

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> Case:
        return Case(doc["name"], tuple(GraphChange.from_json(c) for c in doc["changes"]))


@dataclass(frozen=True, slots=True)
class QuerySpec:
    """A catalogue query: ``id`` is stable (divergence reports and docs name it).

    ``joins`` and ``middleware`` are in Drasi's config shape (``[{id, keys: [{label,
    property}]}]``, ``[{name, kind, config}]``); ``pipelines`` maps a source id to the
    middleware names its changes pass through; ``sources`` are the sources the query reads
    (default: the one every case has)."""

    id: str
    text: str
    joins: tuple[Mapping[str, Any], ...] = ()
    middleware: tuple[Mapping[str, Any], ...] = ()
    pipelines: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    sources: tuple[str, ...] = (SOURCE_ID,)
    language: str = "cypher"
    """The query's language as drasi-lib's ``add_query`` names it: ``cypher`` or ``gql``."""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "language": self.language,
            "joins": list(self.joins),
            "middleware": list(self.middleware),
            "pipelines": {k: list(v) for k, v in self.pipelines.items()},
            "sources": list(self.sources),
        }

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> QuerySpec:
        return QuerySpec(
            doc["id"],
            doc["text"],
            tuple(doc.get("joins", ())),
            tuple(doc.get("middleware", ())),
            {k: tuple(v) for k, v in doc.get("pipelines", {}).items()},
            tuple(doc.get("sources", (SOURCE_ID,))),
            doc.get("language", "cypher"),
        )

    def subscriptions(self) -> list[Any]:
        """The query's sources as drasi-lib's ``add_query`` takes them."""
        return [
            {"id": source, "pipeline": list(self.pipelines[source])}
            if source in self.pipelines
            else source
            for source in self.sources
        ]


@dataclass(slots=True)
class QueryRun:
    """What one engine produced for one query over one case.

    ``steps[i]`` holds the diffs change ``i`` caused; ``results`` is the final result set.
    ``failure`` is set when the engine refused the query or stopped running it (Drasi's
    status left "Running"); the other fields then hold what came before. drasi_ray's run
    also says, per change, how many MATCH rows it reached (``rows``) and whether a part of
    the query aggregates (``aggregating``): where one change reaches several rows of an
    aggregating query, Drasi's own output depends on its hash-map order (see
    :mod:`tests.differential.compare`).
    """

    steps: list[list[Diff]]
    results: list[Row] = field(default_factory=list)
    failure: str | None = None
    rows: list[int] = field(default_factory=list)
    aggregating: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "results": self.results,
            "failure": self.failure,
            "rows": self.rows,
            "aggregating": self.aggregating,
        }

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> QueryRun:
        return QueryRun(
            doc["steps"], doc["results"], doc["failure"], doc["rows"], doc["aggregating"]
        )


@dataclass(slots=True)
class CaseRun:
    """Every query's run over one case, by query id."""

    case: str
    queries: dict[str, QueryRun]

    def to_json(self) -> dict[str, Any]:
        return {"case": self.case, "queries": {k: v.to_json() for k, v in self.queries.items()}}

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> CaseRun:
        queries = {k: QueryRun.from_json(v) for k, v in doc["queries"].items()}
        return CaseRun(doc["case"], queries)


def empty_steps(changes: Sequence[GraphChange]) -> list[list[Diff]]:
    return [[] for _ in changes]


def plain_diff(diff: Mapping[str, Any]) -> Diff:
    """One of Drasi's diffs in the shape drasi_ray writes it: ``{type, data}`` for an ADD or a
    DELETE, ``{type, before, after}`` for an UPDATE or an aggregation (without Drasi's
    ``row_signature``, and without the copy of ``after`` Drasi's UPDATE carries as ``data``)."""
    kind = diff["type"]
    if kind in ("ADD", "DELETE"):
        return {"type": kind, "data": diff["data"]}
    if kind in ("UPDATE", "aggregation"):
        return {"type": kind, "before": diff.get("before"), "after": diff["after"]}
    return {key: value for key, value in diff.items() if key != "row_signature"}
