"""The PostgreSQL source without a server: pgoutput messages, Drasi's type mapping, rows as
elements, transactions, entries at WAL positions, and the settings."""

from __future__ import annotations

import logging
import re
import struct

import orjson
import pytest

from drasi_ray.model.changes import Op
from drasi_ray.model.config import AppConfig, PostgresSourceSpec
from drasi_ray.model.errors import ConfigError
from drasi_ray.model.postgres_specs import RelationSpec
from drasi_ray.source.decode import decode_entry
from drasi_ray.source.postgres import pgoutput, values
from drasi_ray.source.postgres.entries import entries
from drasi_ray.source.postgres.pgoutput import UNCHANGED, ProtocolError, parse
from drasi_ray.source.postgres.tables import Column, RowError, RowMapper, TableInfo, key_text
from drasi_ray.source.postgres.transactions import TransactionAssembler, Truncation
from drasi_ray.source.postgres.values import ValueReader


def _text(value: str) -> bytes:
    return value.encode() + b"\x00"


def _tuple(*columns: object) -> bytes:
    out = struct.pack(">h", len(columns))
    for column in columns:
        if column is None:
            out += b"n"
        elif column is UNCHANGED:
            out += b"u"
        else:
            raw = str(column).encode()
            out += b"t" + struct.pack(">i", len(raw)) + raw
    return out


def _relation(oid: int, name: str, columns: list[tuple[str, int, bool]]) -> bytes:
    out = b"R" + struct.pack(">I", oid) + _text("public") + _text(name) + b"d"
    out += struct.pack(">h", len(columns))
    for column, type_oid, key in columns:
        out += bytes([1 if key else 0]) + _text(column) + struct.pack(">Ii", type_oid, -1)
    return out


ORDERS = [
    ("id", values.INT4, True),
    ("customer_id", values.INT4, False),
    ("note", values.TEXT, False),
]


def test_pgoutput_messages_parse_to_records() -> None:
    assert parse(b"B" + struct.pack(">QqI", 0x100, 5, 7)) == pgoutput.Begin(0x100, 5, 7)
    assert parse(b"C\x00" + struct.pack(">QQq", 0x100, 0x130, 5)) == pgoutput.Commit(
        0x100, 0x130, 5
    )
    relation = parse(_relation(16384, "orders", ORDERS))
    assert isinstance(relation, pgoutput.Relation)
    assert [c.name for c in relation.columns] == ["id", "customer_id", "note"]
    assert relation.columns[0].is_key and relation.replica_identity == "d"
    insert = parse(b"I" + struct.pack(">I", 16384) + b"N" + _tuple("1", None, UNCHANGED))
    assert insert == pgoutput.Insert(16384, ("1", None, UNCHANGED))
    update = parse(
        b"U" + struct.pack(">I", 1) + b"K" + _tuple("1", None, None) + b"N" + _tuple("2", "3", "x")
    )
    assert update == pgoutput.Update(1, ("1", None, None), ("2", "3", "x"))
    assert parse(b"D" + struct.pack(">I", 1) + b"K" + _tuple("4")) == pgoutput.Delete(1, ("4",))
    truncate = parse(b"T" + struct.pack(">iB", 2, 1) + struct.pack(">II", 5, 6))
    assert truncate == pgoutput.Truncate((5, 6), cascade=True, restart_identity=False)
    message = parse(b"M\x01" + struct.pack(">Q", 9) + _text("p") + struct.pack(">i", 3) + b"tok")
    assert message == pgoutput.LogicalMessage(True, 9, "p", b"tok")


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"Z",
        b"B\x00\x01",
        b"I\x00\x00\x00\x01X",
        b"I\x00\x00\x00\x01N\x00\x01t\x00\x00\x00\x09ab",
    ],
)
def test_a_message_it_cannot_read_is_a_protocol_error(payload: bytes) -> None:
    with pytest.raises(ProtocolError):
        parse(payload)


def test_lsn_text_round_trips() -> None:
    assert pgoutput.format_lsn(0x16B3748) == "0/16B3748"
    assert pgoutput.parse_lsn("1A/2B") == (0x1A << 32) | 0x2B
    assert pgoutput.unix_ns(0) == 946_684_800_000_000_000


@pytest.mark.parametrize(
    ("type_oid", "text", "value"),
    [
        (values.BOOL, "t", True),
        (values.BOOL, "f", False),
        (values.BOOL, "true", True),  # the snapshot's column::text
        (values.INT2, "7", 7),
        (values.OID, "16384", 16384),
        (values.INT8, "-9223372036854775808", -9223372036854775808),
        (values.FLOAT8, "1.5", 1.5),
        (values.FLOAT4, "NaN", None),
        (values.NUMERIC, "100.50", 100.5),
        (values.NUMERIC, "Infinity", None),
        (values.BPCHAR, "ab   ", "ab"),
        (
            values.UUID,
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        ),
        (values.TIMESTAMP, "2024-01-02 10:00:00.5", "2024-01-02 10:00:00.5"),
        (values.TIMESTAMPTZ, "2024-01-02 10:00:00.5+00", "2024-01-02T10:00:00.5+00:00"),
        (values.TIMESTAMPTZ, "infinity", "infinity"),
        (values.DATE, "2024-01-02", "2024-01-02"),
        (
            values.JSONB,
            '{"a": [1, 2.5, 12345678901234567890], "b": null}',
            {"a": [1, 2.5, 1.2345678901234567e19], "b": None},
        ),
        (values.BYTEA, "\\x0102ff", "AQL/"),
    ],
)
def test_drasi_s_type_mapping(type_oid: int, text: str, value: object) -> None:
    read = ValueReader("s").read(type_oid, text, "t.c")
    assert read == value
    assert type(read) is type(value)  # 7 == 7.0: an integer column must not become a float


def test_a_column_without_a_mapping_is_text_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reader = ValueReader("shop")
    with caplog.at_level(logging.WARNING, logger="drasi_ray.postgres"):
        assert reader.read(1007, "{1,2}", "orders.tags") == "{1,2}"
        assert reader.read(1007, "{3}", "orders.tags") == "{3}"
        assert reader.read(values.JSON, "1e400", "orders.doc") == "1e400"  # beyond a double
    assert [record.getMessage().split(":")[1].strip() for record in caplog.records] == [
        "column orders.tags is read as text",
        "column orders.doc is read as text",
    ]
    assert reader.warned == {"orders.tags", "orders.doc"}


def _orders(key: tuple[str, ...] = ("id",)) -> TableInfo:
    columns = tuple(Column(name, oid) for name, oid, _ in ORDERS)
    return TableInfo("public", "orders", columns, key, "primary key")


def _mapper(table: TableInfo) -> RowMapper:
    placed = RelationSpec(
        label="PLACED_BY", table="orders", columns=("customer_id",), references="customers"
    )
    return RowMapper({table.qualified: table}, [placed], ValueReader("s"))


def test_a_row_is_a_node_with_its_relation() -> None:
    table = _orders()
    changes = _mapper(table).insert(table, {"id": "7", "customer_id": "3", "note": None})
    (op, row), (rel_op, placed) = changes
    assert (op, row.id, row.labels, dict(row.properties)) == (
        Op.INSERT,
        "orders:7",
        ("orders",),
        {"id": 7, "customer_id": 3, "note": None},
    )
    assert (rel_op, placed.id, placed.start_id, placed.end_id) == (
        Op.INSERT,
        "PLACED_BY:orders:7",
        "orders:7",
        "customers:3",
    )


def test_composite_keys_join_with_underscores_and_key_changes_replace_the_element() -> None:
    table = _orders(("customer_id", "id"))
    mapper = _mapper(table)
    assert (
        mapper.insert(table, {"id": "7", "customer_id": "3", "note": "x"})[0][1].id == "orders:3_7"
    )
    changes = mapper.update(
        table,
        {"id": "7", "customer_id": "3", "note": None},
        {"id": "8", "customer_id": "3", "note": "x"},
    )
    assert [(op, element.id) for op, element in changes] == [
        (Op.DELETE, "orders:3_7"),
        (Op.DELETE, "PLACED_BY:orders:3_7"),
        (Op.INSERT, "orders:3_8"),
        (Op.INSERT, "PLACED_BY:orders:3_8"),
    ]


def test_an_unchanged_toast_value_is_left_out_and_a_null_reference_deletes_the_relation() -> None:
    table = _orders()
    changes = _mapper(table).update(
        table, None, {"id": "7", "customer_id": None, "note": UNCHANGED}
    )
    (op, row), (rel_op, placed) = changes
    assert op is Op.UPDATE and dict(row.properties) == {"id": 7, "customer_id": None}
    assert (rel_op, placed.id) == (Op.DELETE, "PLACED_BY:orders:7")


def test_a_key_without_its_value_is_refused_with_the_fix() -> None:
    table = _orders()
    with pytest.raises(RowError, match="REPLICA IDENTITY FULL"):
        _mapper(table).update(table, None, {"id": UNCHANGED, "customer_id": "1", "note": "x"})


def test_key_text_writes_values_as_drasi_does() -> None:
    assert [key_text(v) for v in (5, 2.0, 2.5, True, "a", None)] == [
        "5",
        "2",
        "2.5",
        "true",
        "a",
        "null",
    ]


def test_transactions_are_assembled_at_their_commit() -> None:
    table = _orders()
    assembler = TransactionAssembler(_mapper(table))
    feed = [
        b"B" + struct.pack(">QqI", 0x200, 1_000_000, 9),
        _relation(1, "orders", ORDERS),
        _relation(2, "other", [("id", values.INT4, True)]),
        b"I" + struct.pack(">I", 1) + b"N" + _tuple("1", None, "a"),
        b"I" + struct.pack(">I", 2) + b"N" + _tuple("5"),  # a table the source does not read
        b"T" + struct.pack(">iB", 1, 0) + struct.pack(">I", 1),
    ]
    assert all(assembler.feed(parse(message)) is None for message in feed)
    done = assembler.feed(parse(b"C\x00" + struct.pack(">QQq", 0x200, 0x230, 1_000_000)))
    assert done is not None and (done.end_lsn, done.commit_time_us) == (0x230, 1_000_000)
    assert [s[1].id if isinstance(s, tuple) else "truncate" for s in done.steps] == [
        "orders:1",
        "PLACED_BY:orders:1",
        "truncate",
    ]
    assert isinstance(done.steps[-1], Truncation) and done.change_count == 2


def test_entries_are_numbered_at_the_lsn_and_decode_to_its_versions() -> None:
    table = _orders()
    mapper = _mapper(table)
    changes = [
        (op, element, 2_000_000_000 + n)
        for n in range(5)
        for op, element in mapper.insert(table, {"id": str(n), "customer_id": "1", "note": "x"})
    ]
    written = entries(0x230, changes, max_changes=4)
    assert [entry_id for entry_id, _ in written] == ["560-0", "560-1", "560-2"]
    decoded = [
        c for entry_id, data in written for c in decode_entry(entry_id, {b"data": data}).changes
    ]
    assert [c.version for c in decoded[:5]] == [
        (560, 0, 0),
        (560, 0, 1),
        (560, 0, 2),
        (560, 0, 3),
        (560, 1, 0),
    ]
    assert [c.element.id for c in decoded] == [element.id for _, element, _ in changes]
    assert [c.element.start_id for c in decoded[:2]] == [None, "orders:0"]
    assert (
        decoded[0].element.effective_from == 2_000 and decoded[-1].timing.source_ns == 2_000_000_004
    )
    assert orjson.loads(written[0][1])["id"] == "560-0"


def _source(**properties: object) -> dict[str, object]:
    base = {"database": "shop", "user": "drasi", "redis_url": "redis://localhost:6379"}
    return {"id": "shop", "kind": "PostgreSQL", "properties": {**base, **properties}}


def test_yaml_kind_postgresql_and_its_consumer_settings() -> None:
    config = AppConfig.from_mapping({"id": "app", "sources": [_source(consumer={"consumers": 2})]})
    spec = config.sources[0]
    assert isinstance(spec, PostgresSourceSpec)
    settings = spec.stream_settings("app")
    assert settings.stream_keys == ("drasi:app:postgres:shop",)
    assert (settings.consumers, settings.start_id) == (2, "0")


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"password": "secret"}, "a password is never written in the configuration"),
        ({"password_env": "A", "password_file": "/b"}, "password_env or password_file, not both"),
        ({"consumer": {"stream_key": "x"}}, "stream_key: set by the PostgreSQL source itself"),
        ({"consumer": {"batch_sise": 1}}, "consumer: batch_sise: unknown key"),
        ({"slot_name": "Bad-Slot"}, "a replication slot name is 1 to 63"),
        (
            {"tables": ["orders"], "table_keys": [{"table": "items", "key_columns": ["id"]}]},
            "not one of the tables",
        ),
        ({"hostt": "x"}, "sources.0.properties.hostt: unknown key"),
    ],
)
def test_wrong_settings_are_refused_naming_them(
    properties: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as raised:
        AppConfig.from_mapping({"sources": [_source(**properties)]})
    assert "secret" not in str(raised.value)


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ConfigError, match=re.escape("sources.0: kind must be 'platform'")):
        AppConfig.from_mapping({"sources": [{"id": "x", "kind": "MySQL", "properties": {}}]})
