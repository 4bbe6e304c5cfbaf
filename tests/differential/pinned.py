"""Deliberate differences with Drasi that tests of their own pin.

The known differences of tests/differential/known.py are probes with one outcome per engine;
the ones here are pinned by the tests of the features they belong to (past, clock and future
functions, element identity across sources, and a nondeterminism of Drasi's), each running
drasi-lib and drasi_ray and asserting both outputs. This list puts them in
docs/conformance.md; tests/differential/test_conformance_doc.py checks that every test named
here exists, so the document cannot point at a test that is gone.

The scalar function cases where Drasi differs (tests/query/drasi_function_cases.py, a case with
a ``drasi`` outcome) are listed in the document straight from that table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Pinned:
    """One deliberate difference: what Drasi does, what drasi_ray does, and the test that runs
    both (``path::function``, or ``path::function[parameter]``)."""

    id: str
    drasi_does: str
    drasi_ray_does: str
    test: str

    @property
    def path(self) -> str:
        return self.test.split("::", 1)[0]

    @property
    def function(self) -> str:
        return self.test.split("::", 1)[1].split("[", 1)[0]

    @property
    def parameter(self) -> str | None:
        rest = self.test.split("::", 1)[1]
        return rest.split("[", 1)[1].rstrip("]") if "[" in rest else None


_HISTORY = "tests/query/test_history_oracle.py"
_CLOCKS = "tests/query/test_clocks_oracle.py"
_FUTURES = "tests/query/test_future_deviations.py::test_drasi_and_drasi_ray_outputs"

PINNED: tuple[Pinned, ...] = (
    Pinned(
        "past_function_before_row",
        "the row before an update is evaluated again, with the new version already archived: "
        "a row it never emitted",
        "the row it emitted before",
        f"{_HISTORY}::test_rows_before_an_update_are_what_was_emitted",
    ),
    Pinned(
        "past_function_recreated_element",
        "an element deleted and inserted again keeps its old versions in the archive",
        "its history starts again",
        f"{_HISTORY}::test_a_recreated_element_starts_a_new_history",
    ),
    Pinned(
        "past_function_in_aggregate",
        "an aggregate over a value that depends on the history takes back the re-evaluated "
        "value, not the one it was given, so it drifts",
        "takes back what it was given",
        f"{_HISTORY}::test_an_aggregate_over_history_takes_back_what_it_was_given",
    ),
    Pinned(
        "clock_before_row",
        "the before row of an UPDATE or DELETE is evaluated again on its before clock "
        "(`datetime.transaction()`, `.realtime()`): a row it may never have emitted",
        "the row it emitted before",
        f"{_CLOCKS}::test_before_rows_are_what_was_emitted_where_drasi_reevaluates_them",
    ),
    Pinned(
        "future_early_fire",
        "fires every pending re-evaluation of a query as soon as one of them is due",
        "each at its own time",
        f"{_FUTURES}[early_fire]",
    ),
    Pinned(
        "future_previous_state_of_an_insert",
        "re-evaluates a group's previous state without an anchor for an inserted element, so "
        "future functions there give null: an UPDATE shows as an ADD, a later one as a DELETE",
        "UPDATE from the row it emitted",
        f"{_FUTURES}[insert_update_becomes_add]",
    ),
    Pinned(
        "future_lost_delete",
        "a row that a later change takes out of a future function's condition is never deleted",
        "the DELETE",
        f"{_FUTURES}[insert_delete_lost]",
    ),
    Pinned(
        "future_aggregate_in_where",
        "an aggregate inside a WHERE with a future function adds every evaluation's value and "
        "never takes one back",
        "the aggregate follows the rows",
        f"{_FUTURES}[where_aggregate]",
    ),
    Pinned(
        "distinct_integer_float",
        "`coll.distinct` keeps an Integer and an equal Float (`[2, 2.0]`) as two values in most "
        "lists but drops the Float in about 1 list in 100, a different share in each process",
        "keeps both, always",
        "tests/differential/test_distinct_hashing.py"
        "::test_drasi_sometimes_collapses_an_integer_and_an_equal_float_drasi_ray_never",
    ),
    Pinned(
        "join_of_equal_ids_in_two_sources",
        "names a join relation by the two element ids alone, so two links between elements of "
        "equal ids in different sources share a name: one replaces the other (which one varies "
        "from run to run)",
        "one relation per pair of elements (`elementId()` still `a:b`)",
        "tests/differential/test_identity.py::test_two_links_between_equal_ids_of_two_sources",
    ),
    Pinned(
        "relation_cycle",
        "a pattern that closes a cycle of plain relations (a customer placed an order at the "
        "customer's home store) reports two rows when the cycle closes: the right row twice, "
        "or beside it a row for another customer of the store, who did not place the order "
        "(which one varies from run to run; joins in this order: the right row once or twice)",
        "the one row",
        "tests/differential/test_cycles.py"
        "::test_drasi_adds_a_row_too_many_where_a_cycle_closes_and_drasi_ray_does_not",
    ),
)
"""Every difference pinned outside tests/differential, by id."""
