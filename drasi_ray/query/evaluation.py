"""What an expression is evaluated *in*, besides its row: the clock and the row's identity.

Most functions need only their arguments. A few need more, and read it from the
:class:`EvaluationContext` the engine keeps for each query and fills before it evaluates a row:

- the clock (:class:`QueryClock`): the temporal ``.transaction`` and ``.realtime`` variants read
  it, and Drasi's future functions compare due times with it;
- the row's identity and the element whose change is being evaluated (the *anchor*): the
  stateful functions (:mod:`drasi_ray.query.stateful`) keep their state per row or per group and
  schedule re-evaluations of the anchor.

A function that needs the context is registered as *contextual* (see
:class:`drasi_ray.query.functions.FunctionSpec`): its implementation receives the context as its
first argument. Evaluation is single-threaded per query, so one mutable context per query is
enough; nothing outside the engine writes it.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from drasi_ray.model.history import ElementHistory
    from drasi_ray.query.stateful import FunctionState


@dataclass(frozen=True, slots=True)
class QueryClock:
    """The two clocks of one evaluation, in milliseconds since the epoch (Drasi's
    ``InstantQueryClock``).

    ``transaction_ms`` is the time of the change being evaluated (its ``effective_from``), or,
    when a scheduled re-evaluation comes due, the time of the change that scheduled it.
    ``realtime_ms`` is the change's ``effective_from`` too, or the due time of the
    re-evaluation. ``datetime.transaction()`` reads the first, ``datetime.realtime()`` the
    second; so does every comparison of a future function with "now".
    """

    transaction_ms: int
    realtime_ms: int

    @staticmethod
    def at(millis: int) -> QueryClock:
        """Both clocks at ``millis`` (an ordinary change)."""
        return QueryClock(millis, millis)

    @staticmethod
    def wall() -> QueryClock:
        """Both clocks at the current wall-clock time (an expression evaluated outside a
        continuous query)."""
        return QueryClock.at(time.time_ns() // 1_000_000)


class EvaluationMode(enum.Enum):
    """How stateful functions behave during an evaluation.

    ``APPLY``: the normal path; a function reads and updates its state and may schedule a
    re-evaluation. ``REPLAY``: a query actor rebuilding its rows after a restart; a function
    whose arguments are those of its last application returns what it returned then and
    changes nothing, so the rebuilt rows are the rows the query held before (other calls are
    applied: the change reached the store while the query was down). ``SNAPSHOT``: a look
    that must change nothing (the identity row of a new group): a function returns what it
    last returned for the row, or null if it never ran for it.
    """

    APPLY = "apply"
    REPLAY = "replay"
    SNAPSHOT = "snapshot"


class EvaluationContext:
    """The engine's register for the row being evaluated (one per query).

    ``clock``: see :class:`QueryClock`. ``before_clock``: the clock a row is evaluated at as it
    was before the change (Drasi's: the changed element's previous time as transaction time and
    the change's realtime; for a due re-evaluation, the element's time on both). ``anchor_id``:
    the id of the element whose change (or due re-evaluation) is being evaluated, None when there
    is none. ``row_key``: the identity of the row at the query part being evaluated (a MATCH
    row's element ids, or a group's key).
    ``result_key``: where per-row state lives: the grouping values of an aggregating part,
    else ``row_key`` (Drasi's result key). ``state``: the query's stateful-function state, None
    outside a continuous query. ``calls``: the stateful call sites compiled against it;
    ``reads_clock``: whether a compiled contextual function reads the clock (so the engine
    sets it for every change). ``reprocessing``: a scheduled re-evaluation is running (Drasi's
    future re-processing: rows go through every part even when nothing in them changed).
    ``history``: the element history of a query that calls Drasi's past functions
    (:mod:`drasi_ray.query.past`), None for any other.
    """

    __slots__ = (
        "anchor_id",
        "before_clock",
        "calls",
        "clock",
        "history",
        "mode",
        "reads_clock",
        "reprocessing",
        "result_key",
        "row_key",
        "state",
    )

    def __init__(self, state: FunctionState | None = None, clock: QueryClock | None = None) -> None:
        self.clock: QueryClock = clock or QueryClock.wall()
        self.before_clock: QueryClock = self.clock
        self.mode = EvaluationMode.APPLY
        self.anchor_id: str | None = None
        self.row_key: Any = None
        self.result_key: Any = None
        self.state = state
        self.calls: list[Any] = []
        self.reads_clock = False
        self.reprocessing = False
        self.history: ElementHistory | None = None

    def register(self, call: Any) -> int:
        """Number a stateful call site as it is compiled. Sites are numbered in compile order,
        which depends only on the query text: the numbers name persisted state."""
        self.calls.append(call)
        return len(self.calls) - 1

    def at_row(self, row_key: Any, result_key: Any = None) -> None:
        """Point the context at one row (its result key defaults to the row key)."""
        self.row_key = row_key
        self.result_key = row_key if result_key is None else result_key
