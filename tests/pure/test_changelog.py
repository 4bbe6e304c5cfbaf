"""The Arrow change log without Ray or Spark: columns, typed properties, consolidation, spill."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from drasi_ray.analytics.changelog import BASE_SCHEMA, ChangeLog, conform
from drasi_ray.model.changes import DecodedEntry, ElementChange, Op, Timing, node, relation
from drasi_ray.model.config import AnalyticsConfig, AppConfig
from drasi_ray.model.errors import ConfigError
from drasi_ray.shards.core import ShardCore
from drasi_ray.shards.records import ChangeRecord, change_record


class ListStore:
    """A BlockStore keeping tables in a dict; counts reads to show merges happen."""

    def __init__(self) -> None:
        self.tables: dict[int, pa.Table] = {}

    def put(self, table: pa.Table) -> int:
        handle = len(self.tables)
        self.tables[handle] = table
        return handle

    def get(self, handle: int) -> pa.Table:
        return self.tables[handle]


def record(
    element_id: str,
    ms: int,
    properties: dict[str, Any],
    op: str = "update",
    labels: tuple[str, ...] = ("Sensor",),
) -> ChangeRecord:
    return ChangeRecord(
        f"{ms}-0",
        ms,
        0,
        0,
        op,
        "node",
        element_id,
        labels,
        ms,
        properties,
        None,
        None,
        op != "delete",
    )


def make_log(spill_bytes: int = 1 << 40, **options: Any) -> tuple[ChangeLog[int], ListStore]:
    store = ListStore()
    return ChangeLog(store, spill_bytes=spill_bytes, **options), store


def table_of(log: ChangeLog[int], store: ListStore, max_blocks: int = 4) -> pa.Table:
    snapshot = log.snapshot(max_blocks)
    tables = [store.get(handle) for handle in snapshot.blocks]
    tables += [pq.read_table(path) for path in snapshot.spilled]
    return pa.concat_tables([conform(table, snapshot.schema) for table in tables])


def test_sealed_block_has_the_base_columns_and_the_values() -> None:
    log, store = make_log()
    log.append("sensors", [record("s1", 1_700_000_000_123, {"t": 1.5, "tags": ["a"]})])
    log.append("sensors", [record("s2", 1_700_000_000_456, {}, op="delete", labels=())])
    assert log.seal() == 2
    rows = table_of(log, store).to_pylist()
    assert [row["element_id"] for row in rows] == ["s1", "s2"]
    first = rows[0]
    assert first["source_id"] == "sensors"
    assert first["stream_id"] == "1700000000123-0"
    assert first["labels"] == ["Sensor"]
    assert first["effective_from"].timestamp() == pytest.approx(1_700_000_000.123)
    assert orjson.loads(first["properties"]) == {"t": 1.5, "tags": ["a"]}
    assert rows[1]["labels"] == []
    assert rows[1]["present"] is False
    assert table_of(log, store).schema.field("effective_from").type == pa.timestamp("ms", "UTC")


def test_uniform_properties_get_typed_columns_and_numbers_are_doubles() -> None:
    log, store = make_log()
    log.append("s", [record("a", 1, {"n": 1, "x": "on", "ok": True, "nested": {"k": 1}})])
    log.append("s", [record("b", 2, {"n": 2.5, "x": None, "ok": False})])
    schema = log.snapshot(4).schema
    assert schema.field("prop_n").type == pa.float64()
    assert schema.field("prop_x").type == pa.string()
    assert schema.field("prop_ok").type == pa.bool_()
    assert "prop_nested" not in schema.names  # nested values stay in the JSON only
    rows = table_of(log, store).to_pylist()
    assert [(r["prop_n"], r["prop_x"], r["prop_ok"]) for r in rows] == [
        (1.0, "on", True),
        (2.5, None, False),
    ]


def test_a_key_that_turns_non_uniform_later_loses_its_column_in_every_block() -> None:
    log, store = make_log()
    log.append("s", [record("a", 1, {"v": 1.0, "w": 1.0})])
    log.seal()
    log.append("s", [record("b", 2, {"v": "high", "w": 2.0})])
    table = table_of(log, store)
    assert "prop_v" not in table.schema.names
    assert table.column("prop_w").to_pylist() == [1.0, 2.0]
    assert [orjson.loads(text)["v"] for text in table.column("properties").to_pylist()] == [
        1.0,
        "high",
    ]


def test_keys_spark_cannot_name_apart_have_no_typed_column() -> None:
    log, _ = make_log(max_typed_columns=3)
    log.append("s", [record("a", 1, {"Temp": 1.0, "temp": 2.0, "bad key": 3.0, "ok": 4.0})])
    log.append("s", [record("b", 2, {"late": 5.0})])  # past max_typed_columns
    names = log.snapshot(4).schema.names
    typed = [name for name in names if name.startswith("prop_")]
    assert typed == ["prop_ok"]


def test_snapshot_merges_new_blocks_and_caps_their_number() -> None:
    log, store = make_log()
    for ms in range(10):
        log.append("s", [record(f"e{ms}", ms, {"v": float(ms)})])
        log.seal()
    first = log.snapshot(max_blocks=2)
    assert len(first.blocks) == 1 and first.rows == 10
    assert log.snapshot(max_blocks=2).epoch == first.epoch  # nothing new: same content
    for batch in range(3):
        log.append("s", [record("x", 100 + batch, {"v": 1.0})])
        log.snapshot(max_blocks=2)
    last = log.snapshot(max_blocks=2)
    assert len(last.blocks) <= 2
    assert last.rows == 13 and last.epoch != first.epoch
    for handle in last.blocks:  # contiguous: Spark's workers need single-chunk columns
        assert all(column.num_chunks == 1 for column in store.get(handle).columns)


def test_spill_writes_parquet_releases_blocks_and_keeps_every_row(tmp_path: Path) -> None:
    log, store = make_log(spill_bytes=2_000, spill_dir=str(tmp_path))
    for batch in range(5):
        log.append("s", [record(f"e{batch}-{i}", batch * 10 + i, {"v": 1.0}) for i in range(20)])
        log.seal()
    stats = log.stats()
    assert stats["spilled_files"] >= 1
    assert stats["bytes_in_store"] <= 2_000
    assert stats["rows"] == 100 == stats["spilled_rows"] + stats["rows_in_store"]
    snapshot = log.snapshot(4)
    assert all(Path(path).is_relative_to(tmp_path) for path in snapshot.spilled)
    assert table_of(log, store).num_rows == 100
    log.close()
    assert not any(Path(path).exists() for path in snapshot.spilled)


def test_open_rows_are_not_sealed_until_asked() -> None:
    log, _ = make_log()
    assert log.append("s", [record("a", 1, {}), record("b", 2, {})]) == 2
    assert (log.rows, log.open_rows) == (0, 2)
    log.seal()
    assert (log.rows, log.open_rows, log.appended) == (2, 0, 2)
    assert log.seal() == 0


def test_empty_log_snapshot_has_the_base_schema() -> None:
    log, _ = make_log()
    snapshot = log.snapshot(4)
    assert snapshot.blocks == () and snapshot.rows == 0
    assert snapshot.schema == BASE_SCHEMA


def _change(op: Op, element_id: str, entry: tuple[int, int], properties: dict[str, Any]) -> Any:
    # The event's own time, the same however often it is re-published.
    element = node(element_id, ["Sensor"], properties, effective_from=1_000)
    return ElementChange(op, element, (entry[0], entry[1], 0), Timing(0))


def test_the_log_holds_every_valid_change_once_overtaken_ones_included() -> None:
    """The shard forwards every valid change; the log keeps each once, so a redelivery (its
    position) and the same event published twice (its content) are one row, and a change
    overtaken by a newer change of its element (another consumer's batch applied first) is a
    row too (issue #27, item 10)."""
    core = ShardCore()
    core.applied = []
    first = DecodedEntry("5-0", (_change(Op.INSERT, "s1", (5, 0), {"t": 1.0}),))
    same_content = DecodedEntry("6-0", (_change(Op.INSERT, "s1", (6, 0), {"t": 1.0}),))
    update = DecodedEntry("7-0", (_change(Op.UPDATE, "s1", (7, 0), {"u": 2}),))
    overtaken = DecodedEntry("4-0", (_change(Op.UPDATE, "s1", (4, 0), {"t": 0.5}),))
    core.apply_entries("src", [first, first, same_content, update])
    core.apply_entries("src", [update, overtaken])  # a redelivery, then a late older change
    log, store = make_log()
    applied = [change_record(*forwarded) for forwarded in core.applied if forwarded[2]]
    others = [change_record(*forwarded) for forwarded in core.applied if not forwarded[2]]
    log.append("src", applied, others)
    log.append("src", applied, others)  # again
    rows = table_of(log, store).to_pylist()
    by_version = sorted(rows, key=lambda row: (row["version_ms"], row["version_seq"]))
    assert [(r["stream_id"], r["op"]) for r in by_version] == [
        ("4-0", "update"), ("5-0", "insert"), ("7-0", "update"),
    ]  # fmt: skip
    assert log.duplicates == 3 + 6 and log.appended == 3
    assert orjson.loads(by_version[2]["properties"]) == {"t": 1.0, "u": 2}  # state after it
    assert orjson.loads(by_version[0]["properties"]) == {"t": 0.5}  # the change's own


def test_delete_record_carries_the_state_before_and_relations_their_ends() -> None:
    core = ShardCore()
    core.applied = []
    knows = relation("r1", ["KNOWS"], "a", "b", {"since": 2020}, effective_from=1)
    insert = ElementChange(Op.INSERT, knows, (1, 0, 0), Timing(0))
    delete = ElementChange(Op.DELETE, knows, (2, 0, 0), Timing(0))
    core.apply_entries("src", [DecodedEntry("1-0", (insert,)), DecodedEntry("2-0", (delete,))])
    records = [change_record(*applied) for applied in core.applied]
    assert [(r.op, r.kind, r.start_id, r.end_id, r.present) for r in records] == [
        ("insert", "relation", "a", "b", True),
        ("delete", "relation", "a", "b", False),
    ]
    assert records[1].properties == {"since": 2020}


def test_analytics_config_rejects_unknown_keys_and_defaults_off() -> None:
    assert AnalyticsConfig().enabled is False
    config = AppConfig.from_mapping({"analytics": {"enabled": True, "spark": {"num_executors": 2}}})
    assert config.analytics.spark.num_executors == 2
    with pytest.raises(ConfigError, match=r"analytics\.spill_byte: unknown key"):
        AppConfig.from_mapping({"analytics": {"spill_byte": 1}})
    with pytest.raises(ConfigError, match=r"analytics\.spark\.cores: unknown key"):
        AppConfig.from_mapping({"analytics": {"spark": {"cores": 1}}})


def test_analytics_of_an_app_without_them_is_a_config_error() -> None:
    from drasi_ray import DrasiRay

    with pytest.raises(ConfigError, match="not enabled"):
        _ = DrasiRay("no-analytics").analytics


def test_importing_drasi_ray_does_not_import_spark() -> None:
    import subprocess
    import sys

    code = (
        "import sys, drasi_ray, drasi_ray.ops.cli; "
        "print(any(m.startswith(('pyspark', 'raydp')) for m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_an_old_event_published_again_after_a_newer_one_is_a_row() -> None:
    """The same content is a duplicate only when the store took nothing from it: an old
    event written again after a newer change moves the element back, and is a row."""
    core = ShardCore()
    core.applied = []
    entries = [
        DecodedEntry("5-0", (_change(Op.UPDATE, "s1", (5, 0), {"t": 1.0}),)),
        DecodedEntry("7-0", (_change(Op.UPDATE, "s1", (7, 0), {"t": 2.0}),)),
        DecodedEntry("8-0", (_change(Op.UPDATE, "s1", (8, 0), {"t": 1.0}),)),  # 5-0 again
    ]
    core.apply_entries("src", entries)
    log, store = make_log()
    log.append("src", [change_record(*forwarded) for forwarded in core.applied])
    assert [row["stream_id"] for row in table_of(log, store).to_pylist()] == ["5-0", "7-0", "8-0"]
