"""The clocks Drasi's ``.transaction``, ``.realtime`` and ``.statement`` functions read: the
query's :class:`~drasi_ray.query.evaluation.QueryClock`, set by the engine per change."""

from __future__ import annotations

import time

from drasi_ray.model.changes import ZERO_VERSION, ElementDelta, node
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.query.evaluation import EvaluationContext, QueryClock
from drasi_ray.query.expressions import compile_expression
from tests.query._helpers import evaluate, expression

CLOCKS = (
    "[datetime.transaction().epochMillis, datetime.realtime().epochMillis,"
    " datetime.statement().epochMillis]"
)


def test_outside_a_query_the_clocks_read_the_wall_clock() -> None:
    before = time.time_ns() // 1_000_000
    transaction, realtime, statement = evaluate(CLOCKS)
    after = time.time_ns() // 1_000_000
    assert before <= transaction <= realtime <= statement <= after


def test_a_re_evaluation_at_a_due_time_reads_realtime_apart_from_transaction() -> None:
    """What a scheduled re-evaluation sees: the original change's time and the due time
    (Drasi's clocks of a future); ``.statement`` reads the realtime clock."""
    context = EvaluationContext(clock=QueryClock(transaction_ms=1_000, realtime_ms=5_000))
    clocks = compile_expression(expression(CLOCKS), {}, context)
    assert clocks({}) == [1_000, 5_000, 5_000]
    context.clock = QueryClock.at(7_000)
    assert clocks({}) == [7_000, 7_000, 7_000]


def test_each_change_is_evaluated_at_its_own_time() -> None:
    query = ContinuousQuery("q", f"MATCH (n:T) RETURN n.k AS k, {CLOCKS} AS clocks")
    for k, time_ms in ((1, 1_000), (2, 2_500)):
        element = node(f"n{k}", ["T"], {"k": k}, effective_from=time_ms)
        (diff,) = query.apply(ElementDelta(None, element, ZERO_VERSION, time_ms))
        assert diff["data"]["clocks"] == [time_ms] * 3
