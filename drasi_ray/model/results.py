"""Query results: the diffs one applied change caused, and their wire formats.

A :class:`QueryResult` carries every diff of one change for one query (docs/semantics.md §4), with a
per-query ``sequence`` that starts at 1 and strictly increases. :func:`platform_change_event` and
:func:`platform_control_event` render Drasi's platform reaction format (the CloudEvents a Drasi
reaction reads from ``<queryId>-results``).
"""

from __future__ import annotations

import enum
import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import msgspec


class ControlSignal(str, enum.Enum):
    BOOTSTRAP_STARTED = "bootstrapStarted"
    BOOTSTRAP_COMPLETED = "bootstrapCompleted"
    RUNNING = "running"
    STOPPED = "stopped"


class QueryResult(msgspec.Struct, frozen=True, gc=False):
    """The diffs of one applied change, for one query.

    ``results`` holds diff dicts: ``{"type": "ADD", "data": row}``, ``{"type": "DELETE",
    "data": row}``, ``{"type": "UPDATE", "before": row, "after": row}`` or ``{"type":
    "aggregation", "before": row | None, "after": row}``. ``timestamp_ms`` is when the query
    produced them; ``source_time_ms`` the change's effective time.
    """

    query_id: str
    sequence: int
    timestamp_ms: int
    source_time_ms: int
    results: tuple[dict[str, Any], ...] = ()

    @property
    def added(self) -> list[dict[str, Any]]:
        return [diff["data"] for diff in self.results if diff["type"] == "ADD"]

    @property
    def deleted(self) -> list[dict[str, Any]]:
        return [diff["data"] for diff in self.results if diff["type"] == "DELETE"]

    @property
    def updated(self) -> list[dict[str, Any]]:
        return [diff for diff in self.results if diff["type"] in ("UPDATE", "aggregation")]


class ControlResult(msgspec.Struct, frozen=True, gc=False):
    """A lifecycle signal of a query (bootstrap started/completed, running, stopped)."""

    query_id: str
    sequence: int
    timestamp_ms: int
    signal: ControlSignal


Delivered = QueryResult | ControlResult
"""What a query hands to its subscribers and reactions: results and control signals."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _cloud_event(query_id: str, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "source": "drasi-ray",
        "type": "com.dapr.event.sent",
        "specversion": "1.0",
        "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
        "topic": f"{query_id}-results",
        "datacontenttype": "application/json",
        "data": data,
    }


def _updated_entry(diff: dict[str, Any], grouping_keys: Sequence[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"after": diff["after"]}
    if diff.get("before") is not None:
        entry["before"] = diff["before"]
    if diff["type"] == "aggregation":
        entry["groupingKeys"] = list(grouping_keys)
    return entry


def platform_change_event(result: QueryResult, grouping_keys: Sequence[str] = ()) -> dict[str, Any]:
    """Render a result in Drasi's platform reaction format (``kind: change``)."""
    added = [diff["data"] for diff in result.results if diff["type"] == "ADD"]
    deleted = [diff["data"] for diff in result.results if diff["type"] == "DELETE"]
    updated = [
        _updated_entry(diff, grouping_keys)
        for diff in result.results
        if diff["type"] in ("UPDATE", "aggregation")
    ]
    data = {
        "kind": "change",
        "queryId": result.query_id,
        "sequence": result.sequence,
        "sourceTimeMs": result.source_time_ms,
        "addedResults": added,
        "updatedResults": updated,
        "deletedResults": deleted,
    }
    return _cloud_event(result.query_id, data)


def platform_control_event(control: ControlResult) -> dict[str, Any]:
    """Render a control signal in Drasi's platform reaction format (``kind: control``)."""
    data = {
        "kind": "control",
        "queryId": control.query_id,
        "sequence": control.sequence,
        "sourceTimeMs": control.timestamp_ms,
        "controlSignal": {"kind": control.signal.value},
    }
    return _cloud_event(control.query_id, data)


def diffs_from_platform_event(event: dict[str, Any]) -> list[dict[str, Any]]:
    """Turn a platform ``change`` CloudEvent back into diff dicts (tests and tools use it)."""
    data = event["data"]
    diffs: list[dict[str, Any]] = [{"type": "ADD", "data": row} for row in data["addedResults"]]
    for entry in data["updatedResults"]:
        kind = "aggregation" if "groupingKeys" in entry else "UPDATE"
        diffs.append({"type": kind, "before": entry.get("before"), "after": entry["after"]})
    diffs.extend({"type": "DELETE", "data": row} for row in data["deletedResults"])
    return diffs
