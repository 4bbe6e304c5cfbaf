"""Drasi's resource files, read onto drasi_ray's configuration models.

A Drasi user keeps sources, continuous queries and reactions in YAML files of ``apiVersion:
v1`` documents (``kind: Source``, ``ContinuousQuery`` or ``Reaction``; several to a file,
separated by ``---``) and applies them with ``drasi apply -f``. :func:`read_resources` reads
such a file into :class:`Resource` records whose ``spec`` is one of drasi_ray's own models: a
:class:`~drasi_ray.model.config.SourceSpec`, a :class:`~drasi_ray.model.config.QueryConfig`, or
a :class:`ReactionDefinition` holding a reaction spec of
:mod:`~drasi_ray.model.reaction_specs`. It is one more front end to the same configuration,
not a second one: whatever a resource says is checked by those models, and an app made of
resources (:meth:`ResourceFile.app_config`) is an :class:`~drasi_ray.model.config.AppConfig`.

What drasi_ray cannot honour is refused, naming the field and its line: an unknown
``apiVersion`` or ``kind`` (naming the document's index), a source or reaction kind it does
not have, a secret reference, a query view that keeps result history. What Drasi itself does
not act on, or what only says where Drasi's platform runs something, is accepted with a
:class:`ResourceNotice` (a warning the commands print): ``spec.mode`` other than ``query``,
``spec.container``, ``spec.storageProfile``, ``spec.view.enabled: false``, ``spec.services``
and a reaction's ``tag``. docs/coming-from-drasi.md maps every field.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from yaml.constructor import SafeConstructor

from drasi_ray.model.config import (
    AppConfig,
    CdcConfig,
    PlatformSourceConfig,
    PostgresSourceSpec,
    QueryConfig,
    SourceSpec,
    expand_secrets,
    validated,
)
from drasi_ray.model.errors import ConfigError
from drasi_ray.model.postgres_specs import PostgresSourceConfig, RelationSpec, TableKey
from drasi_ray.model.reaction_specs import (
    AnyAppReaction,
    AnyReaction,
    CallbackReaction,
    HttpReaction,
    JsonLinesReaction,
    LogReaction,
    PlatformReaction,
    PostgresStoredProcReaction,
    SseReaction,
    StoredProcCommands,
)

API_VERSION = "v1"
SOURCE, QUERY, REACTION = "Source", "ContinuousQuery", "Reaction"
KINDS = (SOURCE, QUERY, REACTION)
"""The kinds of document drasi_ray reads, in the order they are applied."""

_PLATFORM_ONLY = {
    "QueryContainer": "drasi_ray has no query containers: queries run on its query hosts "
    "(scaling.query_hosts)",
    "SourceProvider": "drasi_ray's source kinds are built in",
    "ReactionProvider": "drasi_ray's reaction kinds are built in",
}
SOURCE_FORMATS = {"platform": "platform", "debezium": "debezium", "deltaforge": "deltaforge"}
"""Source kind (any case) -> the ``format`` of the Redis streams it reads."""
REACTION_MODELS: dict[str, type[BaseModel]] = {
    "platform": PlatformReaction,
    "log": LogReaction,
    "jsonl": JsonLinesReaction,
    "callback": CallbackReaction,
}
"""Reaction kind (any case) -> the model of its settings."""
_STOREDPROC_ALIASES = {
    "addedResultCommand": "added_command",
    "updatedResultCommand": "updated_command",
    "deletedResultCommand": "deleted_command",
    "databaseHostname": "host",
    "databasePort": "port",
    "databaseUser": "user",
    "databaseDbname": "database",
    "databasePassword": "password",
    "databaseSsl": "ssl",
    "databaseClient": "database_client",
}
"""Drasi's names of the StoredProc reaction's settings -> drasi_ray's (``password`` and
``ssl`` then read as for a PostgreSQL source, ``database_client`` checked)."""
_REACTION_HINTS = {
    "signalr": "; a front end can read a query's result stream <query>-results (kind: Platform)",
}
_REACTION_ALIASES = {"maxStreamLength": "maxlen", "emitControlEvents": "include_control"}
"""Drasi Server's names of platform-reaction settings that drasi_ray names otherwise."""
_ENVELOPE = {"apiVersion", "kind", "name", "spec", "tag"}
_SOURCE_SPEC = {"kind", "properties", "services", "identity", "autoStart", "auto_start"} | {
    "dispatchMode",
    "dispatch_mode",
    "dispatchBufferCapacity",
    "dispatch_buffer_capacity",
}
_QUERY_SPEC = {"mode", "query", "queryLanguage", "sources", "storageProfile", "view", "container"}
_QUERY_SOURCES = {"subscriptions", "joins", "middleware"}
_SUBSCRIPTION = {"id", "nodes", "relations", "pipeline"}
_REACTION_SPEC = {"kind", "queries", "properties", "services", "identity"}
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")

Path_ = tuple[str | int, ...]
"""A path of keys and indices inside a document."""


@dataclass(frozen=True, slots=True)
class Position:
    """Where something is: the file, the 1-based index of its document, line and column."""

    file: str
    document: int
    line: int
    column: int


@dataclass(frozen=True, slots=True)
class ResourceProblem:
    """One thing a resource file says that drasi_ray refuses: ``FILE:LINE:COLUMN: WHERE:
    MESSAGE``."""

    position: Position
    where: str
    message: str

    def __str__(self) -> str:
        place = self.position
        return f"{place.file}:{place.line}:{place.column}: {self.where}: {self.message}"


@dataclass(frozen=True, slots=True)
class ResourceNotice:
    """Something a resource file says that drasi_ray accepts but does not act on."""

    position: Position
    where: str
    message: str

    def __str__(self) -> str:
        place = self.position
        return f"{place.file}:{place.line}:{place.column}: warning: {self.where}: {self.message}"


class ResourceError(ConfigError):
    """A resource file drasi_ray refuses; ``problems`` holds each problem (one line each)."""

    def __init__(self, problems: Sequence[ResourceProblem]) -> None:
        super().__init__("\n".join(str(problem) for problem in problems))
        self.problems = tuple(problems)


@dataclass(frozen=True, slots=True)
class ReactionDefinition:
    """A Drasi ``Reaction`` over ``queries``: a reaction of the app (HTTP, SSE, stored
    procedures: an actor of its own, ``id`` the resource's name), or a reaction run beside
    each query (platform, log, jsonl, callback: its ``name`` the resource's)."""

    queries: tuple[str, ...]
    spec: AnyReaction | AnyAppReaction

    @property
    def of_app(self) -> bool:
        """Whether it is a reaction of the app rather than one per query."""
        return isinstance(self.spec, (HttpReaction, SseReaction, PostgresStoredProcReaction))


Spec = SourceSpec | PostgresSourceSpec | QueryConfig | ReactionDefinition


@dataclass(frozen=True, slots=True)
class Resource:
    """One document of a resource file, read onto its model."""

    kind: str
    name: str
    position: Position
    spec: Spec
    node: yaml.Node | None = field(default=None, compare=False, repr=False)
    """The document's YAML node (positions of its fields; see :meth:`locate`)."""

    @property
    def label(self) -> str:
        """``Kind/name``, as Drasi's CLI names a resource."""
        return f"{self.kind}/{self.name}"

    def locate(self, *path: str | int) -> Position:
        """The position of the field at ``path`` (the deepest part of it that exists)."""
        return _position(self.position.file, self.position.document, _node_at(self.node, path))

    def field_node(self, *path: str | int) -> yaml.Node | None:
        """The YAML node at ``path``, if the document has one there."""
        found = _node_at(self.node, path)
        return found if found is not None and _depth_reached(self.node, path) else None


@dataclass(frozen=True, slots=True)
class ResourceFile:
    """The resources of one file, in document order, and the notices reading it gave."""

    path: str
    resources: tuple[Resource, ...]
    notices: tuple[ResourceNotice, ...] = ()
    text: str = field(default="", compare=False, repr=False)

    def of_kind(self, kind: str) -> list[Resource]:
        return [resource for resource in self.resources if resource.kind == kind]

    def app_config(self, app_id: str = "default") -> AppConfig:
        """The app these resources make on their own: every source and query, each query
        with the reactions that name it. Raises :class:`ResourceError` where a query reads a
        source, or a reaction names a query, that the file does not hold."""
        problems: list[ResourceProblem] = []
        sources = [resource.spec for resource in self.of_kind(SOURCE)]
        queries = {r.name: r.spec for r in self.of_kind(QUERY) if isinstance(r.spec, QueryConfig)}
        known = {resource.name for resource in self.of_kind(SOURCE)}
        for resource in self.of_kind(QUERY):
            problems += missing_sources(resource, known)
        of_app = []
        for resource in self.of_kind(REACTION):
            definition = resource.spec
            assert isinstance(definition, ReactionDefinition)
            for query_id in definition.queries:
                if query_id not in queries:
                    problems.append(
                        _problem(resource, ("spec", "queries", query_id), "unknown query")
                    )
                elif not definition.of_app:
                    query = queries[query_id]
                    reactions = (*query.reactions, definition.spec)
                    queries[query_id] = query.model_copy(update={"reactions": reactions})
            if definition.of_app:
                of_app.append(definition.spec)
        if problems:
            raise ResourceError(problems)
        try:
            return AppConfig(
                id=app_id,
                sources=tuple(sources),
                queries=tuple(queries.values()),
                reactions=tuple(of_app),
            )
        except ValidationError as exc:
            raise ConfigError(f"{self.path}: {exc}") from exc


def combine(files: Sequence[ResourceFile]) -> ResourceFile:
    """The resources of several files as one (Drasi users keep sources, queries and reactions
    in files of their own); a kind and name given twice is refused at its second place."""
    resources = [resource for read in files for resource in read.resources]
    seen: dict[tuple[str, str], Resource] = {}
    problems: list[ResourceProblem] = []
    for resource in resources:
        first = seen.setdefault((resource.kind, resource.name), resource)
        if first is not resource:
            where = f"{first.position.file}:{first.position.line}"
            problems.append(_problem(resource, ("name",), f"{resource.label} is also at {where}"))
    if problems:
        raise ResourceError(problems)
    notices = tuple(notice for read in files for notice in read.notices)
    return ResourceFile(", ".join(read.path for read in files), tuple(resources), notices)


def read_app(
    paths: Sequence[str | Path],
    app_id: str | None = None,
    redis_url: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[AppConfig, tuple[ResourceNotice, ...]]:
    """The app of one drasi_ray app file, or of Drasi resource files (one or several), and
    the notices reading them gave. ``app_id`` overrides the app file's id; an app of resource
    files is ``default`` unless given. ``redis_url``: as for :func:`parse_resources`."""
    texts = [(str(path), Path(path).read_text(encoding="utf-8")) for path in paths]
    if len(texts) == 1 and not looks_like_resources(texts[0][1]):
        config = AppConfig.from_yaml(texts[0][0], environ)
        if app_id is not None:
            validated(AppConfig, id=app_id)  # the id's own rules
            config = config.model_copy(update={"id": app_id})
        return config, ()
    files = [parse_resources(text, path, redis_url, environ) for path, text in texts]
    read = combine(files)
    return read.app_config(app_id or "default"), read.notices


def missing_sources(resource: Resource, known: set[str]) -> list[ResourceProblem]:
    """A problem per source a query resource reads that is not in ``known``."""
    query = resource.spec
    assert isinstance(query, QueryConfig)
    return [
        _problem(
            resource,
            ("spec", "sources", "subscriptions", index, "id"),
            f"unknown source {source!r}",
        )
        for index, source in enumerate(query.sources)
        if source not in known
    ]


def _problem(resource: Resource, path: Path_, message: str) -> ResourceProblem:
    where = f"{resource.label} {_dotted(path)}"
    return ResourceProblem(resource.locate(*path), where, message)


# -- reading ------------------------------------------------------------------------------


def looks_like_resources(text: str) -> bool:
    """Whether ``text`` is a Drasi resource file rather than a drasi_ray app file: it holds
    several documents, or its document has an ``apiVersion`` or a ``kind`` (an app file has
    neither). Text that is not YAML is left to the reader to report."""
    try:
        documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError:
        return False
    if len(documents) != 1:
        return len(documents) > 1
    first = documents[0]
    return isinstance(first, dict) and ("apiVersion" in first or "kind" in first)


def read_resources(path: str | Path, redis_url: str | None = None) -> ResourceFile:
    """Read a resource file; :class:`ResourceError` lists every problem, each with its line
    (``redis_url``: as for :func:`parse_resources`)."""
    return parse_resources(Path(path).read_text(encoding="utf-8"), str(path), redis_url)


def parse_resources(
    text: str,
    file: str = "<resources>",
    redis_url: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> ResourceFile:
    """Read resource documents from ``text`` (``file`` names it in messages). ``redis_url``:
    where a PostgreSQL source that names no ``redisUrl`` has its reader write the changes
    (the app's Redis; Drasi's documents do not say). With ``environ``, every ``${NAME}`` and
    ``${file:PATH}`` in a value is expanded first, as in an app file
    (:func:`~drasi_ray.model.config.expand_secrets`); one that cannot be is refused at its
    line."""
    reader = _Reader(file, redis_url, environ)
    for index, node in _documents(text, file):
        reader.document(index, node)
    reader.check_names()
    if reader.problems:
        raise ResourceError(sorted(reader.problems, key=_place))
    return ResourceFile(file, tuple(reader.resources), tuple(reader.notices), text)


def _documents(text: str, file: str) -> list[tuple[int, yaml.Node]]:
    """The documents' nodes with their 1-based index, empty documents left out; invalid
    YAML is a :class:`ResourceError` at its line."""
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        where = Position(file, 0, line, column)
        raise ResourceError(
            [ResourceProblem(where, "(yaml)", f"invalid YAML: {exc.problem}")]
        ) from exc
    return [
        (index, node)
        for index, node in enumerate(nodes, start=1)
        if node is not None and node.tag != "tag:yaml.org,2002:null"
    ]


def resource_names(text: str, file: str = "<resources>") -> list[tuple[str, str, Position]]:
    """The kind, name and place of every document, the rest unread (``drasi delete -f``
    reads no more); an unknown kind or apiVersion, or a missing name, is still refused."""
    reader = _Reader(file)
    found: list[tuple[str, str, Position]] = []
    for index, node in _documents(text, file):
        doc = _Document(reader, index, node)
        if not isinstance(doc.data, dict):
            doc.refuse((), "a resource is a mapping of apiVersion, kind, name, spec")
        elif doc.envelope_ok(need_spec=False):
            found.append((doc.kind, doc.name, doc.position(())))
    if reader.problems:
        raise ResourceError(sorted(reader.problems, key=_place))
    return found


class _Reader:
    """Reads documents one by one, collecting resources, problems and notices."""

    def __init__(
        self,
        file: str,
        redis_url: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.file = file
        self.redis_url = redis_url
        self.environ = environ
        self.resources: list[Resource] = []
        self.problems: list[ResourceProblem] = []
        self.notices: list[ResourceNotice] = []

    def document(self, index: int, node: yaml.Node) -> None:
        doc = _Document(self, index, node)
        if not isinstance(node, yaml.MappingNode) or not isinstance(doc.data, dict):
            doc.refuse(
                (), f"document {index}: a resource is a mapping of apiVersion, kind, name, spec"
            )
            return
        if not doc.envelope_ok():
            return
        if self.environ is not None:
            doc.data = doc.expanded(doc.data, (), self.environ)
            if doc.failed:
                return
        readers: dict[str, Callable[[_Document], Spec | None]] = {
            SOURCE: _read_source,
            QUERY: _read_query,
            REACTION: _read_reaction,
        }
        spec = readers[doc.kind](doc)
        if spec is not None:
            self.resources.append(Resource(doc.kind, doc.name, doc.position(()), spec, node))

    def check_names(self) -> None:
        """Two documents of one kind may not share a name."""
        seen: set[tuple[str, str]] = set()
        for resource in self.resources:
            key = (resource.kind, resource.name)
            if key in seen:
                where = f"document {resource.position.document} ({resource.label}) name"
                message = f"a second {resource.kind} named {resource.name!r} in the file"
                self.problems.append(ResourceProblem(resource.locate("name"), where, message))
            seen.add(key)


class _Document:
    """One document: its data, its node, and how to point at a field in it."""

    def __init__(self, reader: _Reader, index: int, node: yaml.Node) -> None:
        self.reader = reader
        self.index = index
        self.node = node
        self.data: Any = SafeConstructor().construct_document(node)
        self.kind = ""
        self.name = ""
        self.failed = False
        """Set by a refusal: the document is not built onto its model."""

    # -- positions and findings ---------------------------------------------------------

    def position(self, path: Path_, key: bool = False) -> Position:
        return _position(self.reader.file, self.index, _node_at(self.node, path, key))

    def where(self, path: Path_) -> str:
        """``Kind/name spec.field`` once the envelope is read, ``document N field`` before."""
        label = f"{self.kind}/{self.name}" if self.name else f"document {self.index}"
        return f"{label} {_dotted(path)}" if path else label

    def refuse(self, path: Path_, message: str, key: bool = False) -> None:
        self.failed = True
        self.reader.problems.append(
            ResourceProblem(self.position(path, key), self.where(path), message)
        )

    def notice(self, path: Path_, message: str) -> None:
        self.reader.notices.append(ResourceNotice(self.position(path), self.where(path), message))

    def unknown_keys(self, path: Path_, value: Mapping[str, Any], allowed: set[str]) -> bool:
        """Refuse each key of ``value`` not in ``allowed``; whether there was none."""
        unknown = [key for key in value if key not in allowed]
        for key in unknown:
            self.refuse((*path, key), "unknown key", key=True)
        return not unknown

    # -- the envelope -------------------------------------------------------------------

    def envelope_ok(self, need_spec: bool = True) -> bool:
        """apiVersion, kind, name and spec (with ``need_spec``), each checked; whether the
        document can be read."""
        data = self.data
        ok = self.unknown_keys((), data, _ENVELOPE)
        version = data.get("apiVersion")
        if version != API_VERSION:
            said = "no apiVersion" if version is None else f"unknown apiVersion {version!r}"
            self.refuse(("apiVersion",), f"{said}; Drasi's resources are apiVersion: v1")
            ok = False
        kind = data.get("kind")
        if kind not in KINDS:
            self.refuse(("kind",), self._kind_message(kind))
            return False
        self.kind = kind
        name = data.get("name")
        if not isinstance(name, str) or not name:
            self.refuse(("name",), f"a {kind} needs a name (a non-empty string)")
            return False
        self.name = name
        if need_spec and not isinstance(data.get("spec"), dict):
            self.refuse(("spec",), "spec: a mapping is required")
            return False
        if "tag" in data:
            self.notice(("tag",), "the image tag of Drasi's reaction containers: ignored")
        return ok

    @staticmethod
    def _kind_message(kind: Any) -> str:
        said = "no kind" if kind is None else f"unknown kind {kind!r}"
        reason = _PLATFORM_ONLY.get(kind) if isinstance(kind, str) else None
        return f"{said}; {reason or 'drasi_ray reads Source, ContinuousQuery and Reaction'}"

    # -- validation onto a model --------------------------------------------------------

    def validated(
        self, model: type[BaseModel], raw: dict[str, Any], trail: dict[Path_, Path_]
    ) -> Any:
        """``model`` built from ``raw``; on failure each error is refused at the document path
        that ``trail`` maps its location to (None is returned)."""
        if self.failed:
            return None
        try:
            return model.model_validate(raw)
        except ValidationError as exc:
            for error in exc.errors():
                path = _translate(tuple(error["loc"]), trail)
                unknown = error["type"] == "extra_forbidden"
                self.refuse(path, "unknown key" if unknown else error["msg"], key=unknown)
            return None

    def expanded(self, value: Any, path: Path_, environ: Mapping[str, str]) -> Any:
        """``value`` with its ``${NAME}`` and ``${file:PATH}`` references expanded; one that
        cannot be is refused at its path (the value left as it was)."""
        if isinstance(value, dict):
            return {k: self.expanded(v, (*path, k), environ) for k, v in value.items()}
        if isinstance(value, list):
            return [self.expanded(v, (*path, i), environ) for i, v in enumerate(value)]
        if not isinstance(value, str) or "${" not in value:
            return value
        try:
            return expand_secrets(value, environ, "")
        except ConfigError as exc:
            self.refuse(path, str(exc).removeprefix(": : "))
            return value

    def config_value(self, path: Path_, value: Any) -> Any:
        """A property value: Drasi's ``{kind: Inline, value}`` is its value; a secret reference
        ``{kind: Secret, name, key}`` is refused (drasi_ray has no secret store)."""
        if (
            isinstance(value, dict)
            and value.get("kind") == "Inline"
            and set(value) == {"kind", "value"}
        ):
            return value["value"]
        if isinstance(value, dict) and value.get("kind") == "Secret":
            self.refuse(
                path,
                "a secret reference needs Drasi's secret store: write ${VARIABLE} or "
                "${file:PATH} instead (expanded when the file is read, never stored)",
            )
        return value


def _field_name(key: str, model: type[BaseModel], aliases: Mapping[str, str] | None = None) -> str:
    """The model's field for a key written in Drasi's camelCase (or already in snake_case);
    an unknown key stays as written, so the model refuses it by that name."""
    if aliases and key in aliases:
        return aliases[key]
    snake = _CAMEL.sub("_", key).lower()
    return snake if snake in model.model_fields or snake == "stream_key" else key


def _properties(
    doc: _Document,
    path: Path_,
    given: Any,
    model: type[BaseModel],
    aliases: Mapping[str, str] | None = None,
) -> tuple[dict[str, Any], dict[Path_, Path_]] | None:
    """``given`` (a mapping at ``path``) as the model's fields, and the trail back to it."""
    if given is None:
        return {}, {}
    if not isinstance(given, dict):
        doc.refuse(path, "a mapping is required")
        return None
    values: dict[str, Any] = {}
    trail: dict[Path_, Path_] = {}
    for key, value in given.items():
        name = _field_name(str(key), model, aliases)
        values[name] = doc.config_value((*path, key), value)
        trail[(name,)] = (*path, key)
    return values, trail


# -- Source ---------------------------------------------------------------------------


def _read_source(doc: _Document) -> SourceSpec | PostgresSourceSpec | None:
    spec = doc.data["spec"]
    ok = doc.unknown_keys(("spec",), spec, _SOURCE_SPEC)
    if "services" in spec:
        doc.notice(
            ("spec", "services"),
            "the containers Drasi's platform runs a source in; drasi_ray runs consumer actors "
            "(properties.consumers)",
        )
    if "identity" in spec:
        doc.refuse(
            ("spec", "identity"),
            "drasi_ray has no identity providers: put the credentials in properties",
        )
        ok = False
    kind = spec.get("kind")
    written = str(kind).lower() if kind is not None else None
    if written == "postgresql":
        read = _postgres_properties(doc, spec.get("properties"))
        model: type[BaseModel] = PostgresSourceSpec
    elif written in SOURCE_FORMATS:
        read = _platform_properties(doc, spec.get("properties"), SOURCE_FORMATS[written])
        model = SourceSpec
    else:
        doc.refuse(("spec", "kind"), _source_kind_message(kind))
        return None
    if read is None or not ok:
        return None
    properties, trail = read
    raw: dict[str, Any] = {"id": doc.name, "properties": properties}
    if model is PostgresSourceSpec:
        raw["kind"] = "PostgreSQL"
    for key in _SOURCE_SPEC - {"kind", "properties", "services", "identity"}:
        if key in spec:
            raw[_field_name(key, model)] = spec[key]
    full_trail: dict[Path_, Path_] = {
        (): ("spec",),
        ("id",): ("name",),
        ("kind",): ("spec", "kind"),
        ("properties",): ("spec", "properties"),
    }
    full_trail.update({(_field_name(k, model),): ("spec", k) for k in spec})
    full_trail.update({("properties", *name): path for name, path in trail.items()})
    return doc.validated(model, raw, full_trail)  # type: ignore[no-any-return]


Read = tuple[dict[str, Any], dict[Path_, Path_]]


def _platform_properties(doc: _Document, given: Any, source_format: str) -> Read | None:
    """A Platform (or Debezium, DeltaForge) source's properties as PlatformSourceConfig's."""
    path: Path_ = ("spec", "properties")
    read = _properties(doc, path, given, PlatformSourceConfig)
    if read is None:
        return None
    properties, trail = read
    if isinstance(properties.get("cdc"), dict):
        nested = _nested(doc, (*path, _written(given, "cdc")), properties["cdc"], CdcConfig)
        properties["cdc"], more = nested
        trail.update({("cdc", *name): written for name, written in more.items()})
    if not _format_agrees(doc, properties, source_format):
        return None
    return properties, trail


def _postgres_properties(doc: _Document, given: Any) -> Read | None:
    """A PostgreSQL source's properties (Drasi's, and drasi_ray's own) as
    PostgresSourceConfig's; Drasi's ``ssl: true|false`` is ``sslMode: require|disable``."""
    path: Path_ = ("spec", "properties")
    read = _properties(doc, path, given, PostgresSourceConfig)
    if read is None:
        return None
    properties, trail = read
    if not _database_settings(doc, properties, trail):
        return None
    if "redis_url" not in properties:
        if doc.reader.redis_url is None:
            doc.refuse(
                path,
                "redisUrl is required: the Redis the reader writes the database's changes to "
                "(drasi-ray run --redis-url gives it)",
            )
            return None
        properties["redis_url"] = doc.reader.redis_url
    for name, model in (("table_keys", TableKey), ("relations", RelationSpec)):
        entries = properties.get(name)
        if isinstance(entries, list):
            converted = []
            for index, entry in enumerate(entries):
                where = (*trail[(name,)], index)
                item, more = (
                    _nested(doc, where, entry, model) if isinstance(entry, dict) else (entry, {})
                )
                converted.append(item)
                trail.update({(name, index, *k): v for k, v in more.items()})
            properties[name] = converted
    return properties, trail


def _database_settings(doc: _Document, props: dict[str, Any], trail: dict[Path_, Path_]) -> bool:
    """A PostgreSQL connection's settings as drasi_ray's (a source's, a StoredProc reaction's):
    a password is refused (False), Drasi's ``ssl: true|false`` is ``sslMode: require|disable``."""
    if "password" in props:
        doc.refuse(
            trail[("password",)],
            "a password is never written in drasi_ray's configuration: name the environment "
            "variable holding it (passwordEnv: VAR) or a file (passwordFile: PATH)",
            key=True,
        )
        return False
    if "ssl" in props:
        ssl = props.pop("ssl")
        props["ssl_mode"] = "require" if ssl is True else "disable" if ssl is False else ssl
        trail[("ssl_mode",)] = trail.pop(("ssl",))
    return True


def _nested(
    doc: _Document, path: Path_, given: dict[str, Any], model: type[BaseModel]
) -> tuple[dict[str, Any], dict[Path_, Path_]]:
    """A nested mapping's keys as ``model``'s fields, and the trail back to them."""
    values = {_field_name(str(key), model): value for key, value in given.items()}
    trail: dict[Path_, Path_] = {(_field_name(str(key), model),): (*path, key) for key in given}
    return values, trail


def _written(given: Any, name: str) -> str:
    """The key a property was written under (``cdc`` is ``cdc`` in either spelling)."""
    return (
        name
        if not isinstance(given, dict)
        else next((key for key in given if _CAMEL.sub("_", str(key)).lower() == name), name)
    )


def _format_agrees(doc: _Document, properties: dict[str, Any], source_format: str) -> bool:
    """The kind sets the format; a ``format`` property must say the same."""
    written = properties.get("format")
    if written is not None and str(written).lower() != source_format:
        doc.refuse(
            ("spec", "properties", "format"),
            f"format {written!r} contradicts kind {doc.data['spec']['kind']!r}",
        )
        return False
    properties["format"] = source_format
    return True


def _source_kind_message(kind: Any) -> str:
    known = "Platform (Drasi's platform events on Redis Streams), Debezium, DeltaForge, PostgreSQL"
    if kind is None:
        return f"a source needs a kind: {known}"
    return (
        f"source kind {kind!r} is not available in drasi_ray (kinds: {known}); a database's "
        "changes can reach it through Debezium Server's Redis sink (kind: Debezium)"
    )


# -- ContinuousQuery ------------------------------------------------------------------


def _read_query(doc: _Document) -> QueryConfig | None:
    spec = doc.data["spec"]
    ok = doc.unknown_keys(("spec",), spec, _QUERY_SPEC)
    _query_hints(doc, spec)
    ok = _check_view(doc, spec.get("view")) and ok
    raw: dict[str, Any] = {"id": doc.name, "query": spec.get("query")}
    trail: dict[Path_, Path_] = {(): ("spec",), ("id",): ("name",), ("query",): ("spec", "query")}
    language = spec.get("queryLanguage")
    if language is not None:
        raw["query_language"] = str(language).lower()
        trail[("query_language",)] = ("spec", "queryLanguage")
    sources = _query_sources(doc, spec.get("sources"), raw, trail)
    if not (ok and sources):
        return None
    return doc.validated(QueryConfig, raw, trail)  # type: ignore[no-any-return]


def _query_hints(doc: _Document, spec: Mapping[str, Any]) -> None:
    """Notices for what Drasi's platform reads but drasi_ray (or Drasi itself) does not act on."""
    mode = spec.get("mode", "query")
    if mode != "query":
        doc.notice(
            ("spec", "mode"),
            f"mode {mode!r}: Drasi's query host does not act on mode; the query runs as "
            "mode: query",
        )
    if spec.get("container", "default") != "default":
        doc.notice(
            ("spec", "container"),
            "query containers place queries in Drasi's platform; drasi_ray places them on its "
            "query hosts",
        )
    if spec.get("storageProfile") is not None:
        doc.notice(
            ("spec", "storageProfile"),
            "drasi_ray keeps query indexes in memory and durable state in the app's Redis",
        )


def _check_view(doc: _Document, view: Any) -> bool:
    """``view``: drasi_ray always keeps a query's current results, and only those."""
    if view is None:
        return True
    if not isinstance(view, dict) or not doc.unknown_keys(
        ("spec", "view"), view, {"enabled", "retentionPolicy"}
    ):
        if not isinstance(view, dict):
            doc.refuse(("spec", "view"), "a mapping of enabled and retentionPolicy is required")
        return False
    if view.get("enabled", True) is False:
        doc.notice(
            ("spec", "view", "enabled"),
            "drasi_ray always keeps a query's current results (drasi-ray watch, DrasiRay.results)",
        )
    policy = view.get("retentionPolicy", "latest")
    if policy != "latest":
        doc.refuse(
            ("spec", "view", "retentionPolicy"),
            f"retentionPolicy {policy!r}: drasi_ray keeps only the latest result set (the "
            "query's platform reaction keeps every change on its stream <query>-results)",
        )
        return False
    return True


def _query_sources(
    doc: _Document, sources: Any, raw: dict[str, Any], trail: dict[Path_, Path_]
) -> bool:
    """``spec.sources``: subscriptions (with pipelines and labels), joins and middleware."""
    path: Path_ = ("spec", "sources")
    if not isinstance(sources, dict):
        doc.refuse(path, "a mapping with subscriptions (and joins, middleware) is required")
        return False
    ok = doc.unknown_keys(path, sources, _QUERY_SOURCES)
    subscriptions = sources.get("subscriptions")
    if not isinstance(subscriptions, list) or not subscriptions:
        doc.refuse(
            (*path, "subscriptions"), "a list of at least one subscription ({id}) is required"
        )
        return False
    raw["sources"] = []
    for index, entry in enumerate(subscriptions):
        ok = _subscription(doc, (*path, "subscriptions", index), entry, raw, trail) and ok
    trail[("sources",)] = (*path, "subscriptions")
    if sources.get("joins") is not None:
        raw["joins"] = sources["joins"]
        trail[("joins",)] = (*path, "joins")
    for index, entry in enumerate(sources.get("middleware") or ()):
        ok = _middleware(doc, (*path, "middleware", index), entry, raw, trail) and ok
    return ok


def _subscription(
    doc: _Document, path: Path_, entry: Any, raw: dict[str, Any], trail: dict[Path_, Path_]
) -> bool:
    if not isinstance(entry, dict) or "id" not in entry:
        doc.refuse(path, "a subscription is a mapping with an id (and nodes, relations, pipeline)")
        return False
    if not doc.unknown_keys(path, entry, _SUBSCRIPTION):
        return False
    index = len(raw["sources"])
    raw["sources"].append(entry)
    source = str(entry["id"])
    trail[("sources", index)] = (*path, "id")
    trail[("pipelines", source)] = (*path, "pipeline")
    trail[("source_labels", source)] = path
    return True


def _middleware(
    doc: _Document, path: Path_, entry: Any, raw: dict[str, Any], trail: dict[Path_, Path_]
) -> bool:
    """Drasi writes a middleware's settings beside its ``kind`` and ``name``."""
    if not isinstance(entry, dict):
        doc.refuse(path, "a middleware is a mapping of kind, name and its settings")
        return False
    middleware = raw.setdefault("middleware", [])
    index = len(middleware)
    config = {key: value for key, value in entry.items() if key not in ("kind", "name")}
    middleware.append({"name": entry.get("name"), "kind": entry.get("kind"), "config": config})
    trail[("middleware", index)] = path
    trail[("middleware", index, "config")] = path
    return True


# -- Reaction -------------------------------------------------------------------------


def _read_reaction(doc: _Document) -> ReactionDefinition | None:
    spec = doc.data["spec"]
    ok = doc.unknown_keys(("spec",), spec, _REACTION_SPEC)
    if "services" in spec:
        doc.notice(
            ("spec", "services"),
            "the containers Drasi's platform runs a reaction in; drasi_ray runs reactions "
            "beside their queries, or as actors of the app",
        )
    if "identity" in spec:
        doc.refuse(
            ("spec", "identity"),
            "drasi_ray has no identity providers: put the credentials in properties",
        )
        ok = False
    kind = spec.get("kind")
    written = str(kind).lower() if kind is not None else ""
    if written in APP_REACTIONS:
        return _read_app_reaction(doc, written) if ok else None
    model = REACTION_MODELS.get(written)
    if model is None:
        doc.refuse(("spec", "kind"), _reaction_kind_message(kind))
        return None
    queries = _reaction_queries(doc, spec.get("queries"), str(kind))
    aliases = _REACTION_ALIASES if model is PlatformReaction else None
    read = _properties(doc, ("spec", "properties"), spec.get("properties"), model, aliases)
    if read is None or queries is None or not ok:
        return None
    properties, trail = read
    raw = {**properties, "kind": written, "name": doc.name}
    trail.update({(): ("spec",), ("kind",): ("spec", "kind"), ("name",): ("name",)})
    reaction = doc.validated(model, raw, trail)
    return None if reaction is None else ReactionDefinition(queries, reaction)


def _reaction_queries(doc: _Document, queries: Any, kind: str) -> tuple[str, ...] | None:
    """``spec.queries``: query id -> its per-query settings (a mapping, as Drasi writes it),
    or a list of query ids. These reaction kinds take no per-query settings."""
    settings = _query_settings(doc, queries)
    if settings is None:
        return None
    ok = True
    for query_id, given in settings.items():
        if given not in (None, "", {}):
            doc.refuse(
                ("spec", "queries", query_id),
                f"per-query settings are not used by reaction kind {kind!r}",
            )
            ok = False
    return tuple(settings) if ok else None


def _query_settings(doc: _Document, queries: Any) -> dict[str, Any] | None:
    """``spec.queries`` as query id -> its settings (None when a list names it); a per-query
    settings text is YAML, as Drasi's platform reads it."""
    path: Path_ = ("spec", "queries")
    if isinstance(queries, list) and queries and all(isinstance(q, str) for q in queries):
        return dict.fromkeys(queries)
    if not isinstance(queries, dict) or not queries:
        doc.refuse(
            path,
            "the queries the reaction reads are required (query id: settings, or a list of ids)",
        )
        return None
    settings: dict[str, Any] = {}
    for query_id, given in queries.items():
        if isinstance(given, str) and given.strip():
            try:
                given = yaml.safe_load(given)
            except yaml.YAMLError as exc:
                doc.refuse((*path, query_id), f"its settings are not YAML: {exc}")
                return None
        settings[str(query_id)] = given
    return settings


def _read_app_reaction(doc: _Document, kind: str) -> ReactionDefinition | None:
    """A reaction that runs as an actor of the app (HTTP, SSE and Debug, stored procedures):
    one spec over every query it names."""
    spec = doc.data["spec"]
    settings = _query_settings(doc, spec.get("queries"))
    model, aliases, build = APP_REACTIONS[kind]
    read = _properties(doc, ("spec", "properties"), spec.get("properties"), model, aliases)
    if read is None or settings is None:
        return None
    properties, trail = read
    raw = build(doc, properties, trail, settings)
    if raw is None:
        return None
    raw.update(id=doc.name)
    trail.update({(): ("spec",), ("id",): ("name",), ("queries",): ("spec", "queries")})
    reaction = doc.validated(model, raw, trail)
    return None if reaction is None else ReactionDefinition(tuple(settings), reaction)


def _http(
    doc: _Document, props: dict[str, Any], trail: dict[Path_, Path_], queries: dict[str, Any]
) -> dict[str, Any] | None:
    """Drasi's Http reaction: ``baseUrl``, and per query its ``added``/``updated``/
    ``deleted`` calls (``url``, ``method``, ``body``, ``headers``)."""
    if "token" in props:
        doc.refuse(
            trail[("token",)],
            "a token is never written in drasi_ray's configuration: name the environment "
            "variable holding it (tokenEnv: VAR) or a file (tokenFile: PATH)",
            key=True,
        )
        return None
    for query_id in queries:
        trail[("queries", query_id)] = ("spec", "queries", query_id)
    return {**props, "kind": "http", "queries": queries}


def _sse(
    doc: _Document, props: dict[str, Any], trail: dict[Path_, Path_], queries: dict[str, Any]
) -> dict[str, Any] | None:
    """Drasi Server's SSE reaction (``host``, ``port``); Drasi's Debug reaction, a web page of
    the queries' results, is the same with its dashboard."""
    for query_id, given in queries.items():
        if given not in (None, "", {}):
            doc.refuse(("spec", "queries", query_id), "per-query settings are not used here")
            return None
    return {**props, "kind": "sse", "queries": tuple(queries)}


def _storedproc(
    doc: _Document, props: dict[str, Any], trail: dict[Path_, Path_], queries: dict[str, Any]
) -> dict[str, Any] | None:
    """Drasi's StoredProc reaction on PostgreSQL (``databaseClient: pg``): its ``database*``
    settings, ``addedResultCommand`` and the others; a query may have its own commands."""
    client = str(props.pop("database_client", "pg")).lower()
    trail.pop(("database_client",), None)
    if client not in ("pg", "postgres", "postgresql"):
        doc.refuse(
            ("spec", "properties", "databaseClient"),
            f"databaseClient {client!r}: drasi_ray calls procedures on PostgreSQL only (pg)",
        )
        return None
    if not _database_settings(doc, props, trail):
        return None
    own: dict[str, Any] = {}
    for query_id, given in queries.items():
        commands = given
        if isinstance(given, dict):
            commands = {
                _STOREDPROC_ALIASES.get(k, _field_name(k, StoredProcCommands)): v
                for k, v in given.items()
            }
        own[query_id] = commands or None
        trail[("queries", query_id)] = ("spec", "queries", query_id)
    return {**props, "kind": "storedproc-postgres", "queries": own}


def _debug(
    doc: _Document, props: dict[str, Any], trail: dict[Path_, Path_], queries: dict[str, Any]
) -> dict[str, Any] | None:
    raw = _sse(doc, props, trail, queries)
    return None if raw is None else {**raw, "dashboard": True}


AppReactionBuilder = Callable[
    [_Document, dict[str, Any], dict[Path_, Path_], dict[str, Any]], dict[str, Any] | None
]
APP_REACTIONS: dict[str, tuple[type[BaseModel], Mapping[str, str] | None, AppReactionBuilder]] = {
    "http": (HttpReaction, None, _http),
    "sse": (SseReaction, None, _sse),
    "debug": (SseReaction, None, _debug),
    "storedproc": (PostgresStoredProcReaction, _STOREDPROC_ALIASES, _storedproc),
    "storedproc-postgres": (PostgresStoredProcReaction, _STOREDPROC_ALIASES, _storedproc),
}
"""Reaction kinds (any case) that run as actors of the app: their model, Drasi's names of
their settings, and how a document becomes the model's input."""


def _reaction_kind_message(kind: Any) -> str:
    known = (
        "Http, StoredProc (PostgreSQL), SSE, Debug (the SSE dashboard), Platform (CloudEvents "
        "on <query>-results, as Drasi's platform writes them), Log, Jsonl, Callback"
    )
    if kind is None:
        return f"a reaction needs a kind: {known}"
    hint = _REACTION_HINTS.get(str(kind).lower(), "")
    return f"reaction kind {kind!r} is not available in drasi_ray (kinds: {known}){hint}"


# -- paths and positions ----------------------------------------------------------------


def _translate(loc: tuple[Any, ...], trail: Mapping[Path_, Path_]) -> Path_:
    """A model location as the document path it came from: the longest prefix ``trail``
    knows, followed by the rest of the location (the same keys, written as given)."""
    for cut in range(len(loc), -1, -1):
        if loc[:cut] in trail:
            return (*trail[loc[:cut]], *loc[cut:])
    return tuple(loc)


def _children(node: yaml.Node | None) -> Iterator[tuple[Any, yaml.Node, yaml.Node]]:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield key.value, key, value
    elif isinstance(node, yaml.SequenceNode):
        for index, value in enumerate(node.value):
            yield index, value, value


def _node_at(node: yaml.Node | None, path: Sequence[Any], key: bool = False) -> yaml.Node | None:
    """The deepest node along ``path`` (parts that are not in the document are skipped, such
    as pydantic's union tags); ``key``: the key node of the last part."""
    for depth, part in enumerate(path):
        last = depth == len(path) - 1
        for name, key_node, value in _children(node):
            if name == part or (isinstance(part, str) and str(name) == part):
                node = key_node if (last and key) else value
                break
    return node


def _depth_reached(node: yaml.Node | None, path: Sequence[Any]) -> bool:
    for part in path:
        found = [value for name, _key, value in _children(node) if name == part]
        if not found:
            return False
        node = found[0]
    return True


def _position(file: str, document: int, node: yaml.Node | None) -> Position:
    if node is None:
        return Position(file, document, 1, 1)
    return Position(file, document, node.start_mark.line + 1, node.start_mark.column + 1)


def _dotted(path: Sequence[Any]) -> str:
    return ".".join(str(part) for part in path)


def _place(problem: ResourceProblem) -> tuple[int, int]:
    """Problems are reported in the order of the file."""
    return problem.position.line, problem.position.column
