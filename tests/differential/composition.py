"""Query chaining's composition check (issue #33): a chained query equals its composition.

A *pair* is an upstream query ``u`` and a downstream query ``d`` that reads ``u``'s results
(``.from_query(u)``), both drawn from the differential catalogue (tests/differential/
catalogue.py, catalogue_sources.py for joins and middleware, and :data:`FUTURE_QUERIES` for
Drasi's future and stateful functions, which the catalogue leaves out: drasi-lib runs them on
its wall clock). ``d`` is a catalogue query over single nodes whose labels are rewritten to
``u``'s id (:func:`chained_text`) and that reads at least one of ``u``'s columns.

The check: over a random change stream (tests/differential/generator.py) the downstream's
final result set through the chain equals ``d`` run over a graph built from ``u``'s final
result set (:func:`oracle_results`: a node per row, named by its row id); and along the way
every diff ``d`` emits is consistent with its result set (:class:`ResultReplay`: the diffs
applied in order to an empty result set give the result set after each change). The in-process
run (:class:`InProcessChain`) also checks, after every change, that the chain's rows are the
upstream's current result set by row id and that the downstream's store of the chain source
holds exactly those nodes.

Where Drasi's incremental results legitimately depend on the order rows came (the order of a
``collect`` list), the aggregate columns' lists are compared as multisets; downstreams whose
result depends on history (``retainHistory``) or on the nodes' times (``drasi.changeDateTime``,
the query clocks) are not drawn: a graph built from a final result set has neither.
"""

from __future__ import annotations

import dataclasses
import functools
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from drasi_ray.model.encoding import dumps
from drasi_ray.model.errors import QuerySyntaxError
from drasi_ray.model.identity import graph_element
from drasi_ray.model.query_specs import QueryJoin, QueryLanguage
from drasi_ray.model.results import QueryResult
from drasi_ray.query import ast
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.query.expressions import contains_aggregate
from drasi_ray.reactions.chain import NodeChange, RowLedger, entry_payloads
from drasi_ray.testing.conformance import values_equal
from tests.differential.catalogue import CATALOGUE
from tests.differential.catalogue_gql import GQL_CATALOGUE
from tests.differential.catalogue_sources import SOURCES_CATALOGUE
from tests.differential.subject import DrasiRaySubject, as_users_read
from tests.oracle.cases import run_oracle
from tests.oracle.model import Case, GraphChange, Op, QueryRun, QuerySpec

Row = dict[str, Any]

UPSTREAM_PREFIX = "u_"
"""Upstream query ids are the catalogue's with this prefix (their chained nodes' label)."""

FUTURE_QUERIES: tuple[QuerySpec, ...] = (
    QuerySpec(
        "true_for",
        "MATCH (a:A) WHERE drasi.trueFor(a.flag = true, duration({seconds: 3})) "
        "RETURN a.name AS name, a.x AS x, a.flag AS flag",
    ),
    QuerySpec(
        "true_for_grouped",
        "MATCH (a:A) WHERE drasi.trueFor(a.x > 1, duration({seconds: 4})) "
        "RETURN a.flag AS flag, count(a) AS n, sum(a.x) AS total",
    ),
    QuerySpec(
        "true_later",
        "MATCH (b:B) WHERE drasi.trueLater(b.y > 0, b.ts * 1000) "
        "RETURN b.name AS name, b.y AS y, b.s AS s",
    ),
    QuerySpec(
        "true_until",
        "MATCH (c:C) WHERE drasi.trueUntil(c.x > 0, c.ts * 1000 - 86400000) "
        "RETURN c.name AS name, c.x AS x",
    ),
    QuerySpec(
        "previous_value",
        "MATCH (c:C) RETURN c.name AS name, c.x AS x, drasi.previousValue(c.x) AS y",
    ),
    QuerySpec(
        "sliding_window",
        "MATCH (a:A) RETURN a.flag AS flag, "
        "drasi.slidingWindow(duration({seconds: 10}), count(a)) AS n",
    ),
)
"""Upstreams with Drasi's future and stateful functions: rows that appear (or leave) when a
re-evaluation comes due, not with a change."""

UNDRAWN_DOWNSTREAMS = frozenset(
    {
        "change_date_time",
        "max_change_time",
        "transaction_clock",
        "retain_history",
        "aggregating_with",
    }
)
"""Catalogue queries not drawn as downstreams: their results depend on the nodes' times or on
history, which a graph built from a final result set does not have. ``aggregating_with``
too: its WITH groups by an ``avg``, and Drasi takes a group whose row reads as its identity
row (an average of 0.0) after a row left it for an emptied group, and deletes the row it fed
(``_Signatures`` in drasi_ray/query/parts.py), so a group that came to 0.0 through changes is
gone where a graph built from the final rows has it."""

_LABEL = re.compile(r":[ABC]\b")
_PROPERTY = re.compile(r"\b([a-z]\w*)\.(\w+)")
_NAMESPACES = frozenset(
    {"coll", "drasi", "date", "datetime", "localdatetime", "localtime", "time", "duration"}
)
"""Function namespaces (``coll.distinct``): not a variable's property."""


@dataclass(frozen=True, slots=True)
class Pair:
    """An upstream query and a downstream query that reads its results."""

    upstream: QuerySpec
    downstream: QuerySpec
    kinds: frozenset[str]
    """What the upstream is: ``aggregating``, ``with``, ``optional``, ``future``, ``join``,
    ``middleware`` (any of them), else ``plain``."""


def upstream_specs(gql: bool = False) -> tuple[QuerySpec, ...]:
    """Every query that can be an upstream, with its upstream id (``gql``: the GQL catalogue's
    too, ids ``u_gql_...``)."""
    specs = CATALOGUE + SOURCES_CATALOGUE + FUTURE_QUERIES
    cypher = tuple(dataclasses.replace(s, id=UPSTREAM_PREFIX + s.id) for s in specs)
    if not gql:
        return cypher
    return cypher + tuple(
        dataclasses.replace(s, id=f"{UPSTREAM_PREFIX}gql_{s.id}") for s in GQL_CATALOGUE
    )


@dataclass(frozen=True, slots=True)
class _Facts:
    columns: tuple[str, ...]
    aggregate_columns: frozenset[str]
    kinds: frozenset[str]
    single_nodes: bool
    """Whether the required MATCH patterns are single nodes."""


@functools.cache
def _facts(text: str, language: str = "cypher") -> _Facts:
    """What the composition check reads of a query text (parsed once)."""
    engine = ContinuousQuery("q", text, language=QueryLanguage(language))
    parts = engine.query.parts
    items = engine.query.returns.items
    found = {
        "aggregating": any(_aggregates(part.projection) for part in parts),
        "with": len(parts) > 1,
        "optional": any(match.optional for match in parts[0].matches),
        "future": engine.stateful,
    }
    required = [match for match in parts[0].matches if not match.optional]
    return _Facts(
        engine.column_names,
        frozenset(item.name for item in items if contains_aggregate(item.expression)),
        frozenset(kind for kind, present in found.items() if present),
        all(not path.relations for match in required for path in match.paths),
    )


def kinds_of(spec: QuerySpec) -> frozenset[str]:
    """What kind of upstream ``spec`` is (:attr:`Pair.kinds`)."""
    kinds = set(_facts(spec.text, spec.language).kinds)
    if spec.language != "cypher":
        kinds.add(spec.language)
    if spec.joins:
        kinds.add("join")
    if any(spec.pipelines.values()):
        kinds.add("middleware")
    return frozenset(kinds) or frozenset({"plain"})


def _aggregates(projection: ast.Projection) -> bool:
    return any(contains_aggregate(item.expression) for item in projection.items)


@functools.cache
def downstream_specs() -> dict[str, QuerySpec]:
    """The catalogue queries that can read a chained query: their required MATCH patterns
    are single nodes (a chain holds nodes only), and they are not in
    :data:`UNDRAWN_DOWNSTREAMS`."""
    return {
        spec.id: spec
        for spec in CATALOGUE
        if spec.id not in UNDRAWN_DOWNSTREAMS and _facts(spec.text).single_nodes
    }


def chained_text(text: str, upstream_id: str, columns: Mapping[str, str] | None = None) -> str:
    """``text`` reading ``upstream_id``'s rows: its labels ``A``, ``B``, ``C`` become the
    upstream's id, and each property it reads becomes the column ``columns`` maps it to."""
    mapping = columns or {}

    def column(match: re.Match[str]) -> str:
        subject, name = match.group(1), match.group(2)
        if subject in _NAMESPACES:
            return match.group(0)
        mapped = mapping.get(name, name)
        return f"{subject}.{mapped}" if mapped == name else f"{subject}.`{mapped}`"

    return _PROPERTY.sub(column, _LABEL.sub(":" + upstream_id, text))


def columns_of(spec: QuerySpec) -> frozenset[str]:
    return frozenset(_facts(spec.text, spec.language).columns)


def properties_read(spec: QuerySpec) -> frozenset[str]:
    """The property names ``spec`` reads (every ``v.name`` in its text)."""
    return frozenset(
        name for subject, name in _PROPERTY.findall(spec.text) if subject not in _NAMESPACES
    )


def draw_pairs(seed: int, per_upstream: int = 2, gql: bool = False) -> list[Pair]:
    """For every upstream (``gql``: GQL ones too), ``per_upstream`` downstreams drawn at
    random, each reading the upstream's columns (:func:`chained_downstream`)."""
    rng = random.Random(seed)
    downstream_ids = sorted(downstream_specs())
    pairs: list[Pair] = []
    for upstream in upstream_specs(gql):
        kinds = kinds_of(upstream)
        drawn: list[QuerySpec] = []
        for down_id in rng.sample(downstream_ids, len(downstream_ids)):
            try:
                drawn.append(chained_downstream(upstream, down_id, rng))
            except QuerySyntaxError:  # the mapping made two columns of one name
                continue
            if len(drawn) == per_upstream:
                break
        pairs.extend(Pair(upstream, downstream, kinds) for downstream in drawn)
    return pairs


def chained_downstream(upstream: QuerySpec, downstream_id: str, rng: random.Random) -> QuerySpec:
    """Catalogue query ``downstream_id`` reading ``upstream``'s rows: the properties it reads
    that are not columns of the upstream are mapped to its other columns, drawn at random
    (each once while there are columns left). Raises QuerySyntaxError if the text made so is
    not a valid query."""
    downstream = downstream_specs()[downstream_id]
    columns = sorted(columns_of(upstream))
    read = sorted(properties_read(downstream))
    spare = [column for column in columns if column not in read]
    rng.shuffle(spare)
    mapping = {}
    for name in read:
        if name not in columns:
            mapping[name] = spare.pop() if spare else rng.choice(columns)
    text = chained_text(downstream.text, upstream.id, mapping)
    _facts(text)  # parses it
    query_id = f"d_{upstream.id[len(UPSTREAM_PREFIX) :]}__{downstream_id}"
    return QuerySpec(query_id, text, sources=(upstream.id,))


# ------------------------------------------------------------------------- the oracle


def oracle_results(downstream: QuerySpec, rows: Mapping[str, Mapping[str, Row]]) -> list[Row]:
    """``downstream`` run in process over a graph built from the result sets of the queries it
    reads (``rows``: query id -> row id -> row): a node per row (id: the row id, label: the
    query's id, properties: the row's columns), read through the platform decoder and a store
    shard as any source's nodes are, and loaded whole (a bootstrap, with the downstream's
    joins)."""
    subject = DrasiRaySubject([])
    for source, held in rows.items():
        changes = [NodeChange("i", node_id, row, 0) for node_id, row in held.items()]
        for number, payload in enumerate(entry_payloads(source, changes)):
            subject.apply_payload(f"{number + 1}-0", payload, source)
    several = len(set(downstream.sources)) > 1
    elements = [
        graph_element(source, element) if several else element
        for source in downstream.sources
        for element in subject.shard.store(source).elements()
    ]
    joins = [QueryJoin.model_validate(join) for join in downstream.joins]
    engine = ContinuousQuery(downstream.id, downstream.text, joins=joins)
    engine.bootstrap(elements)
    found: list[Row] = as_users_read(engine.results())
    return found


def mismatches(downstream: QuerySpec, expected: Sequence[Row], actual: Sequence[Row]) -> str:
    """What differs between the oracle's result set of ``downstream`` and the chain's (empty:
    nothing). Rows compare exactly (types included), the lists of aggregate columns as
    multisets (a ``collect`` follows the order its rows came in). The chain's result set may
    hold more groups at their identity values: a group emptied along the way stays, as in
    Drasi, where a graph built from the final rows never had it."""
    unordered = aggregate_columns(downstream)
    want = Counter(_canonical(row, unordered) for row in expected)
    got = Counter(
        _canonical(row, unordered)
        for row in actual
        if not (unordered and _emptied(row, unordered)) or _canonical(row, unordered) in want
    )
    return _differences(downstream.id, want, got)


def row_mismatches(query_id: str, expected: Sequence[Row], actual: Sequence[Row]) -> str:
    """What differs between two result sets that must be equal row for row (types and list
    orders included), as multisets (empty: nothing)."""
    want = Counter(_canonical(row, frozenset()) for row in expected)
    got = Counter(_canonical(row, frozenset()) for row in actual)
    return _differences(query_id, want, got)


def _differences(query_id: str, want: Counter[bytes], got: Counter[bytes]) -> str:
    if want == got:
        return ""
    missing = list((want - got).elements())[:5]
    extra = list((got - want).elements())[:5]
    return f"{query_id}: missing {missing}, extra {extra}"


def _emptied(row: Row, aggregates: frozenset[str]) -> bool:
    """Whether every aggregate column of ``row`` reads as an empty group's (0, null, [])."""
    return all(row.get(name) in (0, None, []) for name in aggregates)


def aggregate_columns(spec: QuerySpec) -> frozenset[str]:
    """The RETURN columns of ``spec`` that hold an aggregate."""
    return _facts(spec.text).aggregate_columns


def _canonical(row: Row, aggregates: frozenset[str]) -> bytes:
    """``row`` as compared. In a row of an aggregation numbers are compared by value (a group
    shows the grouping value of the row that opened it, ``2`` or ``2.0``, and the row of a
    group a row just left reads ``min`` and ``max`` back as Drasi does: Integers), and the
    lists of aggregate columns as multisets."""
    if not aggregates:
        return dumps(row, sort_keys=True)
    shown = {name: _by_value(value, sort=name in aggregates) for name, value in row.items()}
    return dumps(shown, sort_keys=True)


def _by_value(value: Any, sort: bool) -> Any:
    if isinstance(value, list):
        items = [_by_value(item, sort) for item in value]
        return sorted(items, key=lambda v: dumps(v, sort_keys=True)) if sort else items
    if isinstance(value, dict):
        return {key: _by_value(item, sort) for key, item in value.items()}
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**53:
        return float(value)
    return value


class ResultReplay:
    """A query's result set rebuilt from its diffs alone, checking each diff against it: a
    DELETE or an UPDATE names a row there is (numbers by value), an aggregation updates its
    group's row (found by the grouping columns) or adds it. An aggregation's ``before`` is not
    compared: Drasi reads ``min`` and ``max`` back there in its own way (docs/semantics.md)."""

    def __init__(self, query_id: str, grouping: Sequence[str]) -> None:
        self.query_id = query_id
        self.grouping = tuple(grouping)
        self.rows: list[Row] = []
        self.errors: list[str] = []

    def apply(self, diffs: Iterable[Mapping[str, Any]]) -> None:
        for diff in diffs:
            kind = diff["type"]
            if kind == "ADD":
                self.rows.append(diff["data"])
            elif kind == "DELETE":
                self._take(diff["data"], diff)
            elif kind == "UPDATE":
                self._take(diff["before"], diff)
                self.rows.append(diff["after"])
            else:
                self._group(diff)

    def _take(self, row: Row, diff: Mapping[str, Any]) -> None:
        index = next((i for i, held in enumerate(self.rows) if values_equal(held, row)), None)
        if index is None:
            self.errors.append(f"{self.query_id}: {diff} names a row the results do not hold")
        else:
            self.rows.pop(index)

    def _group(self, diff: Mapping[str, Any]) -> None:
        after = diff["after"]
        key = [after.get(name) for name in self.grouping]
        for index, held in enumerate(self.rows):
            if values_equal([held.get(name) for name in self.grouping], key):
                self.rows[index] = after
                return
        self.rows.append(after)

    def mismatch(self, results: Sequence[Row]) -> str:
        """Empty if the rebuilt result set is ``results`` (numbers by value)."""
        unmatched = list(results)
        for row in self.rows:
            index = next((i for i, got in enumerate(unmatched) if values_equal(row, got)), None)
            if index is None:
                return f"{self.query_id}: diffs give {row}, the results do not hold it"
            unmatched.pop(index)
        if unmatched:
            return f"{self.query_id}: the results hold {unmatched[0]}, no diff gave it"
        return ""


def replay_of(spec: QuerySpec) -> ResultReplay:
    """An empty :class:`ResultReplay` of query ``spec``."""
    facts = _facts(spec.text)
    grouping = [name for name in facts.columns if name not in facts.aggregate_columns]
    return ResultReplay(spec.id, grouping)


def diffs_of(results: Iterable[Any]) -> list[dict[str, Any]]:
    """The diffs of delivered items (control signals skipped), in order."""
    return [diff for item in results if isinstance(item, QueryResult) for diff in item.results]


# ------------------------------------------------------------------------- in process


@dataclass(slots=True)
class ChainReport:
    """What an in-process run did and found."""

    changes: int = 0
    node_changes: int = 0
    chain_entries: int = 0
    restarts: int = 0
    downstream_diffs: int = 0
    history_dependent: list[str] = field(default_factory=list)
    """Downstreams that differ from their composition where Drasi, run over the same node
    changes, gives what the chain gave (:func:`judge`)."""
    errors: list[str] = field(default_factory=list)


class InProcessChain:
    """Pairs run in process along the app's path: the upstreams on the decoder, a store shard's
    core and their engines; each upstream's row changes through a :class:`RowLedger` into chain
    stream entries (:func:`entry_payloads`), which go through the decoder and a store shard's
    core of their own to the downstreams' engines. Due re-evaluations fire at the time of the
    change that reaches them (and all of them after the last change); ``restarts`` upstreams
    are rebuilt mid-stream from the store, as a restarted host rebuilds them, and their chain
    reconciled."""

    END_MS = 10 * 86_400_000
    """How far past the last change the clock moves at the end (every due re-evaluation)."""

    def __init__(self, pairs: Sequence[Pair]) -> None:
        self.pairs = list(pairs)
        specs = {pair.upstream.id: pair.upstream for pair in pairs}
        self.specs = specs
        self.upstream = DrasiRaySubject(list(specs.values()))
        for engine in self.upstream.engines.values():
            engine.track_rows()
        self.downstream = DrasiRaySubject([pair.downstream for pair in pairs])
        self.ledgers = {query_id: RowLedger(query_id, {}) for query_id in specs}
        self.replays = {pair.downstream.id: replay_of(pair.downstream) for pair in pairs}
        self._entries: Counter[str] = Counter()
        self.carried: dict[str, list[NodeChange]] = {query_id: [] for query_id in specs}
        """Every node change each chain carried, in order."""
        self.report = ChainReport()
        problems = {**self.upstream.refused, **self.downstream.refused}
        assert not problems, problems

    def run(self, case: Case, restarts: int = 0, seed: int = 0) -> ChainReport:
        rng = random.Random(seed)
        points = set(rng.sample(range(len(case.changes)), min(restarts, len(case.changes))))
        for position, change in enumerate(case.changes):
            self._fire_due(change.effective_from)
            self.upstream.apply(position, change.platform_event(), change.source)
            for query_id, engine in self.upstream.engines.items():
                self._publish(query_id, engine.take_row_changes(), change.effective_from)
            if position in points:
                self._restart(rng.choice(sorted(self._restartable())), change.effective_from)
            self.report.changes += 1
            self._check(f"change {position}")
        if case.changes:
            self._fire_due(case.changes[-1].effective_from + self.END_MS)
        self._check("the end")
        self._compare()
        return self.report

    def _fire_due(self, now_ms: int) -> None:
        for query_id, engine in self.upstream.engines.items():
            if engine.stateful:
                engine.fire_due_timed(now_ms, after_each=self._publisher(query_id, engine))

    def _publisher(self, query_id: str, engine: ContinuousQuery) -> Callable[[int], None]:
        """Publishes the rows ``engine`` changed, at a due time."""

        def publish(due_ms: int) -> None:
            self._publish(query_id, engine.take_row_changes(), due_ms)

        return publish

    def _publish(self, query_id: str, changes: Mapping[str, Row | None], time_ms: int) -> None:
        plan = self.ledgers[query_id].plan_changes([(changes, time_ms)])
        self._write(query_id, plan.changes)

    def _write(self, query_id: str, changes: Sequence[Any]) -> None:
        if not changes:
            return
        self.carried[query_id].extend(changes)
        self.report.node_changes += len(changes)
        for payload in entry_payloads(query_id, changes):
            self._entries[query_id] += 1
            self.report.chain_entries += 1
            entry_id = f"{self._entries[query_id]}-0"
            for down_id, diffs in self.downstream.apply_payload(
                entry_id, payload, query_id
            ).items():
                self.report.downstream_diffs += len(diffs)
                self.replays[down_id].apply(diffs)

    def _restartable(self) -> list[str]:
        """Upstreams a host restart rebuilds from the store alone (no pipeline to re-run)."""
        return [q for q, spec in self.specs.items() if not any(spec.pipelines.values())]

    def _restart(self, query_id: str, time_ms: int) -> None:
        """Rebuild ``query_id``'s engine from the store (its function state kept, as a
        restarted query reloads it), reload its ledger as a restarted publisher reads the
        hash, and reconcile."""
        spec = self.specs[query_id]
        old = self.upstream.engines[query_id]
        state = old.state
        state.restored = True
        joins = [j for j in old.joins]
        language = QueryLanguage(spec.language)
        engine = ContinuousQuery(query_id, spec.text, joins=joins, state=state, language=language)
        engine.track_rows()
        engine.bootstrap(self.upstream.shard.snapshot(query_id, spec.sources))
        self.upstream.engines[query_id] = engine
        held = self.ledgers[query_id]
        ledger = self.ledgers[query_id] = RowLedger(query_id, held.contents())
        plan = ledger.plan_reconcile(engine.results_by_id(), time_ms)
        self._write(query_id, plan.changes)
        self.report.restarts += 1

    def _check(self, when: str) -> None:
        errors = self.report.errors
        for query_id, engine in self.upstream.engines.items():
            current = as_users_read(engine.results_by_id())
            if len(current) != len(engine.results()):
                errors.append(f"{when}: {query_id}: two rows share a row id")
            if self.ledgers[query_id].rows() != current:
                errors.append(f"{when}: {query_id}: the chain does not hold the results")
            stored = {
                element.id: as_users_read(dict(element.properties))
                for element in self.downstream.shard.store(query_id).elements()
            }
            if stored != current:
                errors.append(f"{when}: {query_id}: the chain source's store differs")
        for down_id, replay in self.replays.items():
            problem = replay.mismatch(self.downstream.results(down_id))
            if problem:
                errors.append(f"{when}: {problem}")
            errors.extend(f"{when}: {error}" for error in replay.errors)
            replay.errors.clear()

    def _compare(self) -> None:
        for pair in self.pairs:
            up, down = pair.upstream.id, pair.downstream
            rows = as_users_read(self.upstream.engines[up].results_by_id())
            actual = self.downstream.results(down.id)
            verdict = judge(
                down, {up: rows}, actual, functools.partial(self.carried.__getitem__, up)
            )
            if verdict == HISTORY:
                self.report.history_dependent.append(down.id)
            elif verdict:
                self.report.errors.append(f"composition: {verdict}")


HISTORY = "history"
"""What :func:`judge` returns for a downstream whose result owes to Drasi's history."""


def judge(
    downstream: QuerySpec,
    rows: Mapping[str, Mapping[str, Row]],
    actual: Sequence[Row],
    carried: Callable[[], Sequence[NodeChange]],
) -> str:
    """Whether ``actual``, a downstream's result set through the chain, is right: empty if it
    equals the downstream run over a graph built from its upstream's ``rows``
    (:func:`oracle_results`); :data:`HISTORY` if not, but Drasi's own engine (drasi-lib), run
    with the downstream over the node changes the chain ``carried``, gives the same (Drasi's
    results owe to their history in ways a final graph cannot show: an aggregate that keeps
    an ``Integer`` when told to take back the equal ``Float``, and the like), provided the
    changes compose to the rows (:func:`compose`); else what differs, with Drasi's result."""
    problem = mismatches(downstream, oracle_results(downstream, rows), actual)
    if not problem:
        return ""
    changes = carried()
    (source,) = downstream.sources
    composed = row_mismatches(source, list(rows[source].values()), list(compose(changes).values()))
    if composed or compose(changes).keys() != rows[source].keys():
        return f"{problem}; the chain's changes do not compose to its rows: {composed}"
    drasi = drasi_over(downstream, changes)
    if drasi.failure is None and not mismatches(downstream, drasi.results or [], actual):
        return HISTORY
    return f"{problem}; Drasi over the chain's changes: {drasi.failure or drasi.results}"


_GRAPH_OPS: Mapping[str, Op] = {"i": "insert", "u": "update", "d": "delete"}


def compose(changes: Iterable[NodeChange]) -> dict[str, Row]:
    """The nodes a chain's changes leave, applied in order as a source's store applies them
    (an insert puts a node, an update merges its properties in, a delete removes it)."""
    nodes: dict[str, Row] = {}
    for change in changes:
        if change.op == "d":
            nodes.pop(change.node_id, None)
        elif change.op == "u":
            nodes[change.node_id] = {**nodes.get(change.node_id, {}), **change.row}
        else:
            nodes[change.node_id] = dict(change.row)
    return nodes


def drasi_over(downstream: QuerySpec, changes: Sequence[NodeChange]) -> QueryRun:
    """drasi-lib's run of a downstream of one upstream over the node changes its chain
    carried (each a change of a node labelled with the upstream's id, at its time)."""
    (source,) = downstream.sources
    graph = tuple(
        GraphChange(
            _GRAPH_OPS[change.op],
            change.node_id,
            (source,),
            {} if change.op == "d" else dict(change.row),
            change.time_ms,
            source=source,
        )
        for change in changes
    )
    run: QueryRun = run_oracle([Case("chain", graph)], [downstream])["chain"].queries[downstream.id]
    return run


def carried_changes(entries: Iterable[tuple[Any, Mapping[bytes, bytes]]]) -> list[NodeChange]:
    """The node changes of a chain stream's entries (as ``XRANGE`` returns them), in order."""
    changes: list[NodeChange] = []
    for _entry_id, fields in entries:
        for event in orjson.loads(fields[b"data"])["data"]:
            payload = event["payload"]
            element = payload["before" if event["op"] == "d" else "after"]
            time_ms = payload["source"]["ts_ns"] // 1_000_000
            row = element.get("properties") or {}
            changes.append(NodeChange(event["op"], element["id"], row, time_ms))
    return changes


def upstream_rows(rows_hash: Mapping[bytes, bytes]) -> dict[str, Row]:
    """A chain's rows hash as read from Redis (node id -> row)."""
    return {key.decode(): orjson.loads(value) for key, value in rows_hash.items()}
