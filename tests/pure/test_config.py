"""Settings: builders, config objects and YAML, with errors that name the bad key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from drasi_ray import (
    AppConfig,
    CallbackReaction,
    ConfigError,
    DispatchMode,
    DrasiRay,
    PlatformReaction,
    PlatformSource,
    PlatformSourceConfig,
    Query,
    QuerySyntaxError,
    StateConfig,
)
from drasi_ray.actors.fused import FusedConsumerSpec
from drasi_ray.coordinator.registry import Registry
from drasi_ray.model import keys
from drasi_ray.model.config import FUSED_READ_LIMIT, expand_secrets
from drasi_ray.model.registrations import QueryRegistration, SubscriberSpec

YAML = """
id: sensors-app
sources:
  - id: sensors
    source_type: platform
    auto_start: true
    dispatch_mode: broadcast
    dispatch_buffer_capacity: 1500
    properties:
      redis_url: "redis://localhost:6379"
      stream_key: "sensor-changes"
      consumer_group: "drasi-consumers"
      consumer_name: "consumer-1"
      batch_size: 50
      block_ms: 10000
      consumers: 3
queries:
  - id: hot
    sources: [sensors]
    query: MATCH (s:Sensor) WHERE s.temperature > 70 RETURN s.id AS id
"""


def test_builder_matches_config_object() -> None:
    built = (
        PlatformSource.builder("src")
        .with_redis_url("redis://localhost:6379")
        .with_stream_key("sensor-changes")
        .with_consumer_group("drasi-consumers")
        .with_consumer_name("consumer")
        .with_consumers(3)
        .with_batch_size(50)
        .with_block_ms(10000)
        .with_dispatch_mode("broadcast")
        .with_dispatch_buffer_capacity(1500)
        .with_auto_start(False)
        .build()
    )
    config = PlatformSourceConfig(
        redis_url="redis://localhost:6379",
        stream_keys=("sensor-changes",),
        consumer_group="drasi-consumers",
        consumer_name="consumer",
        consumers=3,
        batch_size=50,
        block_ms=10000,
    )
    assert built.config == config
    assert built.dispatch_mode is DispatchMode.BROADCAST
    assert built.dispatch_buffer_capacity == 1500
    assert built.auto_start is False
    assert built.consumer_names == ["consumer-0", "consumer-1", "consumer-2"]


def test_defaults_follow_drasi() -> None:
    config = PlatformSourceConfig(redis_url="redis://h:1", stream_keys=("s",))
    assert config.consumer_group == "drasi_ray"  # outside an app; an app's own below
    assert (config.batch_size, config.block_ms, config.consumers) == (100, 5000, 1)
    assert config.start_id == "$"
    assert config.dead_letter_key == "s:dlq"
    assert PlatformSource("src", config).consumer_names == ["src-0"]


@pytest.mark.parametrize(
    ("setting", "value", "fragment"),
    [
        ("with_batch_size", 0, "batch_size"),
        ("with_redis_url", "http://x", "redis_url"),
        ("with_start_id", "later", "start_id"),
        ("with_consumers", 0, "consumers"),
        ("with_dispatch_mode", "fanout", "dispatch_mode"),
    ],
)
def test_builder_rejects_bad_values_naming_them(setting: str, value: object, fragment: str) -> None:
    builder = PlatformSource.builder("s").with_redis_url("redis://h:1").with_stream_key("k")
    with pytest.raises(ConfigError, match=fragment):
        getattr(builder, setting)(value).build()


def test_missing_required_setting_is_named() -> None:
    with pytest.raises(ConfigError, match="stream_key"):
        PlatformSource.builder("s").with_redis_url("redis://h:1").build()


def test_yaml_schema(tmp_path: Path) -> None:
    path = tmp_path / "app.yaml"
    path.write_text(YAML)
    config = AppConfig.from_yaml(path)
    assert config.id == "sensors-app"
    (source,) = config.sources
    assert source.dispatch_mode is DispatchMode.BROADCAST
    assert isinstance(source.properties, PlatformSourceConfig)
    assert source.properties.consumers == 3
    app = DrasiRay.from_yaml(path)
    assert app.source_ids == ["sensors"] and app.query_ids == ["hot"]


@pytest.mark.parametrize(
    ("old", "new", "fragment"),
    [
        ("batch_size: 50", "batch_sise: 50", "sources.0.properties.batch_sise: unknown key"),
        ("id: sensors-app", "id: sensors-app\nextra: 1", "extra: unknown key"),
        ("source_type: platform", "source_type: kafka", "source_type"),
        ("sources: [sensors]", "sources: []", "queries.0.sources"),
        ("sources: [sensors]", "sources: [sensors]\n    history: {max_version: 5}", "max_version"),
        (
            "sources: [sensors]",
            "sources: [sensors]\n    history: {max_versions: 0}",
            "queries.0.history.max_versions",
        ),
    ],
)
def test_yaml_errors_name_the_key(tmp_path: Path, old: str, new: str, fragment: str) -> None:
    path = tmp_path / "app.yaml"
    path.write_text(YAML.replace(old, new))
    with pytest.raises(ConfigError, match=fragment.replace(".", r"\.")):
        DrasiRay.from_yaml(path)


def test_yaml_history_limits(tmp_path: Path) -> None:
    path = tmp_path / "app.yaml"
    history = "sources: [sensors]\n    history: {max_versions: 5, retention_ms: 3600000}"
    path.write_text(YAML.replace("sources: [sensors]", history))
    (query,) = AppConfig.from_yaml(path).queries
    assert (query.history.max_versions, query.history.retention_ms) == (5, 3_600_000)
    built = Query.cypher("q").query("MATCH (n) RETURN n").from_source("s").with_history(5).build()
    assert built.history.limits().max_versions == 5 and built.history.retention_ms is None


def test_yaml_query_error_has_position(tmp_path: Path) -> None:
    path = tmp_path / "app.yaml"
    path.write_text(YAML.replace("RETURN s.id AS id", "RETURN s.id AS id ORDER BY id"))
    with pytest.raises(QuerySyntaxError) as caught:
        DrasiRay.from_yaml(path)
    assert caught.value.line == 1 and caught.value.column > 1


def test_add_query_rejects_unsupported_features_at_once() -> None:
    app = DrasiRay()
    with pytest.raises(QuerySyntaxError, match="line 1, column"):
        app.add_query(
            Query.cypher("q").query("MATCH (n:A) RETURN n.x LIMIT 3").from_source("s").build()
        )
    assert app.query_ids == []


def test_query_without_known_source_is_refused_at_start() -> None:
    app = DrasiRay()
    app.add_query(Query.cypher("q").query("MATCH (n:A) RETURN n.x").from_source("nope").build())
    with pytest.raises(ConfigError, match="unknown source"):
        app.start()


def test_duplicate_ids_are_refused() -> None:
    source = PlatformSource("s", PlatformSourceConfig(redis_url="redis://h:1", stream_keys=("k",)))
    app = DrasiRay().add_source(source)
    with pytest.raises(ConfigError, match="already added"):
        app.add_source(source)


def test_passwords_never_show_in_reprs() -> None:
    config = PlatformSourceConfig(redis_url="redis://user:hunter2@host:6379/0", stream_keys=("s",))
    source = PlatformSource("src", config)
    for text in (repr(config), str(config), repr(source)):
        assert "hunter2" not in text
        assert "redis://user:***@host:6379/0" in text
    assert config.redis_url.endswith("hunter2@host:6379/0")  # the real value is intact


def test_the_default_redis_rule_is_one_rule_for_state_and_results() -> None:
    source, state = "redis://source:6379", "redis://state:6379"
    assert StateConfig().state_redis_url(source) == source
    assert StateConfig(redis_url=state).state_redis_url(source) == state
    assert StateConfig(durable=False, redis_url=state).state_redis_url(source) is None
    assert StateConfig().state_redis_url(None) is None
    assert StateConfig().results_redis_url(source) == source
    assert StateConfig(redis_url=state).results_redis_url(source) == state
    assert StateConfig(durable=False).results_redis_url(source) == source  # results stay


def test_a_callback_reaction_survives_the_durable_control_state() -> None:
    """A query's registration is kept as JSON for the control plane's restart: a callback
    reaction's function, even a closure, comes back as a function that does the same."""
    prefix = "got "
    query = (
        Query.cypher("hot")
        .query("MATCH (s:Sensor) RETURN s.id AS id")
        .from_source("sensors")
        .with_reaction(CallbackReaction(function=lambda result: prefix + result))
        .with_reaction(CallbackReaction(function="json:dumps"))
        .build()
    )
    registration = QueryRegistration(query, "drasi/query-host-0", ("Sensor",), None)
    restored = QueryRegistration.from_json(registration.to_json())
    closure, named = restored.config.reactions
    assert isinstance(closure, CallbackReaction) and isinstance(named, CallbackReaction)
    assert named.function == "json:dumps"
    assert closure.resolve()("row") == "got row"


def test_a_stored_registration_holds_no_password_and_gets_it_back() -> None:
    """The JSON kept in Redis has every Redis URL without its password; loading it with the
    app's URLs gives the passwords back (issue #27, item 5)."""
    secret_url = "rediss://user:pa55@redis.internal:6380/0?ssl_ca_certs=/ca.crt&password=pa55"
    query = (
        Query.cypher("hot")
        .query("MATCH (s:Sensor) RETURN s.id AS id")
        .from_source("sensors")
        .with_reaction(PlatformReaction(redis_url=secret_url))
        .build()
    )
    registration = QueryRegistration(query, "h", ("Sensor",), None, chain_url=secret_url)
    stored = registration.to_json()
    assert b"pa55" not in stored and b"ssl_ca_certs=/ca.crt" in stored
    assert QueryRegistration.from_json(stored, (secret_url,)) == registration
    (blank,) = QueryRegistration.from_json(stored).config.reactions
    assert isinstance(blank, PlatformReaction) and blank.redis_url is not None
    assert "pa55" not in blank.redis_url


def test_a_stored_fused_consumer_holds_no_password_and_gets_it_back() -> None:
    """What the fused actor keeps in Redis of each consumer it runs, for its restart: the
    settings whole, the source's Redis URL without its password (given back from the app's)."""
    secret_url = "redis://:pa55@redis.internal:6380/2"
    settings = (
        PlatformSource.builder("sensors")
        .with_redis_url(secret_url)
        .with_stream_keys(["s-0", "s-1"])
        .with_batch_size(7)
        .build()
        .config.in_app("app")
        .in_fused_actor()
    )
    spec = FusedConsumerSpec("sensors", settings, "sensors-0")
    stored = spec.to_json()
    assert b"pa55" not in stored and b"redis.internal:6380/2" in stored
    assert FusedConsumerSpec.from_json(stored, (secret_url,)) == spec
    assert "pa55" not in FusedConsumerSpec.from_json(stored).settings.redis_url


def test_values_take_secrets_from_the_environment_and_files(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text("from-file\n")
    raw = {"a": ["${A}", "x-${file:" + str(secret) + "}-y", "$${A} stays"], "b": {"c": 1}}
    assert expand_secrets(raw, {"A": "env"}) == {
        "a": ["env", "x-from-file-y", "${A} stays"],
        "b": {"c": 1},
    }
    with pytest.raises(ConfigError, match=r"config: a.0: the environment variable 'A' is not set"):
        expand_secrets(raw, {})


def test_an_app_reads_with_its_own_consumer_group_unless_one_is_named() -> None:
    """Two apps on one stream each see every entry (issue #27, item 6)."""
    source: dict[str, Any] = {
        "id": "s",
        "properties": {"redis_url": "redis://h:1", "stream_key": "k"},
    }
    one = AppConfig.model_validate({"id": "one", "sources": [source]})
    assert one.sources[0].stream_settings("one").consumer_group == keys.consumer_group("one")
    named = {**source, "properties": {**source["properties"], "consumer_group": "shared"}}
    two = AppConfig.model_validate({"id": "two", "sources": [named]})
    assert two.sources[0].stream_settings("two").consumer_group == "shared"
    app = DrasiRay("three").add_source(
        PlatformSource.builder("s").with_redis_url("redis://h:1").with_stream_key("k").build()
    )
    assert app._sources["s"].config.consumer_group == keys.consumer_group("three")


def test_the_registry_hands_a_restarted_host_its_subscriptions_and_forgets_removed_ones() -> None:
    """A restarted host opens again the subscriber buffers of its own queries only; a query
    that is unregistered takes its subscriptions with it."""
    registry = Registry()
    for query_id, host in (("hot", "drasi/query-host-0"), ("cold", "drasi/query-host-1")):
        text = "MATCH (s:Sensor) RETURN s.id AS id"
        query = Query.cypher(query_id).query(text).from_source("sensors").build()
        registry.register(QueryRegistration(query, host, ("Sensor",), None))
    hot = SubscriberSpec("hot", "sub-1", 10, DispatchMode.CHANNEL)
    cold = SubscriberSpec("cold", "sub-2", 5, DispatchMode.BROADCAST)
    registry.subscribers.update({hot.subscriber_id: hot, cold.subscriber_id: cold})
    assert registry.subscribers_of("drasi/query-host-0") == [hot]
    assert registry.subscribers_of("drasi/query-host-1") == [cold]
    registry.unregister("hot")
    assert registry.subscribers_of("drasi/query-host-0") == []
    assert list(registry.subscribers) == ["sub-2"]


def test_the_fused_layout_needs_durable_state_and_auto_picks_it_only_then() -> None:
    from drasi_ray.model.config import Layout, ScalingConfig
    from drasi_ray.model.errors import ConfigError

    with pytest.raises(ConfigError, match="layout fused needs durable state"):
        ScalingConfig(layout=Layout.FUSED).fused(durable=False)
    assert ScalingConfig().fused(durable=True)
    assert not ScalingConfig().fused(durable=False)
    assert not ScalingConfig(shards=2).fused(durable=True)
    assert not ScalingConfig(layout=Layout.ACTORS).fused(durable=True)


def test_the_consumer_in_the_fused_actor_reads_at_most_fused_read_limit_unless_told() -> None:
    """Its batches stay small enough to stay in a core's cache (docs/performance.md)."""
    default = PlatformSourceConfig(redis_url="redis://h:1", stream_keys=("k",))
    assert default.read_size_limit == default.max_in_flight // 2  # the actors layout's reads
    assert default.in_fused_actor().read_size_limit == FUSED_READ_LIMIT
    small = default.model_copy(update={"max_in_flight": 300})
    assert small.in_fused_actor().read_size_limit == 150
    told = default.model_copy(update={"max_batch_size": 1000})
    assert told.in_fused_actor().read_size_limit == 1000
    large_reads = default.model_copy(update={"batch_size": 500})
    assert large_reads.in_fused_actor().read_size_limit == 500  # never below batch_size
