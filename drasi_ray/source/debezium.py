"""Decode the stream entries Debezium Server's Redis sink writes (docs/sources.md).

The sink writes one entry per change event to the stream named after the event's topic
(``<topic.prefix>.<schema>.<table>`` by default: one stream per table), in one of two shapes
(its ``debezium.sink.redis.message.format``):

- ``compact`` (the default): ONE field, whose name is the message key's JSON and whose value is
  the change event's JSON;
- ``extended``: fields ``key`` and ``value`` holding the same, and one field per message header
  (upper-cased names), which are not read.

Both JSON texts come from Debezium's JSON converter, with ``{"schema": ..., "payload": ...}``
around them when schemas are enabled (Debezium Server's default) and bare otherwise; both are
read. A null key or value is written as the sink's ``null.key``/``null.value`` text
(``default``): an entry whose value is ``cdc.null_value`` is a tombstone (Debezium sends one
after each delete, for Kafka's log compaction) and decodes to no change. The envelope itself
becomes changes in :class:`~drasi_ray.source.cdc.RowMapper`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from drasi_ray.model.changes import DecodedEntry
from drasi_ray.model.config import CdcConfig
from drasi_ray.model.errors import DecodeError
from drasi_ray.source.cdc import RowMapper, decode_envelope

__all__ = ["DebeziumDecoder"]

_KEY: Final = b"key"
_VALUE: Final = b"value"
_TOOL: Final = "Debezium"
_NO_SHAPE: Final = (
    "not a Debezium Server entry: expected one field (message key JSON -> event JSON, "
    "message.format compact) or the fields 'key' and 'value' (message.format extended)"
)


class DebeziumDecoder:
    """A :data:`~drasi_ray.source.cdc.Decoder` of Debezium Server entries, by ``rules``."""

    def __init__(self, rules: CdcConfig) -> None:
        self._rows = RowMapper(rules, _TOOL)
        self._null = rules.null_value.encode()

    def __call__(self, entry_id: str, fields: Mapping[bytes, bytes]) -> DecodedEntry:
        value = fields.get(_VALUE)
        key = fields.get(_KEY)
        if value is not None and key is not None:
            where = "field 'value'"
        elif len(fields) == 1:
            ((key, value),) = fields.items()
            where = "the value of the entry's one field"
        else:
            raise DecodeError(_NO_SHAPE)
        if value == self._null:  # a tombstone: the delete before it said everything
            return DecodedEntry(entry_id)
        envelope = decode_envelope(value, where, _TOOL)
        return self._rows.changes(entry_id, envelope, key)
