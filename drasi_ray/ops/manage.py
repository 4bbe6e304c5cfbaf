"""What the ``drasi-ray`` commands do to a running app, in the ``drasi-ray run`` process.

:class:`AppManager` executes the requests of :mod:`drasi_ray.ops.control` on the
:class:`~drasi_ray.app.DrasiRay` the process runs: ``apply`` (create or update resources from a
Drasi file), ``delete``, ``list``, ``describe`` and ``results`` (what ``watch`` shows). It runs
in the thread that drives the app, between two rounds of printing results, and keeps the
``run`` loop's subscriptions in step (a query applied is printed too, one deleted no more).

``apply`` checks everything before it changes anything: the file is read
(:mod:`drasi_ray.model.resources`), every query it creates or updates is parsed and its
middleware checked, every source a query reads and every query a reaction names must exist in
the app or in the file. A problem refuses the whole file and leaves the app as it was. Then,
sources first, queries next, reactions last: a new resource is added (a query is bootstrapped
from the shards before ``apply`` returns), one the same as the running one is left alone, a
query or reaction that differs is replaced (a query then bootstraps again). A source that
differs is refused: replacing it would drop its graph (delete it, then apply).
"""

from __future__ import annotations

import functools
import logging
import os
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from drasi_ray.host.runner import make_engine
from drasi_ray.model import resource_docs, resources
from drasi_ray.model.config import PostgresSourceSpec, QueryConfig, SourceSpec
from drasi_ray.model.errors import (
    ConfigError,
    ControlError,
    DrasiRayError,
    UnknownComponentError,
)
from drasi_ray.model.reaction_specs import (
    AnyAppReaction,
    AnyReaction,
    HttpReaction,
    PostgresStoredProcReaction,
    SseReaction,
)
from drasi_ray.model.resources import QUERY, REACTION, SOURCE, ReactionDefinition, Resource
from drasi_ray.ops.control import ControlServer, Request
from drasi_ray.ops.status import source_status
from drasi_ray.ops.target import resource_kind
from drasi_ray.source.middleware import check_middleware
from drasi_ray.source.platform import PlatformSource
from drasi_ray.source.postgres.definition import PostgresSource

if TYPE_CHECKING:
    from drasi_ray.app import DrasiRay

logger = logging.getLogger("drasi_ray.control")


@dataclass
class _Plan:
    """What an ``apply`` will do, every resource checked first: a step per resource, in
    order (sources, queries, reactions), each its line and its action (None: unchanged)."""

    steps: list[tuple[str, Callable[[], None] | None]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class AppManager:
    """Runs the commands' requests on ``app``. ``on_query`` is called with a query id after
    the query was added (True) or removed (False), so the ``run`` loop follows it."""

    def __init__(
        self, app: DrasiRay, redis_url: str, on_query: Callable[[str, bool], None]
    ) -> None:
        self.app = app
        self.redis_url = redis_url
        """The app's control Redis: where a PostgreSQL source applied writes by default."""
        self._on_query = on_query

    def serve(self, server: ControlServer) -> None:
        """Answer every request waiting on ``server``."""
        for request in server.take():
            server.answer(request, self.handle(request))

    def handle(self, request: Request) -> dict[str, Any]:
        """The reply to one request: ``{"ok": true, "result"}`` or ``{"ok": false, "error"}``."""
        handlers: dict[str, Callable[[Mapping[str, Any]], Any]] = {
            "apply": self._apply,
            "delete": self._delete,
            "list": self._list,
            "describe": self._describe,
            "results": self._results,
        }
        handler = handlers.get(request.op)
        if handler is None:
            return {"ok": False, "error": f"unknown request {request.op!r}"}
        try:
            return {"ok": True, "result": handler(request.args)}
        except DrasiRayError as exc:
            return {"ok": False, "error": str(exc)}
        except Exception as exc:  # the app keeps running; the command reports it
            logger.error("%s failed:\n%s", request.op, traceback.format_exc())
            return {"ok": False, "error": f"{request.op} failed: {type(exc).__name__}: {exc}"}

    # -- apply --------------------------------------------------------------------------

    def _apply(self, args: Mapping[str, Any]) -> dict[str, Any]:
        text, file = str(args["text"]), str(args["file"])
        read = resources.parse_resources(text, file, self.redis_url, os.environ)
        plan = self._plan(read)
        if plan.problems:
            raise ConfigError("\n".join(plan.problems))
        done: list[str] = []
        for line, action in plan.steps:
            try:
                if action is not None:
                    action()
            except DrasiRayError as exc:
                label = line.partition(":")[0]
                failed = f"{label}: failed: {exc}; what follows it in the file was not applied"
                raise ControlError("\n".join([*done, failed])) from exc
            done.append(line)
        return {"lines": done, "notices": [str(notice) for notice in read.notices]}

    def _add_source(self, source: PlatformSource | PostgresSource) -> None:
        self.app.add_source(source)

    def _add_query(self, query: QueryConfig, replaces: bool) -> None:
        if replaces:
            self._remove_query(query.id)
        self.app.add_query(query)
        self._on_query(query.id, True)

    def _set_reaction(self, name: str, definition: ReactionDefinition) -> None:
        """Stop whatever runs under the name ``name``, then start ``definition``."""
        self._stop_reaction(name)
        spec = definition.spec
        if isinstance(spec, (HttpReaction, SseReaction, PostgresStoredProcReaction)):
            self.app.add_reaction(spec)
            return
        for query_id in definition.queries:
            self.app.add_reaction(query_id, spec)

    def _stop_reaction(self, name: str) -> bool:
        """Stop the reaction ``name`` (of the app, or beside its queries); whether it ran."""
        running = self._reactions().get(name, {})
        for query_id in running:
            self.app.remove_reaction(query_id, name)
        if name in self.app.app_reactions():
            self.app.remove_app_reaction(name)
            return True
        return bool(running)

    def _plan(self, read: resources.ResourceFile) -> _Plan:
        plan = _Plan()
        new_sources = {r.name for r in read.of_kind(SOURCE)}
        known_sources = set(self.app.source_ids) | new_sources
        known_queries = set(self.app.query_ids) | {r.name for r in read.of_kind(QUERY)}
        for resource in read.of_kind(SOURCE):
            self._plan_source(resource, plan)
        for resource in read.of_kind(QUERY):
            self._plan_query(read, resource, known_sources, plan)
        for resource in read.of_kind(REACTION):
            self._plan_reaction(resource, known_queries, plan)
        return plan

    def _plan_source(self, resource: Resource, plan: _Plan) -> None:
        spec = resource.spec
        assert isinstance(spec, (SourceSpec, PostgresSourceSpec))
        if spec.id not in self.app.source_ids:
            source = _source_of(spec)
            plan.steps.append((f"{resource.label}: created", lambda: self._add_source(source)))
        elif _source_of(spec) == self.app.source(spec.id):
            plan.steps.append((f"{resource.label}: unchanged", None))
        else:
            plan.problems.append(
                f"{_at(resource)}: {resource.label} runs with other settings: replacing a "
                f"source drops its graph; delete it first (drasi-ray delete source {spec.id}), "
                "then apply"
            )

    def _plan_query(
        self, read: resources.ResourceFile, resource: Resource, sources: set[str], plan: _Plan
    ) -> None:
        from drasi_ray.ops.validate import query_problem

        query = resource.spec
        assert isinstance(query, QueryConfig)
        problems = [str(p) for p in resources.missing_sources(resource, sources)]
        node = resource.field_node("spec", "query")
        parsed = query_problem(read.path, read.text, node, query, f"{resource.label} spec.query")
        if parsed is not None:
            problems.append(str(parsed))
        else:
            try:
                make_engine(query)
                check_middleware(query.middleware, query.pipelines)
            except DrasiRayError as exc:
                problems.append(f"{_at(resource)}: {resource.label}: {exc}")
        if problems:
            plan.problems += problems
            return
        running = query.id in self.app.query_ids
        if running:
            current = self.app.query_config(query.id)
            kept = tuple(r for r in current.reactions if _kept_on_apply(r))
            query = query.model_copy(update={"reactions": (*query.reactions, *kept)})
            if query == current:
                plan.steps.append((f"{resource.label}: unchanged", None))
                return
        line = f"{resource.label}: {'updated' if running else 'created'}"
        plan.steps.append((line, functools.partial(self._add_query, query, running)))

    def _plan_reaction(self, resource: Resource, queries: set[str], plan: _Plan) -> None:
        definition = resource.spec
        assert isinstance(definition, ReactionDefinition)
        unknown = [query_id for query_id in definition.queries if query_id not in queries]
        for query_id in unknown:
            where = resource.locate("spec", "queries", query_id)
            plan.problems.append(
                f"{where.file}:{where.line}:{where.column}: {resource.label} spec.queries: "
                f"unknown query {query_id!r}"
            )
        if unknown:
            return
        running = self._reactions().get(resource.name, {})
        of_app = self.app.app_reactions().get(resource.name)
        if of_app is not None and not running:
            unchanged = of_app == definition.spec
        else:
            unchanged = set(running) == set(definition.queries) and all(
                spec == definition.spec for spec in running.values()
            )
        if unchanged:
            plan.steps.append((f"{resource.label}: unchanged", None))
            return
        line = f"{resource.label}: {'updated' if running or of_app else 'created'}"
        action = functools.partial(self._set_reaction, resource.name, definition)
        plan.steps.append((line, action))

    def _reactions(self) -> dict[str, dict[str, AnyReaction]]:
        """Reaction name -> query id -> its spec there, over the app's queries."""
        found: dict[str, dict[str, AnyReaction]] = {}
        for query_id in self.app.query_ids:
            for reaction in self.app.query_config(query_id).reactions:
                if reaction.name is not None:
                    found.setdefault(reaction.name, {})[query_id] = reaction
        return found

    # -- delete -------------------------------------------------------------------------

    def _delete(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Delete ``[kind, name]`` pairs, reactions first and sources last; every one is
        tried, and any that failed make the request fail with every line."""
        order = {REACTION: 0, QUERY: 1, SOURCE: 2}
        targets = sorted(
            ((resource_kind(kind), name) for kind, name in args["resources"]),
            key=lambda target: order[target[0]],
        )
        lines: list[str] = []
        failed = False
        for kind, name in targets:
            try:
                self._delete_one(kind, name)
                lines.append(f"{kind}/{name}: deleted")
            except DrasiRayError as exc:
                lines.append(f"{kind}/{name}: {exc}")
                failed = True
        if failed:
            raise ConfigError("\n".join(lines))
        return {"lines": lines}

    def _delete_one(self, kind: str, name: str) -> None:
        if kind == REACTION:
            if not self._stop_reaction(name):
                raise UnknownComponentError(f"unknown reaction {name!r}")
        elif kind == QUERY:
            self.app.query_config(name)  # unknown: UnknownComponentError
            self._remove_query(name)
        else:
            self.app.source(name)
            self.app.remove_source(name)

    def _remove_query(self, query_id: str) -> None:
        self._on_query(query_id, False)
        self.app.remove_query(query_id)

    # -- list, describe, results ----------------------------------------------------------

    def _list(self, args: Mapping[str, Any]) -> dict[str, Any]:
        kind = args.get("kind")
        wanted = {resource_kind(kind)} if kind else {SOURCE, QUERY, REACTION}
        status = self.app.status().as_dict()
        listing: dict[str, Any] = {}
        if SOURCE in wanted:
            listing["sources"] = [self._source_row(s, status) for s in self._source_ids()]
        if QUERY in wanted:
            listing["queries"] = [self._query_row(q, status) for q in self.app.query_ids]
        if REACTION in wanted:
            listing["reactions"] = self._reaction_rows(status)
        return listing

    def _source_ids(self) -> list[str]:
        ids = []
        for source_id in self.app.source_ids:
            try:
                self.app.source(source_id)
            except UnknownComponentError:
                continue  # a query's chain source
            ids.append(source_id)
        return ids

    def _source_row(self, source_id: str, status: Mapping[str, Any]) -> dict[str, Any]:
        source = self.app.source(source_id)
        consumers = status.get("sources", {}).get(source_id, [])
        states = [consumer.get("state", "unavailable") for consumer in consumers]
        streams = _spec_of(source).stream_settings(self.app.app_id)
        row: dict[str, Any] = {
            "id": source_id,
            "kind": "PostgreSQL" if isinstance(source, PostgresSource) else streams.format.value,
            "streams": list(streams.stream_keys),
            "consumers": len(consumers),
            "status": _source_state(states, source.auto_start),
        }
        try:
            found = source_status(_spec_of(source), self.app.app_id)
            row.update(lag=found.lag, pending=found.pending, dead_letters=found.dead_letters)
        except Exception as exc:  # the listing stays useful when a source's Redis is away
            row.update(lag=None, pending=None, dead_letters=None, error=str(exc))
        return row

    def _query_row(self, query_id: str, status: Mapping[str, Any]) -> dict[str, Any]:
        config = self.app.query_config(query_id)
        info = status.get("queries", {}).get(query_id)
        row: dict[str, Any] = {"id": query_id, "sources": list(config.sources)}
        if info is None:
            return {**row, "status": "Stopped", "host": None, "rows": None, "sequence": None}
        if "sequence" not in info:
            return {**row, "status": "Unavailable", "host": None, "rows": None, "sequence": None}
        state = "Running" if not info.get("errors") else f"Running, {info['errors']} errors"
        return {
            **row,
            "status": state,
            "host": info.get("host"),
            "rows": info.get("rows"),
            "sequence": info.get("sequence"),
            "error": info.get("last_error"),
        }

    def _reaction_rows(self, status: Mapping[str, Any]) -> list[dict[str, Any]]:
        reports: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for query_id, info in status.get("queries", {}).items():
            for report in info.get("reactions", []):
                reports.setdefault((query_id, report.get("name") or ""), []).append(report)
        rows = [
            _app_reaction_row(spec, status.get("reactions", {}).get(reaction_id))
            for reaction_id, spec in sorted(self.app.app_reactions().items())
        ]
        for name, running in sorted(self._reactions().items()):
            found = [r for q in running for r in reports.get((q, name), [])]
            kind = next(iter(running.values())).kind
            rows.append(_reaction_row(name, kind, sorted(running), found, len(running)))
        for query_id in self.app.query_ids:
            own = [r for r in self.app.query_config(query_id).reactions if r.name is None]
            found = reports.get((query_id, ""), [])
            for index, reaction in enumerate(own):
                one = found[index : index + 1]
                rows.append(
                    _reaction_row(f"{query_id}.{reaction.kind}", reaction.kind, [query_id], one, 1)
                )
        return rows

    def _describe(self, args: Mapping[str, Any]) -> dict[str, Any]:
        kind, name = resource_kind(str(args["kind"])), str(args["name"])
        status = self.app.status().as_dict()
        if kind == SOURCE:
            source = self.app.source(name)
            document = resource_docs.source_document(_spec_of(source))
            row = self._source_row(name, status)
        elif kind == QUERY:
            document = resource_docs.query_document(self.app.query_config(name))
            row = self._query_row(name, status)
        else:
            running = self._reactions().get(name)
            of_app = self.app.app_reactions().get(name)
            if of_app is not None:
                document = resource_docs.app_reaction_document(of_app)
            elif running:
                spec = next(iter(running.values()))
                document = resource_docs.reaction_document(name, sorted(running), spec)
            else:
                raise UnknownComponentError(f"unknown reaction {name!r}")
            row = next(r for r in self._reaction_rows(status) if r["id"] == name)
        shown = ("id", "sources", "kind", "streams", "queries")
        document["status"] = {k: v for k, v in row.items() if k not in shown}
        return document

    def _results(self, args: Mapping[str, Any]) -> dict[str, Any]:
        query_id = str(args["query"])
        self.app.query_config(query_id)  # unknown: UnknownComponentError
        return {"query": query_id, "rows": self.app.results(query_id)}


class CommandService:
    """The ``run`` loop's side of the control channel: :meth:`serve` answers what waits,
    ``subscriptions`` (query id -> the loop's subscription) follows the queries applied and
    deleted."""

    def __init__(self, app: DrasiRay, server: ControlServer, subscriptions: dict[str, Any]):
        self.server = server
        self.subscriptions = subscriptions
        self._app = app
        self.manager = AppManager(app, server.redis_url, self._follow)

    def _follow(self, query_id: str, added: bool) -> None:
        if added:
            self.subscriptions[query_id] = self._app.subscribe(query_id)
            return
        subscription = self.subscriptions.pop(query_id, None)
        if subscription is not None:
            subscription.close()

    def serve(self) -> None:
        self.manager.serve(self.server)

    def close(self) -> None:
        self.server.close()


def serve_commands(
    app: DrasiRay, redis_url: str, files: list[str], subscriptions: dict[str, Any]
) -> CommandService:
    """Register the running ``app`` on ``redis_url`` and serve the commands' requests."""
    details = {"files": ", ".join(files), "namespace": app.namespace}
    server = ControlServer(redis_url, app.app_id, details).start()
    return CommandService(app, server, subscriptions)


def _at(resource: Resource) -> str:
    place = resource.position
    return f"{place.file}:{place.line}:{place.column}"


def _spec_of(source: PlatformSource | PostgresSource) -> SourceSpec | PostgresSourceSpec:
    """The source's settings as the YAML schema holds them."""
    common = {
        "id": source.id,
        "auto_start": source.auto_start,
        "dispatch_mode": source.dispatch_mode,
        "dispatch_buffer_capacity": source.dispatch_buffer_capacity,
        "properties": source.config,
    }
    if isinstance(source, PostgresSource):
        return PostgresSourceSpec(kind="PostgreSQL", **common)
    return SourceSpec(**common)


def _source_of(spec: SourceSpec | PostgresSourceSpec) -> PlatformSource | PostgresSource:
    """The source a spec adds."""
    if isinstance(spec, PostgresSourceSpec):
        return PostgresSource.from_spec(spec)
    return PlatformSource.from_spec(spec)


def _source_state(states: list[str], auto_start: bool) -> str:
    if not states:
        return "Stopped" if not auto_start else "Unavailable"
    if all(state == "running" for state in states):
        return "Running"
    return ", ".join(sorted({state.capitalize() for state in states}))


def _app_reaction_row(spec: AnyAppReaction, report: Mapping[str, Any] | None) -> dict[str, Any]:
    """A reaction of the app as ``list`` shows it, from its actor's report."""
    report = report or {}
    queries = sorted(spec.queries or ()) if spec.queries is not None else ["(every query)"]
    state = str(report.get("state", "starting"))
    return {
        "id": spec.id,
        "kind": spec.kind,
        "queries": queries,
        "status": state.capitalize(),
        "delivered": report.get("delivered"),
        "dropped": report.get("dead_lettered"),
        "error": report.get("last_error") or report.get("error"),
        "url": report.get("url"),
    }


def _reaction_row(
    name: str, kind: str, queries: list[str], reports: list[dict[str, Any]], expected: int
) -> dict[str, Any]:
    states = {report.get("state") for report in reports}
    if len(reports) < expected:
        status = "Starting" if not reports else "Partly running"
    elif states == {"running"}:
        status = "Running"
    else:
        status = ", ".join(sorted(str(state).capitalize() for state in states))
    errors = [report["last_error"] for report in reports if report.get("last_error")]
    return {
        "id": name,
        "kind": kind,
        "queries": queries,
        "status": status,
        "delivered": sum(report.get("delivered", 0) for report in reports),
        "dropped": sum(report.get("dropped", 0) for report in reports),
        "error": errors[0] if errors else None,
    }


def _kept_on_apply(reaction: AnyReaction) -> bool:
    """Whether a running query's reaction stays when its ContinuousQuery is applied again:
    a Reaction resource's (named ones; the file's own are the unnamed)."""
    return reaction.name is not None
