"""What flows between query parts: one row's change, in the four shapes Drasi's evaluator uses.

A change to the graph reaches the query as the changes of its MATCH rows (one per *solution*,
in Drasi's word). Each goes through the query parts on its own, as in Drasi
(drasi-core ``QueryPartEvaluator``), which is what makes the diffs Drasi's: a WITH group fed
by two rows whose shared node changed is updated once per row, so a part after it sees (and
reports) two updates.

- :attr:`Kind.ADDING` / :attr:`Kind.REMOVING` / :attr:`Kind.UPDATING`: a row appeared,
  disappeared or changed. A projecting part (no aggregate) makes them of its rows.
- :attr:`Kind.AGGREGATION`: a group's row went from ``before`` to ``after``. An aggregating
  part makes only these; ``default_before`` says ``before`` is the group as it was before a
  new row joined it (its identity values when new), ``default_after`` that the change took a
  row out of the group.

Keys identify rows in a part's state: ``old_key`` the row before the change, ``new_key`` after
(MATCH rows by the ids their variables bind; a group's row by its group key). ``before`` is
the row's content before the change where the part cannot read it from its own state (a
group's row, or the null row of an OPTIONAL MATCH that a match replaces).

Two flags carry Drasi's OPTIONAL MATCH bookkeeping (see :mod:`drasi_ray.query.solutions`):
``phantom`` marks a diff about a row that is not a result row (Drasi reports the loss of one
of several matches as an update to the null row, which does not come back), ``silent`` a row
that changes without Drasi reporting it (the null row an update brings back).
"""

from __future__ import annotations

import enum
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, TypeAlias

from drasi_ray.query.values import same_values

Key: TypeAlias = tuple[Any, ...]
Row: TypeAlias = dict[str, Any]
Diff: TypeAlias = dict[str, Any]


class Kind(enum.Enum):
    ADDING = "ADD"
    UPDATING = "UPDATE"
    REMOVING = "DELETE"
    AGGREGATION = "aggregation"


ADDING, UPDATING, REMOVING = Kind.ADDING, Kind.UPDATING, Kind.REMOVING
"""The kinds as module globals, for the code run per row change: reading a member off its
enum class costs about nine times a global read in CPython 3.11."""


@dataclass(slots=True)
class Context:
    """One row's change on its way through the parts (see the module docstring)."""

    kind: Kind
    old_key: Key | None = None
    new_key: Key | None = None
    before: Any = None
    after: Any = None
    default_before: bool = False
    default_after: bool = False
    phantom: bool = False
    silent: bool = False


def adding(key: Key | None, after: Any, source: Context) -> Context:
    """An ADDING context for the next part, keeping ``source``'s OPTIONAL MATCH flags."""
    phantom, silent = source.phantom, source.silent
    return Context(ADDING, None, key, None, after, phantom=phantom, silent=silent)


def removing(key: Key | None, before: Any, source: Context) -> Context:
    return Context(REMOVING, key, None, before, None, silent=source.silent)


def updating(old: Key | None, new: Key | None, before: Any, after: Any, source: Context) -> Context:
    return Context(UPDATING, old, new, before, after, phantom=source.phantom, silent=source.silent)


def aggregation(
    old: Key | None,
    new: Key,
    before: Any,
    after: Any,
    default_before: bool = False,
    default_after: bool = False,
) -> Context:
    return Context(Kind.AGGREGATION, old, new, before, after, default_before, default_after)


def added(row: Any) -> Diff:
    return {"type": "ADD", "data": row}


def deleted(row: Any) -> Diff:
    return {"type": "DELETE", "data": row}


def updated(before: Any, after: Any) -> Diff:
    return {"type": "UPDATE", "before": before, "after": after}


class Collector:
    """Turns the last part's contexts of one graph change into result diffs, as Drasi does
    at the end of a change: an update that changed nothing is dropped, and so is an
    aggregation whose ``before`` equals its ``after`` unless a new row joined the group; the
    aggregations of one group collapse to the first ``before`` and the last ``after``, after
    the other diffs."""

    __slots__ = ("_groups", "_kept", "_plain")

    def __init__(self) -> None:
        self._plain: list[Diff] = []
        self._kept: list[Context] = []
        self._groups: dict[Hashable, Context] = {}

    def add(self, context: Context) -> None:
        kind = context.kind
        if context.silent:
            self._kept.append(context)
        elif kind is ADDING:
            self._keep(context, added(context.after))
        elif kind is REMOVING:
            self._keep(context, deleted(context.before))
        elif kind is UPDATING:
            if not same_values(context.before, context.after):
                self._keep(context, updated(context.before, context.after))
            elif context.old_key != context.new_key:
                self._kept.append(context)  # not reported, but another row replaced this one
        else:
            self._add_aggregation(context)

    def _keep(self, context: Context, diff: Diff) -> None:
        self._kept.append(context)
        self._plain.append(diff)

    def kept(self) -> list[Context]:
        """The contexts the diffs report, and the silent ones: what changes the result set."""
        if not self._groups:
            return self._kept
        return self._kept + list(self._groups.values())

    def _add_aggregation(self, context: Context) -> None:
        before = context.before
        unchanged = before is not None and same_values(before, context.after)
        if unchanged and not context.default_before:
            return
        group = context.new_key
        earlier = self._groups.get(group)
        if earlier is None:
            self._groups[group] = context
        else:
            earlier.after = context.after
            earlier.default_before = context.default_before
            earlier.default_after = context.default_after

    def diffs(self) -> list[Diff]:
        if not self._groups:
            return self._plain
        groups = [
            {"type": "aggregation", "before": c.before, "after": c.after}
            for c in self._groups.values()
        ]
        return self._plain + groups
