"""What a query reports of itself: its live status and its subscribers' buffers.

Plain records that travel to the driver (``DrasiRay.status()``), kept apart from the query's
compiled logic (:mod:`drasi_ray.native`), whose classes do not pickle.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class SubscriberReport:
    """One subscriber's buffer: results waiting, and (broadcast mode) results dropped."""

    buffered: int
    dropped: int


@dataclass(frozen=True, slots=True)
class QueryReport:
    """A query's live status (``DrasiRay.status().queries[id]``). ``reactions`` are
    :class:`~drasi_ray.reactions.base.ReactionReport` values in their plain-data form.

    ``host``: the query host it runs in; ``line_calls``: the calls that host answered on
    lines; ``errors`` and ``last_error``: deliveries this query failed to apply (the others
    of its host are not affected); ``memory_bytes``: what its state holds
    (:mod:`drasi_ray.host.footprint`); ``superseded``: deltas dropped because a bootstrap
    part that includes them was still to come (:mod:`drasi_ray.host.inbox`).
    """

    query_id: str
    line_calls: int
    sequence: int
    diffs: int
    rows: int
    columns: list[str]
    reactions: list[dict[str, Any]]
    subscribers: dict[str, SubscriberReport]
    host: str = ""
    errors: int = 0
    last_error: str | None = None
    memory_bytes: int = 0
    superseded: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The plain-data form (``status()``, JSON)."""
        return dataclasses.asdict(self)
