"""A partitioned source: its streams in the settings, and which stream an element goes to."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import orjson
import pytest

from drasi_ray import AppConfig, ConfigError, PlatformSource, PlatformSourceConfig
from drasi_ray.model.config import validated
from drasi_ray.model.partitions import event_element_id, stream_for
from drasi_ray.model.shards import shard_of
from drasi_ray.ops.publish import publish_lines
from drasi_ray.source.decode import decode_entry

STREAMS = ("p-0", "p-1", "p-2")


def test_one_stream_key_is_the_one_stream_case() -> None:
    one = PlatformSourceConfig(redis_url="redis://h:1", stream_keys=("s",))
    assert one.stream_keys == ("s",)
    assert one == PlatformSourceConfig(redis_url="redis://h:1", stream_keys=["s"])
    built = PlatformSource.builder("src").with_redis_url("redis://h:1").with_stream_key("s")
    assert built.build().config == one


def test_several_streams_by_builder_and_yaml(tmp_path: Path) -> None:
    built = (
        PlatformSource.builder("src")
        .with_redis_url("redis://h:1")
        .with_stream_keys(list(STREAMS))
        .build()
    )
    assert built.config.stream_keys == STREAMS
    assert built.config.dead_letter_key == "p-0:dlq"  # one per source: the first stream's
    path = tmp_path / "app.yaml"
    path.write_text(
        "sources:\n  - id: src\n    properties:\n      redis_url: redis://h:1\n"
        "      stream_keys: [p-0, p-1, p-2]\n"
    )
    assert AppConfig.from_yaml(path).sources[0].properties == built.config


@pytest.mark.parametrize(
    ("settings", "fragment"),
    [
        ({"stream_keys": []}, "stream_keys: Tuple should have at least 1 item"),
        ({"stream_keys": ["a", ""]}, "stream_keys: Value error, a stream key must not be empty"),
        ({"stream_keys": ["a", "b", "a"]}, "stream keys must be distinct; repeated: a"),
        ({"stream_key": "a", "stream_keys": ["b"]}, "stream_key .* or stream_keys .*, not both"),
        ({"stream_keys": ["a", "b"], "dead_letter_stream": "b"}, "'b' is one of the source's"),
        ({}, "stream_keys: Field required"),
    ],
)
def test_bad_streams_are_refused_saying_why(settings: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        validated(PlatformSourceConfig, redis_url="redis://h:1", **settings)


def test_with_stream_keys_refuses_a_bare_string() -> None:
    with pytest.raises(ConfigError, match="a list of stream keys, not one string"):
        PlatformSource.builder("src").with_stream_keys("p-0")


def test_an_element_always_goes_to_the_same_stream_and_ids_spread() -> None:
    ids = [f"sensor-{n}" for n in range(3000)]
    first = [stream_for(element_id, STREAMS) for element_id in ids]
    assert first == [stream_for(element_id, list(STREAMS)) for element_id in ids]
    assert all(stream == STREAMS[shard_of(i, 3)] for i, stream in zip(ids, first, strict=True))
    counts = collections.Counter(first)
    assert set(counts) == set(STREAMS) and min(counts.values()) > 900
    assert {stream_for(i, ["only"]) for i in ids} == {"only"}
    with pytest.raises(ConfigError, match="at least one stream"):
        stream_for("x", [])


def _event(op: str, element_id: str, value: int) -> dict[str, Any]:
    side = "before" if op == "d" else "after"
    element = {"id": element_id, "labels": ["Sensor"], "properties": {"v": value}}
    source = {"db": "s", "table": "node", "ts_ns": value}
    return {"op": op, "payload": {side: element, "source": source}}


def test_event_element_id_reads_the_side_of_the_op() -> None:
    assert event_element_id(_event("i", "a", 1)) == "a"
    assert event_element_id(_event("d", "b", 1)) == "b"
    assert event_element_id({"op": "u", "payload": {"before": {"id": "c"}}}) is None
    assert event_element_id({"op": "i"}) is None


class _Recorder:
    """A publisher that numbers entries per stream (the interface publish_lines uses)."""

    def __init__(self) -> None:
        self.streams: dict[str, list[bytes]] = collections.defaultdict(list)

    def publish(
        self, stream: str, payloads: list[bytes], maxlen: int | None = None, chunk: int = 0
    ) -> list[str]:
        entries = self.streams[stream]
        entries.extend(payloads)
        return [f"{len(entries) - len(payloads) + n + 1}-0" for n in range(len(payloads))]


def test_publish_partitions_every_element_onto_its_stream_in_order() -> None:
    events = [_event("u", f"s{n % 7}", n) for n in range(60)] + [_event("d", "s3", 99)]
    lines = [orjson.dumps(event) for event in events]
    lines.insert(10, b"")  # blank lines are skipped
    recorder = _Recorder()
    ids = publish_lines(recorder, list(STREAMS), lines, batch=8, events_per_entry=4)  # type: ignore[arg-type]
    assert len(ids) == sum(len(entries) for entries in recorder.streams.values())
    seen: dict[str, list[int]] = collections.defaultdict(list)
    for stream, payloads in recorder.streams.items():
        for number, payload in enumerate(payloads, start=1):
            entry = decode_entry(f"{number}-0", {b"data": payload})
            for change in entry.changes:
                assert stream_for(change.element.id, STREAMS) == stream
                seen[change.element.id].append(int(change.element.properties.get("v", 99)))
    assert seen == {
        f"s{k}": [n for n in range(60) if n % 7 == k] + ([99] if k == 3 else []) for k in range(7)
    }
