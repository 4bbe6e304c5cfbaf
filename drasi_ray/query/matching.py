"""Path solving: the solutions of a MATCH pattern that involve one given element.

A :class:`Pattern` is the conjunction of some path patterns (the comma-separated paths of one
or more MATCH clauses, joined on shared variables) compiled into a small graph of variables:
node variables with their label and predicate constraints, and relation edges between them.
Anonymous nodes and relations get private variable names.

The solver never scans the graph: it starts from already-bound variables (typically the one
element a change touched, see :meth:`Pattern.anchors`) and walks the adjacency indexes of
:class:`~drasi_ray.query.indexes.GraphIndex`, so its cost is proportional to the partial
solutions it explores. A variable no relation connects to a bound one (a disconnected path,
``MATCH (a:A), (b:B)``) is enumerated from the label index: the cost of a cartesian product is
the size of that product.

As in Drasi, one relation may bind several relation variables of a pattern (no openCypher
relationship uniqueness): ``(a)-[:R]->(b)-[:R]->(c)`` matches a single self-loop. A solution is
identified by the tuple of its element ids.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from drasi_ray.model.changes import Element, ElementKind
from drasi_ray.model.errors import UnsupportedQueryError
from drasi_ray.query import ast
from drasi_ray.query.expressions import compile_filter, contains_stateful, referenced_variables
from drasi_ray.query.indexes import GraphIndex

Key: TypeAlias = tuple[Any, ...]
"""Identity of a row: for MATCH solutions, the element id bound to each variable (None = an
optional variable left null); for group rows, the group's key."""

Row: TypeAlias = Mapping[str, Any]
Predicate: TypeAlias = Callable[[Row], bool]
Solution: TypeAlias = tuple[Key, Row]
"""``(key, row)``: the element ids in variable order, and a fresh dict name -> element."""

_NODE = ElementKind.NODE

ANONYMOUS_PREFIX = " anon"
"""Prefix of the private names of anonymous pattern variables (not valid Cypher names)."""


# --------------------------------------------------------------------------- compiled pattern


@dataclass(frozen=True, slots=True)
class Edge:
    """A relation variable connecting two node variables, with the direction as written.

    OUT: ``left`` binds the relation's start and ``right`` its end; IN: the reverse; BOTH:
    either way round.
    """

    relation: int
    left: int
    right: int
    direction: ast.Direction


@dataclass(frozen=True, slots=True)
class GuardedPredicate:
    """A compiled predicate, checked as soon as all the variables it reads are bound."""

    check: Predicate
    variables: frozenset[int]


@dataclass(slots=True)
class Variable:
    """One pattern variable: node or relation, with every constraint written on it."""

    name: str
    is_node: bool
    label_sets: list[frozenset[str]] = field(default_factory=list)

    def accepts(self, element: Element) -> bool:
        """Kind and labels match (predicates are checked separately)."""
        if (element.kind is _NODE) is not self.is_node:
            return False
        labels = element.labels
        # A loop, not all(<generator>): this runs several times per change.
        for required in self.label_sets:  # noqa: SIM110
            if required.isdisjoint(labels):
                return False
        return True


@dataclass(frozen=True, slots=True)
class Step:
    """One binding step of a plan.

    ``kind`` is ``"expand"`` (walk from the bound node ``source`` along ``edge``), ``"ends"``
    (the edge's relation is bound: bind or check its two nodes) or ``"scan"`` (enumerate the
    candidates of node variable ``target``). ``checks`` are the predicates that become
    decidable right after this step. ``walks`` (expand only) says which adjacency lists to
    follow (True = outgoing), decided once when the plan is made.
    """

    kind: str
    edge: Edge | None
    source: int
    target: int
    checks: tuple[GuardedPredicate, ...]
    walks: tuple[bool, ...] = ()


@dataclass(frozen=True, slots=True)
class Plan:
    """How to extend a binding of ``bound`` variables to complete solutions."""

    initial_checks: tuple[GuardedPredicate, ...]
    steps: tuple[Step, ...]


class PatternBuilder:
    """Collects path patterns (from several clauses) into one :class:`Pattern`.

    ``outer_names`` are variables bound outside this pattern (an OPTIONAL MATCH reads the
    variables of the MATCH before it); inline predicates that read them are returned as
    ``late_checks`` of the pattern, to be evaluated on the complete row.

    An inline predicate that calls a stateful function (``(c:Contract WHERE
    drasi.previousDistinctValue(c.status) = 'pending')``) is not a matching constraint: the
    solver evaluates predicates any number of times, and such a function must see each row
    change once. It is left in :attr:`hoisted` for the query part's WHERE, which it joins.
    """

    def __init__(self, parameters: Mapping[str, Any], anonymous_counter: list[int]) -> None:
        self._parameters = parameters
        self._counter = anonymous_counter
        self._variables: list[Variable] = []
        self._index: dict[str, int] = {}
        self._edges: list[Edge] = []
        self._inline_predicates: list[tuple[ast.Expr, str]] = []
        self.hoisted: list[ast.Expr] = []

    def add_clause(self, paths: Sequence[ast.PathPattern]) -> None:
        """Add the paths of one MATCH clause."""
        for path in paths:
            nodes = [self._node(pattern) for pattern in path.nodes]
            for position, pattern in enumerate(path.relations):
                relation = self._relation(pattern)
                edge = Edge(relation, nodes[position], nodes[position + 1], pattern.direction)
                self._edges.append(edge)

    def build(self) -> Pattern:
        names = frozenset(self._index)
        guarded: list[GuardedPredicate] = []
        late: list[Predicate] = []
        for expr, _owner in self._inline_predicates:
            check = compile_filter(expr, self._parameters)
            read = frozenset(referenced_variables(expr))
            if read <= names:
                guarded.append(GuardedPredicate(check, frozenset(self._index[n] for n in read)))
            else:
                late.append(check)
        return Pattern(self._variables, self._edges, guarded, late)

    def _name(self, variable: str | None) -> str:
        if variable is not None:
            return variable
        self._counter[0] += 1
        return f"{ANONYMOUS_PREFIX}{self._counter[0]}"

    def _declare(self, name: str, is_node: bool) -> int:
        position = self._index.get(name)
        if position is None:
            position = len(self._variables)
            self._variables.append(Variable(name, is_node))
            self._index[name] = position
        elif self._variables[position].is_node is not is_node:
            kind = "node" if is_node else "relation"
            raise UnsupportedQueryError(f"variable '{name}' is used as a {kind} and not", 1, 1)
        return position

    def _constrain(
        self,
        position: int,
        labels: tuple[str, ...],
        properties: ast.MapLiteral | None,
        where: ast.Expr | None,
    ) -> None:
        variable = self._variables[position]
        if labels:
            variable.label_sets.append(frozenset(labels))
        subject = ast.Variable(variable.name)
        checks: list[ast.Expr] = []
        if properties is not None:
            for key, value in properties.items:
                access = ast.PropertyAccess(subject, key)
                checks.append(ast.Binary(ast.BinaryOp.EQ, access, value))
        if where is not None:
            checks.append(where)
        predicate = ast.conjunction(checks)
        if predicate is not None and contains_stateful(predicate):
            self.hoisted.append(predicate)
        elif predicate is not None:
            self._inline_predicates.append((predicate, variable.name))

    def _node(self, pattern: ast.NodePattern) -> int:
        position = self._declare(self._name(pattern.variable), True)
        self._constrain(position, pattern.labels, pattern.properties, pattern.where)
        return position

    def _relation(self, pattern: ast.RelationPattern) -> int:
        position = self._declare(self._name(pattern.variable), False)
        self._constrain(position, pattern.labels, pattern.properties, pattern.where)
        return position


# --------------------------------------------------------------------------- the pattern


class Pattern:
    """A compiled conjunctive pattern: variables, edges, guarded predicates.

    ``late_checks`` read variables outside the pattern and are *not* applied by the solver.
    """

    def __init__(
        self,
        variables: list[Variable],
        edges: list[Edge],
        guarded: list[GuardedPredicate],
        late_checks: list[Predicate],
    ) -> None:
        self.variables = tuple(variables)
        self.names = tuple(variable.name for variable in variables)
        self.position = {name: index for index, name in enumerate(self.names)}
        self.edges = tuple(edges)
        self.guarded = tuple(guarded)
        self.late_checks = tuple(late_checks)
        self._plans: dict[frozenset[int], Plan] = {}
        self._anchor_plans: list[Plan | None] = [None] * len(self.variables)
        self._anchors: dict[tuple[ElementKind, tuple[str, ...]], list[int]] = {}

    def __len__(self) -> int:
        return len(self.variables)

    def label_filter(self, nodes: bool) -> frozenset[str] | None:
        """Union of the labels the node (or relation) variables need; None = any element."""
        needed: set[str] = set()
        for variable in self.variables:
            if variable.is_node is not nodes:
                continue
            if not variable.label_sets:
                return None
            for labels in variable.label_sets:
                needed.update(labels)
        return frozenset(needed)

    def anchors(self, element: Element) -> list[int]:
        """The variables ``element`` could bind (kind and labels fit); cached per kind and
        label tuple, since every element of one kind and labels gives the same answer.
        Callers must not mutate the list."""
        shape = (element.kind, element.labels)
        found = self._anchors.get(shape)
        if found is None:
            found = [i for i, variable in enumerate(self.variables) if variable.accepts(element)]
            self._anchors[shape] = found
        return found

    def plan(self, bound: frozenset[int]) -> Plan:
        """The (cached) binding plan that extends a binding of ``bound`` to full solutions."""
        plan = self._plans.get(bound)
        if plan is None:
            plan = _make_plan(self, bound)
            self._plans[bound] = plan
        return plan

    def solve(self, index: GraphIndex, initial: Mapping[int, Element]) -> list[Solution]:
        """Every solution extending ``initial`` (variable position -> element), as
        :data:`Solution` pairs. Initial elements that do not satisfy ``accepts`` (or bind one
        relation twice) give no solution."""
        plan = self.plan(frozenset(initial))
        ids: list[str | None] = [None] * len(self.variables)
        row: dict[str, Any] = {}
        for position, element in initial.items():
            if not self._bind_ok(position, element):
                return []
            ids[position] = element.id
            row[self.names[position]] = element
        return self._complete(index, plan, ids, row)

    def solve_from(self, index: GraphIndex, position: int, element: Element) -> list[Solution]:
        """Every solution binding ``element`` at ``position``, which must be one of
        ``anchors(element)``: the per-change path of :meth:`solve`, with its plan cached per
        position."""
        plan = self._anchor_plans[position]
        if plan is None:
            plan = self._anchor_plans[position] = self.plan(frozenset((position,)))
        ids: list[str | None] = [None] * len(self.variables)
        ids[position] = element.id
        return self._complete(index, plan, ids, {self.names[position]: element})

    def _complete(
        self, index: GraphIndex, plan: Plan, ids: list[str | None], row: dict[str, Any]
    ) -> list[Solution]:
        for guarded in plan.initial_checks:
            if not guarded.check(row):
                return []
        if not plan.steps:
            return [(tuple(ids), row)]
        found: list[Solution] = []
        _Search(self, index, plan.steps, ids, row, found).run(0)
        return found

    def _bind_ok(self, position: int, element: Element) -> bool:
        return self.variables[position].accepts(element)


def _make_plan(pattern: Pattern, bound_in: frozenset[int]) -> Plan:
    """Order the bindings: walk edges from bound nodes, bind ends of bound relations, and
    scan a node only when nothing connects to what is bound."""
    bound = set(bound_in)
    pending = list(pattern.edges)
    raw: list[tuple[str, Edge | None, int, int, frozenset[int]]] = []
    while True:
        step = _next_step(pattern, bound, pending)
        if step is None:
            break
        raw.append(step)
    scheduled: set[int] = set()
    initial = _newly_decidable(pattern, frozenset(bound_in), scheduled)
    steps: list[Step] = []
    seen = set(bound_in)
    for kind, edge, source, target, newly in raw:
        seen |= newly
        checks = _newly_decidable(pattern, frozenset(seen), scheduled)
        walks = () if edge is None else _walks(edge.direction, source == edge.left)
        steps.append(Step(kind, edge, source, target, checks, walks))
    return Plan(initial, tuple(steps))


def _next_step(
    pattern: Pattern, bound: set[int], pending: list[Edge]
) -> tuple[str, Edge | None, int, int, frozenset[int]] | None:
    """Pick the next binding step and mark what it binds; None when everything is bound."""
    for edge in pending:
        if edge.relation in bound:
            pending.remove(edge)
            bound.update((edge.left, edge.right))
            return ("ends", edge, edge.relation, edge.left, frozenset((edge.left, edge.right)))
    for edge in pending:
        for source, target in ((edge.left, edge.right), (edge.right, edge.left)):
            if source in bound:
                pending.remove(edge)
                bound.update((edge.relation, target))
                return ("expand", edge, source, target, frozenset((edge.relation, target)))
    for position, variable in enumerate(pattern.variables):
        if variable.is_node and position not in bound:
            bound.add(position)
            return ("scan", None, position, position, frozenset((position,)))
    return None


def _newly_decidable(
    pattern: Pattern, bound: frozenset[int], scheduled: set[int]
) -> tuple[GuardedPredicate, ...]:
    ready: list[GuardedPredicate] = []
    for number, guarded in enumerate(pattern.guarded):
        if number not in scheduled and guarded.variables <= bound:
            scheduled.add(number)
            ready.append(guarded)
    return tuple(ready)


# --------------------------------------------------------------------------- the search


class _Search:
    """Depth-first execution of a plan over one mutable binding (ids + row).

    Complete solutions are appended to ``found`` (plain recursion, no generators: this is
    the per-change hot path). Every binding a step makes is undone before the next candidate.
    """

    __slots__ = ("_found", "_ids", "_index", "_names", "_row", "_steps", "_variables")

    def __init__(
        self,
        pattern: Pattern,
        index: GraphIndex,
        steps: tuple[Step, ...],
        ids: list[str | None],
        row: dict[str, Any],
        found: list[Solution],
    ) -> None:
        self._variables = pattern.variables
        self._names = pattern.names
        self._index = index
        self._steps = steps
        self._ids = ids
        self._row = row
        self._found = found

    def run(self, depth: int) -> None:
        if depth == len(self._steps):
            self._found.append((tuple(self._ids), dict(self._row)))
            return
        step = self._steps[depth]
        if step.kind == "expand":
            self._expand(step, depth)
        elif step.kind == "ends":
            self._ends(step, depth)
        else:
            self._scan(step, depth)

    def _descend(self, step: Step, depth: int) -> None:
        """Check the predicates ``step`` made decidable, then bind the next step."""
        row = self._row
        for guarded in step.checks:
            if not guarded.check(row):
                return
        self.run(depth + 1)

    def _scan(self, step: Step, depth: int) -> None:
        target = step.target
        variable = self._variables[target]
        if variable.label_sets:
            smallest = min(variable.label_sets, key=len)
            candidates: set[str] = set()
            for label in smallest:
                candidates.update(self._index.nodes_with_label(label))
            ids: Sequence[str] | set[str] = candidates
        else:
            ids = list(self._index.all_nodes())
        for node_id in ids:
            undo: list[int] = []
            if self._bind_node(target, node_id, undo):
                self._descend(step, depth)
            self._unbind(undo)

    def _ends(self, step: Step, depth: int) -> None:
        edge = step.edge
        assert edge is not None
        relation = self._row[self._names[edge.relation]]
        for left, right in _orientations(relation, edge.direction):
            undo: list[int] = []
            if self._bind_node(edge.left, left, undo) and self._bind_node(edge.right, right, undo):
                self._descend(step, depth)
            self._unbind(undo)

    def _expand(self, step: Step, depth: int) -> None:
        edge = step.edge
        assert edge is not None
        index = self._index
        node_id = self._ids[step.source]
        assert node_id is not None
        both = len(step.walks) == 2
        for use_outgoing in step.walks:
            relations = index.outgoing(node_id) if use_outgoing else index.incoming(node_id)
            for relation_id in relations:
                relation = index.element(relation_id)
                assert relation is not None and relation.start_id and relation.end_id
                if both and not use_outgoing and relation.start_id == relation.end_id:
                    continue  # a self-loop matches an undirected edge once (as _orientations)
                other = relation.end_id if use_outgoing else relation.start_id
                undo: list[int] = []
                if self._bind_relation(edge.relation, relation, undo) and self._bind_node(
                    step.target, other, undo
                ):
                    self._descend(step, depth)
                self._unbind(undo)

    def _bind_node(self, position: int, node_id: str, undo: list[int]) -> bool:
        current = self._ids[position]
        if current is not None:
            return current == node_id
        element = self._index.node(node_id)
        if element is None or not self._variables[position].accepts(element):
            return False
        self._ids[position] = node_id
        self._row[self._names[position]] = element
        undo.append(position)
        return True

    def _bind_relation(self, position: int, relation: Element, undo: list[int]) -> bool:
        current = self._ids[position]
        if current is not None:
            return current == relation.id
        if not self._variables[position].accepts(relation):
            return False
        self._ids[position] = relation.id
        self._row[self._names[position]] = relation
        undo.append(position)
        return True

    def _unbind(self, positions: list[int]) -> None:
        for position in positions:
            self._ids[position] = None
            del self._row[self._names[position]]


def _orientations(relation: Element, direction: ast.Direction) -> list[tuple[str, str]]:
    """(left node id, right node id) assignments a bound relation allows."""
    assert relation.start_id is not None and relation.end_id is not None
    start, end = relation.start_id, relation.end_id
    if direction is ast.Direction.OUT:
        return [(start, end)]
    if direction is ast.Direction.IN:
        return [(end, start)]
    return [(start, end)] if start == end else [(start, end), (end, start)]


def _walks(direction: ast.Direction, from_left: bool) -> tuple[bool, ...]:
    """Which adjacency lists to walk (True = outgoing) to follow an edge from one end."""
    if direction is ast.Direction.BOTH:
        return (True, False)
    leaving = (direction is ast.Direction.OUT) is from_left
    return (leaving,)
