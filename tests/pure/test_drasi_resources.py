"""Drasi's resource files read onto drasi_ray's models (drasi_ray.model.resources).

The tutorials' files (tests/resources, transcribed from Drasi's published tutorials) load as
Drasi wrote them, their databases' and web front ends' kinds refused by name and line; every
refusal and notice names its document, field and line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from drasi_ray.model.config import PostgresSourceSpec, QueryConfig, SourceSpec
from drasi_ray.model.query_specs import QueryJoin, SourceLabels
from drasi_ray.model.reaction_specs import LogReaction, PlatformReaction
from drasi_ray.model.resources import (
    ReactionDefinition,
    ResourceError,
    looks_like_resources,
    parse_resources,
    read_resources,
)

TUTORIALS = Path(__file__).parents[1] / "resources"
ROOM_FLOOR = QueryJoin.model_validate(
    {
        "id": "PART_OF_FLOOR",
        "keys": [{"label": "Room", "property": "floor_id"}, {"label": "Floor", "property": "id"}],
    }
)


def problems(text: str) -> list[str]:
    with pytest.raises(ResourceError) as caught:
        parse_resources(text, "f.yaml")
    return [str(problem) for problem in caught.value.problems]


def only_problem(text: str) -> str:
    (problem,) = problems(text)
    return problem


QUERY = """\
apiVersion: v1
kind: ContinuousQuery
name: q
spec:
  mode: query
  sources:
    subscriptions:
      - id: s
  query: MATCH (n:A) RETURN n.x AS x
"""


def test_the_tutorials_query_files_load_as_drasi_wrote_them() -> None:
    comfort = read_resources(TUTORIALS / "building-comfort" / "query-alert.yaml")
    assert [r.label for r in comfort.resources] == [
        "ContinuousQuery/room-alert",
        "ContinuousQuery/floor-alert",
        "ContinuousQuery/building-alert",
    ]
    floor = comfort.resources[1].spec
    assert isinstance(floor, QueryConfig)
    assert floor.id == "floor-alert"
    assert floor.sources == ("building-facilities",)
    assert floor.joins == (ROOM_FLOOR,)
    assert floor.source_labels == {"building-facilities": SourceLabels(nodes=("Room", "Floor"))}
    assert "avg(RoomComfortLevel) AS ComfortLevel" in floor.query
    assert comfort.notices == ()
    curbside = read_resources(TUTORIALS / "curbside-pickup" / "delivery.yaml")
    (delivery,) = curbside.resources
    assert isinstance(delivery.spec, QueryConfig)
    assert delivery.spec.sources == ("physical-ops", "retail-ops")
    assert delivery.spec.source_labels == {
        "physical-ops": SourceLabels(nodes=("vehicles",)),
        "retail-ops": SourceLabels(nodes=("orders",)),
    }
    for name in ("query-ui.yaml", "query-comfort-calc.yaml"):
        assert read_resources(TUTORIALS / "building-comfort" / name).resources
    assert read_resources(TUTORIALS / "curbside-pickup" / "delay.yaml").resources


def test_the_getting_started_queries_load_the_gql_one_as_gql() -> None:
    queries = read_resources(TUTORIALS / "getting-started" / "hello-world-queries.yaml")
    assert [r.name for r in queries.resources] == [
        "hello-world-from",
        "message-count",
        "inactive-people",
    ]
    message_count = queries.resources[1].spec
    assert isinstance(message_count, QueryConfig)
    assert str(message_count.query_language.value) == "gql"


@pytest.mark.parametrize(
    ("path", "line", "refused"),
    [
        ("curbside-pickup/physical-ops-source.yaml", 6, "source kind 'MySQL'"),
        ("curbside-pickup/reaction.yaml", 6, "reaction kind 'SignalR'"),
    ],
)
def test_the_tutorials_kinds_drasi_ray_does_not_have_are_refused_by_name_and_line(
    path: str, line: int, refused: str
) -> None:
    with pytest.raises(ResourceError) as caught:
        read_resources(TUTORIALS / path)
    (problem,) = caught.value.problems
    assert problem.position.line == line
    assert refused in problem.message
    assert "not available in drasi_ray" in problem.message


def test_a_platform_source_takes_drasi_servers_camel_case_settings() -> None:
    text = """\
apiVersion: v1
kind: Source
name: sensors
spec:
  kind: Platform
  autoStart: true
  dispatchMode: broadcast
  properties:
    redisUrl: redis://localhost:6379
    streamKey: sensor-changes
    consumerGroup: g
    batchSize: 50
    blockMs: 100
    consumers: {kind: Inline, value: 2}
    start_id: "0"
"""
    (resource,) = parse_resources(text).resources
    spec = resource.spec
    assert isinstance(spec, SourceSpec)
    assert spec.id == "sensors"
    assert spec.dispatch_mode.value == "broadcast"
    props = spec.properties
    assert props.stream_keys == ("sensor-changes",)
    assert (props.consumer_group, props.batch_size, props.block_ms) == ("g", 50, 100)
    assert (props.consumers, props.start_id) == (2, "0")
    assert props.format.value == "platform"


@pytest.mark.parametrize(
    "path",
    [
        "getting-started/hello-world-source.yaml",
        "building-comfort/source-facilities.yaml",
        "curbside-pickup/retail-ops-source.yaml",
    ],
)
def test_the_tutorials_postgresql_sources_load_once_their_password_is_not_written(
    path: str,
) -> None:
    with pytest.raises(ResourceError) as caught:
        read_resources(TUTORIALS / path, "redis://localhost:6379")
    (problem,) = caught.value.problems
    lines = (TUTORIALS / path).read_text().splitlines()
    assert lines[problem.position.line - 1].strip() == "password: test"
    assert problem.where.endswith(" spec.properties.password")
    assert problem.message.startswith("a password is never written in drasi_ray's configuration")
    text = (TUTORIALS / path).read_text().replace("password: test", "passwordFile: /run/pg")
    (resource,) = parse_resources(text, path, "redis://localhost:6379").resources
    spec = resource.spec
    assert isinstance(spec, PostgresSourceSpec)
    props = spec.properties
    assert (props.host, props.port, props.user) == (
        "postgres.default.svc.cluster.local",
        5432,
        "test",
    )
    assert (props.password_file, props.ssl_mode.value) == ("/run/pg", "disable")
    assert props.tables and all(table.startswith("public.") for table in props.tables)
    assert props.redis_url == "redis://localhost:6379"
    without = parse_resources(
        text.replace("  properties:\n", "  properties:\n    redisUrl: redis://db:1\n"), path
    )
    assert isinstance(without.resources[0].spec, PostgresSourceSpec)
    assert without.resources[0].spec.properties.redis_url == "redis://db:1"
    with pytest.raises(ResourceError) as nowhere:
        parse_resources(text, path)
    assert "redisUrl is required" in str(nowhere.value)


def test_a_cdc_source_kind_sets_its_format() -> None:
    text = """\
apiVersion: v1
kind: Source
name: shop
spec:
  kind: Debezium
  properties:
    redisUrl: redis://localhost:6379
    streamKeys: [db.public.orders]
    cdc:
      labels: {orders: Order}
      nullValue: "null"
"""
    (resource,) = parse_resources(text).resources
    assert isinstance(resource.spec, SourceSpec)
    props = resource.spec.properties
    assert props.format.value == "debezium"
    assert props.cdc is not None
    assert (props.cdc.labels, props.cdc.null_value) == ({"orders": "Order"}, "null")
    wrong = text.replace("    cdc:", "    format: deltaforge\n    cdc:")
    assert "format 'deltaforge' contradicts kind 'Debezium'" in only_problem(wrong)


def test_a_reaction_is_one_spec_named_after_it_for_each_query() -> None:
    text = """\
apiVersion: v1
kind: Reaction
name: results
spec:
  kind: Platform
  queries:
    q1:
    q2:
  properties:
    maxStreamLength: 1000
    emitControlEvents: false
---
apiVersion: v1
kind: Reaction
name: printer
spec:
  kind: log
  queries: [q1]
  properties: {level: debug}
"""
    platform, log = parse_resources(text).resources
    assert platform.spec == ReactionDefinition(
        ("q1", "q2"), PlatformReaction(name="results", maxlen=1000, include_control=False)
    )
    assert log.spec == ReactionDefinition(("q1",), LogReaction(name="printer", level="debug"))


def test_an_app_of_resources_attaches_each_reaction_to_its_queries() -> None:
    text = f"""\
apiVersion: v1
kind: Source
name: s
spec:
  kind: Platform
  properties: {{redisUrl: "redis://localhost:6379", streamKey: st}}
---
{QUERY}---
apiVersion: v1
kind: Reaction
name: printer
spec:
  kind: Log
  queries: {{q: }}
"""
    app = parse_resources(text).app_config("tutorial")
    assert app.id == "tutorial"
    assert [source.id for source in app.sources] == ["s"]
    (query,) = app.queries
    assert query.reactions == (LogReaction(name="printer"),)
    alone = parse_resources(QUERY.replace("- id: s", "- id: elsewhere"), "q.yaml")
    with pytest.raises(ResourceError) as caught:
        alone.app_config()
    assert str(caught.value) == (
        "q.yaml:8:13: ContinuousQuery/q spec.sources.subscriptions.0.id: unknown source 'elsewhere'"
    )


def test_an_unknown_api_version_or_kind_names_the_document_and_its_line() -> None:
    text = f"{QUERY}---\napiVersion: v2\nkind: Source\nname: s\nspec: {{}}\n---\n" + (
        "apiVersion: v1\nkind: Sorce\nname: x\nspec: {}\n---\n"
        "apiVersion: v1\nkind: QueryContainer\nname: c\nspec: {}\n"
    )
    assert problems(text) == [
        "f.yaml:11:13: document 2 apiVersion: unknown apiVersion 'v2'; Drasi's resources are "
        "apiVersion: v1",
        "f.yaml:17:7: document 3 kind: unknown kind 'Sorce'; drasi_ray reads Source, "
        "ContinuousQuery and Reaction",
        "f.yaml:22:7: document 4 kind: unknown kind 'QueryContainer'; drasi_ray has no query "
        "containers: queries run on its query hosts (scaling.query_hosts)",
    ]
    assert problems("kind: Source\nname: s\nspec: {}\n") == [
        "f.yaml:1:1: document 1 apiVersion: no apiVersion; Drasi's resources are apiVersion: v1"
    ]


def test_fields_drasi_ray_cannot_honour_are_refused_by_name_and_line() -> None:
    text = """\
apiVersion: v1
kind: Source
name: s
spec:
  kind: Platform
  identity: {kind: MicrosoftEntraWorkloadID, clientId: x}
  properties:
    redisUrl: {kind: Secret, name: redis, key: url}
    streamKey: st
    batchSise: 10
"""
    assert problems(text) == [
        "f.yaml:6:13: Source/s spec.identity: drasi_ray has no identity providers: put the "
        "credentials in properties",
        "f.yaml:8:15: Source/s spec.properties.redisUrl: a secret reference needs Drasi's "
        "secret store: write ${VARIABLE} or ${file:PATH} instead (expanded when the file is "
        "read, never stored)",
    ]
    unknown = text.replace(
        "  identity: {kind: MicrosoftEntraWorkloadID, clientId: x}\n", ""
    ).replace("{kind: Secret, name: redis, key: url}", "redis://x:6379")
    assert only_problem(unknown) == "f.yaml:9:5: Source/s spec.properties.batchSise: unknown key"
    history = QUERY.replace("  mode: query\n", "  view: {enabled: true, retentionPolicy: all}\n")
    assert only_problem(history).startswith(
        "f.yaml:5:42: ContinuousQuery/q spec.view.retentionPolicy: retentionPolicy 'all': "
        "drasi_ray keeps only the latest result set"
    )
    per_query = (
        'apiVersion: v1\nkind: Reaction\nname: r\nspec:\n  kind: Log\n  queries:\n    q: "x"\n'
    )
    assert only_problem(per_query) == (
        "f.yaml:7:8: Reaction/r spec.queries.q: per-query settings are not used by reaction "
        "kind 'Log'"
    )
    labels = QUERY.replace("- id: s\n", "- id: s\n        nodes: [{label: A}]\n        extra: 1\n")
    assert (
        problems(labels)[0]
        == "f.yaml:10:9: ContinuousQuery/q spec.sources.subscriptions.0.extra: unknown key"
    )


def test_a_model_error_points_at_the_field_as_drasi_wrote_it() -> None:
    text = """\
apiVersion: v1
kind: Source
name: s
spec:
  kind: Platform
  properties:
    redisUrl: http://not-redis
    streamKey: st
    batchSize: 0
"""
    assert problems(text) == [
        "f.yaml:7:15: Source/s spec.properties.redisUrl: Value error, must start with redis://, "
        "rediss:// or unix://",
        "f.yaml:9:16: Source/s spec.properties.batchSize: Input should be greater than or "
        "equal to 1",
    ]
    middleware = QUERY.replace(
        "      - id: s\n",
        "      - id: s\n        pipeline: [m]\n"
        "    middleware:\n      - kind: relabel\n        name: n\n",
    )
    assert "pipeline of source 's' names undeclared middleware ['m']" in only_problem(middleware)


def test_what_drasi_does_not_act_on_is_accepted_with_a_notice() -> None:
    text = QUERY.replace(
        "  mode: query\n",
        "  mode: filter\n  container: edge\n  storageProfile: redis\n  view: {enabled: false}\n",
    )
    read = parse_resources(text, "f.yaml")
    assert [str(notice) for notice in read.notices] == [
        "f.yaml:5:9: warning: ContinuousQuery/q spec.mode: mode 'filter': Drasi's query host does "
        "not act on mode; the query runs as mode: query",
        "f.yaml:6:14: warning: ContinuousQuery/q spec.container: query containers place queries "
        "in Drasi's platform; drasi_ray places them on its query hosts",
        "f.yaml:7:19: warning: ContinuousQuery/q spec.storageProfile: drasi_ray keeps query "
        "indexes in memory and durable state in the app's Redis",
        "f.yaml:8:19: warning: ContinuousQuery/q spec.view.enabled: drasi_ray always keeps a "
        "query's current results (drasi-ray watch, DrasiRay.results)",
    ]
    assert isinstance(read.resources[0].spec, QueryConfig)


def test_a_name_used_twice_in_one_kind_and_bad_yaml_are_refused() -> None:
    assert only_problem(f"{QUERY}---\n{QUERY}") == (
        "f.yaml:13:7: document 2 (ContinuousQuery/q) name: a second ContinuousQuery named 'q' "
        "in the file"
    )
    assert only_problem("apiVersion: v1\nkind: [\n").startswith("f.yaml:3:1: (yaml): invalid YAML")


def test_a_drasi_file_is_told_from_an_app_file() -> None:
    assert looks_like_resources(QUERY)
    assert looks_like_resources(f"{QUERY}---\n{QUERY}")
    assert not looks_like_resources("id: app\nsources: []\n")
    assert not looks_like_resources("id: [\n")


def test_subscription_labels_restrict_what_a_source_routes_to_the_query() -> None:
    from drasi_ray.model.changes import Element, ElementDelta, ElementKind, FrozenMap
    from drasi_ray.shards.routing import LabelFilter, SubscriptionTable

    query = QueryConfig.model_validate(
        {
            "id": "q",
            "query": "MATCH (a:A)-[:R]->(b:B) RETURN a.x AS x",
            "sources": [{"id": "s", "nodes": [{"sourceLabel": "A"}]}, "t"],
        }
    )
    assert query.source_labels == {"s": SourceLabels(nodes=("A",))}
    labels = LabelFilter.of(["A", "B"], ["R"])
    per_source = {"s": labels.restricted(["A"], [])}
    table = SubscriptionTable()
    table.register_query("q", query.sources, labels, per_source)

    def routed(source: str, kind: ElementKind, label: str) -> bool:
        element = Element(
            kind,
            "e",
            (label,),
            FrozenMap(),
            "a" if kind is ElementKind.RELATION else None,
            "b" if kind is ElementKind.RELATION else None,
            0,
        )
        return "q" in table.route(source, ElementDelta(None, element, (1, 0, 0), 0))

    assert routed("s", ElementKind.NODE, "A")
    assert not routed("s", ElementKind.NODE, "B")
    assert not routed("s", ElementKind.RELATION, "R")
    assert routed("t", ElementKind.NODE, "B") and routed("t", ElementKind.RELATION, "R")


def test_a_resource_written_back_as_a_document_reads_as_the_same_settings() -> None:
    import yaml

    from drasi_ray.model.resource_docs import (
        query_document,
        reaction_document,
        source_document,
    )

    queries = [
        resource.spec
        for name in ("query-ui.yaml", "query-alert.yaml")
        for resource in read_resources(TUTORIALS / "building-comfort" / name).resources
    ]
    queries += [
        r.spec for r in read_resources(TUTORIALS / "curbside-pickup" / "delay.yaml").resources
    ]
    gql = read_resources(TUTORIALS / "getting-started" / "hello-world-queries.yaml").resources[1]
    queries.append(gql.spec)
    source = SourceSpec.model_validate(
        {
            "id": "shop",
            "properties": {
                "redis_url": "redis://localhost:6379",
                "stream_keys": ["a", "b"],
                "format": "debezium",
                "cdc": {"labels": {"t": "T"}},
                "consumers": 3,
            },
            "dispatch_mode": "broadcast",
        }
    )
    documents = [query_document(q) for q in queries if isinstance(q, QueryConfig)]
    documents.append(source_document(source))
    reaction = PlatformReaction(name="results", maxlen=10)
    documents.append(reaction_document("results", ["q1", "q2"], reaction))
    text = "---\n".join(yaml.safe_dump(document, sort_keys=False) for document in documents)
    again = parse_resources(text).resources
    assert [r.spec for r in again[: len(queries)]] == queries
    assert again[-2].spec == source
    assert again[-1].spec == ReactionDefinition(("q1", "q2"), reaction)


def test_an_app_is_made_of_several_drasi_files_or_of_an_app_file(tmp_path: Path) -> None:
    from drasi_ray.model.resources import read_app

    source = tmp_path / "source.yaml"
    source.write_text(
        "apiVersion: v1\nkind: Source\nname: hello-world\nspec:\n  kind: Platform\n"
        "  properties: {redisUrl: 'redis://localhost:6379', streamKey: messages}\n"
    )
    queries = TUTORIALS / "getting-started" / "hello-world-queries.yaml"
    app, notices = read_app([source, queries], "tutorial")
    assert (app.id, notices) == ("tutorial", ())
    assert [s.id for s in app.sources] == ["hello-world"]
    assert [q.id for q in app.queries] == ["hello-world-from", "message-count", "inactive-people"]
    assert read_app([source, queries])[0].id == "default"
    with pytest.raises(ResourceError, match=r"ContinuousQuery/hello-world-from is also at "):
        read_app([source, queries, queries])
    app_file = tmp_path / "app.yaml"
    app_file.write_text("id: mine\n")
    assert read_app([app_file])[0].id == "mine"
    assert read_app([app_file], "other")[0].id == "other"


def test_drasis_http_storedproc_sse_and_debug_reactions_are_reactions_of_the_app() -> None:
    from drasi_ray.model.reaction_specs import (
        HttpCall,
        HttpQueryCalls,
        HttpReaction,
        PostgresStoredProcReaction,
        SseReaction,
        StoredProcCommands,
    )

    debug = read_resources(TUTORIALS / "getting-started" / "hello-world-reaction.yaml")
    (resource,) = debug.resources
    assert resource.spec == ReactionDefinition(
        ("hello-world-from", "message-count", "inactive-people"),
        SseReaction(
            id="hello-world-debug",
            queries=("hello-world-from", "message-count", "inactive-people"),
            dashboard=True,
        ),
    )
    text = """\
kind: Reaction
apiVersion: v1
name: http-reaction
spec:
  kind: Http
  properties:
    baseUrl: "https://api.example.com"
    tokenEnv: API_TOKEN
  queries:
    q: >
      added:
        url: "/webhook/{{after.id}}"
        method: "POST"
        body: '{"id": "{{after.id}}"}'
      deleted:
        url: "/webhook/{{before.id}}"
        method: "DELETE"
    r:
---
apiVersion: v1
kind: Reaction
name: stored-proc
spec:
  kind: StoredProc
  queries:
    q:
  properties:
    addedResultCommand: public.added_command(@MessageId, @MessageFrom)
    deletedResultCommand: public.deleted_command(@MessageId)
    databaseClient: pg
    databaseHostname: postgres.default.svc.cluster.local
    databasePort: 5432
    databaseUser: test
    databaseDbname: hello-world
    passwordFile: /run/pg
    databaseSsl: false
"""
    http, proc = parse_resources(text).resources
    calls = HttpQueryCalls(
        added=HttpCall(url="/webhook/{{after.id}}", method="POST", body='{"id": "{{after.id}}"}'),
        deleted=HttpCall(url="/webhook/{{before.id}}", method="DELETE"),
    )
    assert http.spec == ReactionDefinition(
        ("q", "r"),
        HttpReaction(
            id="http-reaction",
            base_url="https://api.example.com",
            token_env="API_TOKEN",
            queries={"q": calls, "r": None},
        ),
    )
    assert proc.spec == ReactionDefinition(
        ("q",),
        PostgresStoredProcReaction(
            id="stored-proc",
            host="postgres.default.svc.cluster.local",
            port=5432,
            user="test",
            database="hello-world",
            password_file="/run/pg",
            ssl_mode="disable",
            added_command="public.added_command(@MessageId, @MessageFrom)",
            deleted_command="public.deleted_command(@MessageId)",
            queries={"q": None},
        ),
    )
    assert isinstance(proc.spec, ReactionDefinition) and proc.spec.of_app
    token = text.replace("tokenEnv: API_TOKEN", "token: hunter2")
    assert "a token is never written" in problems(token)[0]
    assert "hunter2" not in " ".join(problems(token))
    password = text.replace("passwordFile: /run/pg", "databasePassword: test")
    assert problems(password)[0].startswith(
        "f.yaml:35:5: Reaction/stored-proc spec.properties.databasePassword: "
    )
    assert "a password is never written" in problems(password)[0]
    mysql = text.replace("databaseClient: pg", "databaseClient: mysql")
    assert "PostgreSQL only" in only_problem(mysql)
    with_commands = text.replace(
        "  queries:\n    q:\n  properties:",
        "  queries:\n    q:\n      deletedResultCommand: public.gone(@MessageId)\n  properties:",
    )
    (_, own) = parse_resources(with_commands).resources
    assert isinstance(own.spec, ReactionDefinition)
    assert isinstance(own.spec.spec, PostgresStoredProcReaction)
    assert own.spec.spec.queries == {
        "q": StoredProcCommands(deleted_command="public.gone(@MessageId)")
    }
    import yaml

    from drasi_ray.model.resource_docs import app_reaction_document

    written = "---\n".join(
        yaml.safe_dump(app_reaction_document(r.spec.spec), sort_keys=False)  # type: ignore[union-attr,arg-type]
        for r in (http, proc, resource)
    )
    assert [r.spec for r in parse_resources(written).resources] == [
        http.spec,
        proc.spec,
        ReactionDefinition(
            ("hello-world-from", "message-count", "inactive-people"), resource.spec.spec
        ),  # type: ignore[union-attr]
    ]


def test_variables_and_files_are_expanded_and_one_missing_is_refused_at_its_line(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "url"
    secret.write_text("redis://:pw@db:6379\n")
    text = (
        "apiVersion: v1\nkind: Source\nname: s\nspec:\n  kind: Platform\n  properties:\n"
        f"    redisUrl: ${{file:{secret}}}\n    streamKey: ${{STREAM}}\n"
    )
    (resource,) = parse_resources(text, "f.yaml", environ={"STREAM": "events"}).resources
    assert isinstance(resource.spec, SourceSpec)
    assert resource.spec.properties.redis_url == "redis://:pw@db:6379"
    assert resource.spec.properties.stream_keys == ("events",)
    assert problems(text.replace("${STREAM}", "${NOPE}")) == problems(
        text.replace("${STREAM}", "${NOPE}")
    )
    with pytest.raises(ResourceError) as caught:
        parse_resources(text, "f.yaml", environ={})
    assert [str(p) for p in caught.value.problems] == [
        "f.yaml:8:16: Source/s spec.properties.streamKey: the environment variable 'STREAM' "
        "is not set"
    ]
