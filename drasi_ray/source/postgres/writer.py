"""The reader's Redis side: entries onto the stream, the stream's top, the reader's state.

Entries of one write go in one ``MULTI``/``EXEC``, so a transaction (or a batch of them) is on
the stream whole or not at all, and the slot is confirmed only after ``EXEC`` returned. The
stream's last generated id (kept by Redis even when entries are trimmed) is how far the reader
has written: a transaction ending at or below it is already there.

The reader's state (hash ``drasi:<app>:postgres:<source>:reader``) says which slot of which
database the stream continues, and at which position the snapshot that began it was complete;
while a snapshot is being written it holds no position, so a reader that dies then takes a new
one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import redis

from drasi_ray.source.postgres.entries import lsn_of
from drasi_ray.streams import admin

DATA_FIELD = b"data"


@dataclass(frozen=True, slots=True)
class ReaderState:
    """What a restarted reader resumes from."""

    slot: str
    database: str
    snapshot_lsn: int | None
    """None while a snapshot is being written (not complete)."""


class StreamWriter:
    """Writes one source's entries and keeps its reader's state, on one Redis client."""

    def __init__(self, client: redis.Redis, stream_key: str, state_key: str) -> None:
        self.client = client
        self.stream_key = stream_key
        self.state_key = state_key

    def top_lsn(self) -> int:
        """The LSN of the last entry ever written to the stream (0: none)."""
        return lsn_of(admin.last_generated_id(self.client, self.stream_key))

    def write(self, items: Sequence[tuple[str, bytes]]) -> None:
        """Append ``items`` (entry id, data) in one MULTI/EXEC."""
        if not items:
            return
        pipe = self.client.pipeline(transaction=True)
        for entry_id, data in items:
            pipe.xadd(self.stream_key, {DATA_FIELD: data}, id=entry_id)
        pipe.execute()

    def state(self) -> ReaderState | None:
        raw = self.client.hgetall(self.state_key)
        if not raw:
            return None
        fields = {admin.text(key): admin.text(value) for key, value in raw.items()}
        snapshot = fields.get("snapshot_lsn", "")
        return ReaderState(
            fields.get("slot", ""), fields.get("database", ""), int(snapshot) if snapshot else None
        )

    def begin_snapshot(self, slot: str, database: str) -> None:
        """A snapshot is about to be written: until :meth:`complete_snapshot`, a restarted
        reader does not resume but takes a new one."""
        self.client.hset(
            self.state_key, mapping={"slot": slot, "database": database, "snapshot_lsn": ""}
        )

    def complete_snapshot(self, lsn: int) -> None:
        self.client.hset(self.state_key, "snapshot_lsn", str(lsn))
