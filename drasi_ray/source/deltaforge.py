"""Decode the stream entries DeltaForge's Redis sink writes (docs/sources.md).

The sink XADDs one entry per event to its configured stream (one for the pipeline, or one per
table with a routing template) with the fields ``df-event`` (the event), ``event_id`` (a UUID
v7), ``idempotency_key`` and, when a key is set, ``df-key``. Only ``df-event`` is read (a field
``event``, as some versions of DeltaForge's documentation name it, is read when ``df-event`` is
absent). Its JSON is DeltaForge's ``native`` envelope (Debezium's payload: ``before``,
``after``, ``source``, ``op``, ``ts_ms``, plus extensions) or its ``debezium`` envelope
(``{"schema": null, "payload": ...}``); both become changes in
:class:`~drasi_ray.source.cdc.RowMapper`, where the source position orders them.

Not read, on purpose: ``event_id`` and ``idempotency_key``. DeltaForge makes the event id when
it reads the database log, so a change it sends again after a restart (its at-least-once
replay from the last checkpoint) carries a new id; its position in the log is the same, and
that is what drops it. A schema-change event (``ddl`` set) decodes to no change. The
``cloudevents`` envelope (no ``source`` block, so no table position) and the Avro encoding are
refused with a reason saying which sink settings to use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from drasi_ray.model.changes import DecodedEntry
from drasi_ray.model.config import CdcConfig
from drasi_ray.model.errors import DecodeError
from drasi_ray.source.cdc import RowMapper, decode_envelope

__all__ = ["DeltaForgeDecoder"]

_EVENT: Final = b"df-event"
_DOCUMENTED_EVENT: Final = b"event"
_TOOL: Final = "DeltaForge"
_CLOUDEVENTS: Final = (
    "a DeltaForge CloudEvents envelope has no 'source' block (table and log position): "
    "configure the Redis sink with envelope native or debezium"
)


class DeltaForgeDecoder:
    """A :data:`~drasi_ray.source.cdc.Decoder` of DeltaForge entries, by ``rules``."""

    def __init__(self, rules: CdcConfig) -> None:
        self._rows = RowMapper(rules, _TOOL)

    def __call__(self, entry_id: str, fields: Mapping[bytes, bytes]) -> DecodedEntry:
        raw = fields.get(_EVENT)
        where = "field 'df-event'"
        if raw is None:
            raw = fields.get(_DOCUMENTED_EVENT)
            where = "field 'event'"
            if raw is None:
                raise DecodeError("no 'df-event' field in stream entry")
        try:
            envelope = decode_envelope(raw, where, _TOOL)
        except DecodeError:
            if b'"specversion"' in raw:
                raise DecodeError(_CLOUDEVENTS) from None
            raise
        if envelope.unwrapped().ddl is not None:  # a schema change: no row changed
            return DecodedEntry(entry_id)
        return self._rows.changes(entry_id, envelope)
