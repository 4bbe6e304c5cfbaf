"""Which decoder reads a source's entries: its ``format`` (docs/sources.md).

``platform`` entries go to :func:`~drasi_ray.source.decode.decode_entry` itself, so the
platform path costs what it did; ``debezium`` and ``deltaforge`` entries to a decoder made once
per consumer from the source's ``cdc`` settings. Every decoder gives the same typed
:class:`~drasi_ray.model.changes.DecodedEntry` or raises
:class:`~drasi_ray.model.errors.DecodeError`, so the consumer, the dead-letter stream, the
shards and the queries do not know the format.
"""

from __future__ import annotations

from drasi_ray.model.config import PlatformSourceConfig, SourceFormat
from drasi_ray.source.cdc import Decoder
from drasi_ray.source.debezium import DebeziumDecoder
from drasi_ray.source.decode import decode_entry
from drasi_ray.source.deltaforge import DeltaForgeDecoder

__all__ = ["decoder_for"]


def decoder_for(settings: PlatformSourceConfig) -> Decoder:
    """The decoder of the entries of a source with ``settings``."""
    if settings.format is SourceFormat.DEBEZIUM:
        return DebeziumDecoder(settings.cdc_rules)
    if settings.format is SourceFormat.DELTAFORGE:
        return DeltaForgeDecoder(settings.cdc_rules)
    return decode_entry
