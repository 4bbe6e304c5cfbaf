"""The CDC tools' formats decoded at the consumer boundary (drasi_ray/source/cdc.py).

Entries are shaped as Debezium Server's and DeltaForge's Redis sinks write them
(:mod:`drasi_ray.testing.cdc`, after the tools' documentation and sink code), and each decodes
to exactly the changes the platform decoder makes of the same change stated as a platform
event, except for the version: a position in the database log, equal for a re-sent change.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from drasi_ray.model.changes import DecodedEntry, ElementChange, Op
from drasi_ray.model.config import (
    AppConfig,
    CdcConfig,
    PlatformSourceConfig,
    SourceFormat,
    validated,
)
from drasi_ray.model.errors import ConfigError, DecodeError
from drasi_ray.source.debezium import DebeziumDecoder
from drasi_ray.source.decode import decode_entry, encode_cloud_event
from drasi_ray.source.deltaforge import DeltaForgeDecoder
from drasi_ray.source.formats import decoder_for
from drasi_ray.source.platform import PlatformSource
from drasi_ray.testing.cdc import (
    RowChange,
    debezium_fields,
    debezium_tombstone,
    deltaforge_fields,
    platform_event,
)

TS = 1_700_000_000_123
ROW = {"id": 1004, "name": "Anne", "balance": 12.5, "vip": True, "tags": ["a"]}
LSN = (0x16 << 32) | 0xB374D848
CHANGES = {
    "c": RowChange("c", "customers", None, ROW, TS, LSN),
    "u": RowChange("u", "customers", None, {**ROW, "name": "Anna"}, TS + 1, LSN + 80),
    "d": RowChange("d", "customers", {**ROW, "name": "Anna"}, None, TS + 2, LSN + 160),
    "r": RowChange("r", "customers", None, ROW, TS - 50, LSN - 4096),
}
DEBEZIUM = DebeziumDecoder(CdcConfig())
DELTAFORGE = DeltaForgeDecoder(CdcConfig(keys={"*": ("id",)}))


def _only(entry: DecodedEntry) -> ElementChange:
    (change,) = entry.changes
    return change


def _platform(change: RowChange) -> ElementChange:
    return _only(decode_entry("1-0", {b"data": encode_cloud_event([platform_event(change)])}))


def _same_change(got: ElementChange, change: RowChange) -> None:
    """``got`` is the platform decoder's change of ``change`` but for the version."""
    expected = _platform(change)
    assert (got.op, got.element, got.timing) == (expected.op, expected.element, expected.timing)


# --------------------------------------------------------------------------------------------
# Debezium Server
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", sorted(CHANGES))
@pytest.mark.parametrize("schemas", [True, False], ids=["schema-wrapped", "bare"])
@pytest.mark.parametrize("extended", [False, True], ids=["compact", "extended"])
def test_debezium_entries_decode_to_the_platform_change(
    op: str, schemas: bool, extended: bool
) -> None:
    change = CHANGES[op]
    got = _only(DEBEZIUM("5-0", debezium_fields(change, schemas=schemas, extended=extended)))
    _same_change(got, change)
    assert got.version == (0 if op == "r" else 1, change.lsn, 0)


def test_debezium_tombstones_and_truncates() -> None:
    deleted = CHANGES["d"]
    for extended in (False, True):
        assert DEBEZIUM("6-0", debezium_tombstone(deleted, extended=extended)) == DecodedEntry(
            "6-0"
        )
    truncate = RowChange("t", "customers", None, ROW, TS, LSN)  # (no row: the key is its own)
    with pytest.raises(DecodeError, match=r"op 't' \(truncate of table 'customers'\)"):
        DEBEZIUM("7-0", debezium_fields(truncate))


def test_debezium_mysql_positions_order_file_then_pos_then_row() -> None:
    def version(binlog: tuple[str, int, int], op: str = "u") -> Any:
        change = RowChange(op, "orders", None, {"id": 1}, TS, binlog=binlog)
        return _only(DEBEZIUM("1-0", debezium_fields(change))).version

    assert version(("mysql-bin.000003", 990, 0)) < version(("mysql-bin.000003", 990, 1))
    assert version(("mysql-bin.000003", 990, 1)) < version(("mysql-bin.000003", 1081, 0))
    assert version(("mysql-bin.000003", 2**32, 0)) < version(("mysql-bin.000004", 4, 0))
    assert version(("mysql-bin.000009", 9_999, 0), "r") < version(("mysql-bin.000001", 4, 0))


def test_a_re_sent_change_keeps_its_version_and_a_snapshot_read_precedes_the_stream() -> None:
    change = CHANGES["u"]
    first = _only(DEBEZIUM("10-0", debezium_fields(change)))
    again = _only(DEBEZIUM("99-3", debezium_fields(change)))  # the tool sent it again, later
    assert first == again
    # A transaction that wrote the row before the snapshot's position but committed after it
    # (its change's LSN is lower) still comes after the snapshot read of that row.
    snapshot = _only(DEBEZIUM("1-0", debezium_fields(CHANGES["r"])))
    late = RowChange("u", "customers", None, ROW, TS, lsn=CHANGES["r"].lsn - 1)
    assert snapshot.version < _only(DEBEZIUM("2-0", debezium_fields(late))).version


def test_labels_keys_and_composite_ids() -> None:
    lines = RowChange(
        "c", "order_lines", None, {"order_id": 7, "line": "b", "qty": 2}, TS, LSN,
        key=("order_id", "line"), schema="sales",
    )  # fmt: skip
    decoder = DebeziumDecoder(
        CdcConfig(labels={"sales.order_lines": "OrderLine", "order_lines": "Unused"})
    )
    element = _only(decoder("1-0", debezium_fields(lines))).element
    assert (element.id, element.labels) == ("order_lines:7_b", ("OrderLine",))
    configured = DebeziumDecoder(CdcConfig(keys={"order_lines": ("line", "qty")}))
    assert _only(configured("1-0", debezium_fields(lines))).element.id == "order_lines:b_2"
    flags = RowChange("c", "flags", None, {"on": True, "x": 1.5}, TS, LSN, key=("on", "x"))
    assert _only(DEBEZIUM("1-0", debezium_fields(flags))).element.id == "flags:true_1.5"


def test_a_null_message_key_needs_configured_key_columns() -> None:
    value = debezium_fields(CHANGES["c"], extended=True)[b"value"]
    keyless = {b"key": b"default", b"value": value}
    with pytest.raises(DecodeError, match=r"no key for table 'customers'.*cdc\.keys\.customers"):
        DEBEZIUM("1-0", keyless)
    with_keys = DebeziumDecoder(CdcConfig(keys={"customers": ("id",)}))
    assert _only(with_keys("1-0", keyless)).element.id == "customers:1004"


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({b"a": b"1", b"b": b"2"}, "not a Debezium Server entry"),
        ({b'{"id":1}': b"{not json"}, "invalid JSON in the value of the entry's one field"),
        ({b'{"id":1}': b'{"payload": {"op": "c"}}'}, "missing 'source' field"),
        ({b'{"id":1}': b'{"after": {}, "source": {"table": "t", "ts_ms": 1}}'}, "missing 'op'"),
        (
            {b'{"id":1}': b'{"op": "c", "source": {"table": 5, "ts_ms": 1}}'},
            r"invalid Debezium envelope in the value of the entry's one field: .*\$\.source\.table",
        ),
        ({b'{"id":1}': b'{"op": "c", "source": {"table": "t", "ts_ms": 1, "lsn": 1}}'},
         "missing 'after' field \\(op 'c'\\)"),
        ({b'{"id":1}': b'{"op": "x", "source": {"table": "t", "ts_ms": 1}}'}, "unknown 'op'"),
        ({b'{"id":1}': b'{"op": "c", "after": {"id": 1}, "source": {"table": "t"}}'},
         "missing or invalid 'source.ts_ms'"),
        ({b'{"id":1}': b'{"op": "c", "after": {"id": 1}, "source": {"table": "t", "ts_ms": -5}}'},
         "missing or invalid 'source.ts_ms'"),
        ({b'{"id":1}': b'{"op": "u", "after": {"id": 1}, "source": {"table": "t", "ts_ms": 1}}'},
         "no position in 'source'"),
        ({b'{"id":1}': b'{"op": "c", "after": {"id": 1}, "source": {"ts_ms": 1}}'},
         "missing or invalid 'source.table'"),
        ({b'{"id":null}': b'{"op": "c", "after": {}, "source": {"table": "t", "ts_ms": 1}}'},
         "key column 'id' missing or null in the message key"),
        ({b'{"id":1}': b'{"op": "c", "after": {}, "source": {"table": "t", "ts_ms": 1, '
          b'"lsn": "zz"}}'}, "invalid 'source.lsn' value 'zz'"),
    ],
)  # fmt: skip
def test_malformed_debezium_entries_name_the_field(fields: dict[bytes, bytes], reason: str) -> None:
    with pytest.raises(DecodeError, match=reason):
        DEBEZIUM("1-0", fields)


# --------------------------------------------------------------------------------------------
# DeltaForge
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", sorted(CHANGES))
@pytest.mark.parametrize("envelope", ["native", "debezium"])
def test_deltaforge_entries_decode_to_the_platform_change(op: str, envelope: Any) -> None:
    change = CHANGES[op]
    fields = deltaforge_fields(change, envelope=envelope)
    got = _only(DELTAFORGE("5-0", fields))
    _same_change(got, change)
    # A snapshot read has no position in DeltaForge's events: it precedes every streamed one.
    assert got.version == ((0, 0, 0) if op == "r" else (1, change.lsn, 0))
    # DeltaForge re-sends a change with a new event id; the position is what drops it.
    again = deltaforge_fields(change, envelope=envelope)
    assert again[b"event_id"] != fields[b"event_id"]
    assert DELTAFORGE("8-0", again).changes == (got,)


def test_deltaforge_mysql_and_the_documented_event_field() -> None:
    change = RowChange("u", "orders", None, {"id": 3}, TS, binlog=("binlog.000012", 4711, 0))
    fields = deltaforge_fields(change)
    got = _only(DELTAFORGE("1-0", {b"event": fields[b"df-event"]}))  # as its docs once named it
    assert got.version == (1, 12 << 40 | 4711, 0)
    assert got.element.id == "orders:3"


def test_deltaforge_key_change_deletes_the_old_element_and_inserts_the_new() -> None:
    change = RowChange("u", "customers", {"id": 1, "name": "A"}, {"id": 2, "name": "A"}, TS, LSN)
    gone, came = DELTAFORGE("1-0", deltaforge_fields(change)).changes
    assert (gone.op, gone.element.id, gone.version) == (Op.DELETE, "customers:1", (1, LSN, 0))
    assert (came.op, came.element.id, came.version) == (Op.INSERT, "customers:2", (1, LSN, 1))
    same_key = RowChange("u", "customers", {"id": 2, "name": "A"}, {"id": 2, "name": "B"}, TS, 1)
    assert _only(DELTAFORGE("1-0", deltaforge_fields(same_key))).op is Op.UPDATE
    # A before image without every key column (only what the replica identity logs) says no
    # key change: the update stays one update.
    lines = DeltaForgeDecoder(CdcConfig(keys={"lines": ("order", "line")}))
    partial = RowChange("u", "lines", {"order": 7}, {"order": 7, "line": 2, "qty": 1}, TS, LSN)
    assert _only(lines("1-0", deltaforge_fields(partial))).element.id == "lines:7_2"


def test_deltaforge_schema_changes_carry_no_change_and_other_shapes_are_refused() -> None:
    ddl = orjson.dumps({"op": "r", "source": {"table": "t", "ts_ms": 1}, "ddl": {"sql": "..."}})
    assert DELTAFORGE("1-0", {b"df-event": ddl}) == DecodedEntry("1-0")
    cloud = orjson.dumps({"specversion": "1.0", "source": "deltaforge/db/shop.t", "data": {}})
    with pytest.raises(DecodeError, match="configure the Redis sink with envelope native"):
        DELTAFORGE("1-0", {b"df-event": cloud})
    with pytest.raises(DecodeError, match="no 'df-event' field"):
        DELTAFORGE("1-0", {b"event_id": b"x"})
    with pytest.raises(DecodeError, match="no key for table 'customers'"):
        DeltaForgeDecoder(CdcConfig())("1-0", deltaforge_fields(CHANGES["c"]))
    broken = RowChange("c", "customers", None, {"name": "no id"}, TS, LSN)
    with pytest.raises(DecodeError, match="key column 'id' missing or null in 'after'"):
        DELTAFORGE("1-0", deltaforge_fields(broken))


# --------------------------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------------------------


def _config(**values: Any) -> PlatformSourceConfig:
    return PlatformSourceConfig(redis_url="redis://localhost:6379", stream_keys=("s",), **values)


def test_configuration_of_a_cdc_source() -> None:
    config = _config(format="debezium", cdc={"labels": {"t": "T"}, "keys": {"t": ["a", "b"]}})
    assert config.format is SourceFormat.DEBEZIUM and config.positional
    assert config.tombstone_ttl_ms is None  # versions are log positions: tombstones stay
    assert isinstance(decoder_for(config), DebeziumDecoder)
    assert decoder_for(_config()) is decode_entry  # the platform path is the one it was
    by_stream = _config(format="deltaforge", cdc={"ordering": "stream", "keys": {"*": ["id"]}})
    assert not by_stream.positional and by_stream.tombstone_ttl_ms == 3_600_000
    assert _only(
        decoder_for(by_stream)("17-4", deltaforge_fields(CHANGES["u"]))
    ).version == (17, 4, 0)  # fmt: skip
    built = (
        PlatformSource.builder("shop")
        .with_redis_url("redis://localhost:6379")
        .with_stream_key("s")
        .with_format("debezium")
        .with_cdc(keys={"t": ["a"]})
        .with_cdc(labels={"t": "T"})
        .build()
    )
    assert built.config.cdc == CdcConfig(labels={"t": "T"}, keys={"t": ("a",)})


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"format": "debezium", "tombstone_ttl_ms": 5}, "tombstone_ttl_ms must be null"),
        ({"cdc": {"keys": {"t": ["a"]}}}, "cdc settings apply to format debezium or deltaforge"),
        ({"format": "debezium", "cdc": {"label": {}}}, "cdc.label"),
        ({"format": "debezium", "cdc": {"keys": {"t": []}}}, "needs at least one key column"),
        ({"format": "avro"}, "format"),
    ],
)
def test_bad_cdc_configuration_is_refused(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        validated(PlatformSourceConfig, redis_url="redis://x", stream_keys=("s",), **values)


def test_a_cdc_source_in_yaml(tmp_path: Path) -> None:
    path = tmp_path / "app.yaml"
    path.write_text(
        """
id: shop
sources:
  - id: shop
    properties:
      redis_url: redis://localhost:6379
      stream_keys: [dbserver1.public.customers, dbserver1.public.orders]
      format: debezium
      cdc:
        labels: {customers: Customer}
        keys: {orders: [order_id, line]}
queries:
  - id: vip
    query: MATCH (c:Customer) WHERE c.vip RETURN c.id AS id
    sources: [shop]
""",
        encoding="utf-8",
    )
    (spec,) = AppConfig.from_yaml(path).sources
    assert isinstance(spec.properties, PlatformSourceConfig)
    assert spec.properties.format is SourceFormat.DEBEZIUM
    assert spec.properties.cdc == CdcConfig(
        labels={"customers": "Customer"}, keys={"orders": ("order_id", "line")}
    )
    path.write_text(path.read_text().replace("keys:", "key_columns:"), encoding="utf-8")
    with pytest.raises(ConfigError, match="key_columns"):
        AppConfig.from_yaml(path)
