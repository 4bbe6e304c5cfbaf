"""A reaction's dead letter: a diff (or a result entry) an HTTP or stored-procedure reaction
could not deliver, as written to ``drasi:<app>:reaction:<id>:dlq``
(:func:`~drasi_ray.model.keys.reaction_dead_letters`).

Two kinds, one stream entry each, every value a Redis string:

- a diff given up on (:meth:`ReactionDeadLetter.for_call`): ``reaction``, ``query``,
  ``sequence``, ``key`` (the idempotency key ``<queryId>:<sequence>:<index>``), ``kind``
  (added/updated/deleted), ``reason``, ``attempts``, ``request`` (what was sent, no secrets),
  ``diff`` (the diff as JSON), ``source_time_ms`` and ``at_ms``. It holds all a reaction needs to
  render and send it again (``drasi-ray dlq replay --reaction``), with the same key;
- a result entry that could not be read (:meth:`ReactionDeadLetter.for_entry`): ``reaction``,
  ``query``, ``entry`` (its id in the result stream), ``reason``, ``orig:data`` (its bytes) and
  ``at_ms``. There is no diff in it to deliver: it can be shown and purged, not replayed.

Dead letters written before ``source_time_ms`` was recorded read it as 0.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from drasi_ray.model import encoding

RAW_FIELD = b"orig:data"


@dataclass(frozen=True, slots=True)
class ReactionDeadLetter:
    """One dead letter of a reaction (module docstring)."""

    reaction: str
    query: str
    reason: str
    at_ms: int
    sequence: int = 0
    key: str = ""
    kind: str = ""
    attempts: int = 0
    request: str = ""
    diff: Mapping[str, Any] | None = None
    """None: an unreadable result entry (``entry``, ``raw``), nothing to deliver."""
    source_time_ms: int = 0
    entry: str = ""
    raw: bytes = b""

    @property
    def deliverable(self) -> bool:
        return self.diff is not None

    @property
    def index(self) -> int:
        """The diff's place among its result's diffs (the key's last part)."""
        return int(self.key.rpartition(":")[2])

    @classmethod
    def for_call(
        cls,
        reaction: str,
        query: str,
        sequence: int,
        key: str,
        kind: str,
        diff: Mapping[str, Any],
        *,
        reason: str,
        attempts: int,
        request: str,
        source_time_ms: int,
    ) -> ReactionDeadLetter:
        return cls(
            reaction,
            query,
            reason,
            _now_ms(),
            sequence=sequence,
            key=key,
            kind=kind,
            attempts=attempts,
            request=request,
            diff=diff,
            source_time_ms=source_time_ms,
        )

    @classmethod
    def for_entry(
        cls, reaction: str, query: str, entry: str, reason: str, raw: bytes
    ) -> ReactionDeadLetter:
        return cls(reaction, query, reason, _now_ms(), entry=entry, raw=raw)

    def to_fields(self) -> dict[bytes, bytes]:
        """The stream entry's fields (module docstring)."""
        common = {b"reaction": self.reaction, b"query": self.query, b"reason": self.reason}
        fields = {name: value.encode() for name, value in common.items()}
        if self.diff is None:
            fields |= {b"entry": self.entry.encode(), RAW_FIELD: self.raw}
        else:
            fields |= {
                b"sequence": str(self.sequence).encode(),
                b"key": self.key.encode(),
                b"kind": self.kind.encode(),
                b"attempts": str(self.attempts).encode(),
                b"request": self.request.encode(),
                b"diff": encoding.dumps(dict(self.diff)),
                b"source_time_ms": str(self.source_time_ms).encode(),
            }
        return {**fields, b"at_ms": str(self.at_ms).encode()}

    @classmethod
    def from_fields(cls, fields: Mapping[bytes, bytes]) -> ReactionDeadLetter:
        """Read one back; KeyError or ValueError when it is not a reaction's dead letter."""

        def text(name: bytes, default: str = "") -> str:
            value = fields.get(name)
            return default if value is None else value.decode("utf-8", errors="replace")

        common = (text(b"reaction"), text(b"query"), text(b"reason"), int(text(b"at_ms", "0")))
        if b"diff" not in fields:
            return cls(*common, entry=text(b"entry"), raw=bytes(fields.get(RAW_FIELD, b"")))
        diff = orjson.loads(fields[b"diff"])
        if not isinstance(diff, dict):
            raise ValueError("the dead letter's diff is not an object")
        return cls(
            *common,
            sequence=int(text(b"sequence", "0")),
            key=text(b"key"),
            kind=text(b"kind"),
            attempts=int(text(b"attempts", "0")),
            request=text(b"request"),
            diff=diff,
            source_time_ms=int(text(b"source_time_ms", "0")),
        )


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
