"""The whole Redis key schema of drasi_ray, documented once.

Every Redis key or consumer name the package touches is built by a function in this module;
nothing else formats key strings. The schema:

================================  ===============================================================
key                               what it holds
================================  ===============================================================
``<stream_key>``                  a source's change feed (a stream; a source may have several,
                                  one per partition: ``stream_keys``). Named by the user, used
                                  as given, never prefixed: producers already write to it.
``<stream_key>:dlq``              the source's one dead-letter stream (``<stream_key>`` its
                                  first stream): entries of any of its streams that could not
                                  be decoded, or were delivered too often, each naming its
                                  stream (:class:`drasi_ray.streams.records.DeadLetter`).
``<stream_key>:dlq:ids``          a hash: the original entries already dead-lettered (field
                                  :func:`dead_letter_index_field`), so a redelivered bad entry
                                  is not dead-lettered twice.
``<query_id>-results``            a query's result stream, the Drasi platform reaction convention
                                  (so existing Drasi reactions can read it unchanged).
``drasi:<app>:store:<source_id>``  a hash: the versioned element store of one source.
``drasi:<app>:subscriptions``     a hash: the subscription table (query id -> labels).
``drasi:<app>:queries``           a hash: query id -> its registration (settings, query host,
                                  labels), so a restarted coordinator or host knows them.
``drasi:<app>:shards``            a string: the number of store shards the elements are
                                  partitioned over now (a restarted shard takes it).
``drasi:<app>:seq:<query_id>``    a counter: the last sequence number a query emitted
                                  (written in the background: exact once the query is idle).
``drasi:<app>:seq-lease:<query_id>`` a counter: a ceiling every sequence a query emitted stays
                                  at or under (raised before numbers above it are used).
``drasi:<app>:stats:<source_id>``  a hash: durable counters of the changes a source's batches
                                  carried, applied and suppressed as duplicates.
``drasi:<app>:functions:<query_id>`` a hash: the state of a query's stateful functions (its
                                  future queue, kept values and memos, see
                                  :mod:`drasi_ray.query.stateful`), and the digest of the
                                  query text it belongs to.
``drasi:<app>:clock``             a counter: the time of an app's manual clock (tests), so a
                                  restarted query actor resumes at it.
``drasi:<app>:history:<query_id>`` a hash: the element history of a query that calls Drasi's
                                  past functions, one field per element version
                                  (:mod:`drasi_ray.model.history`).
``drasi:<app>:history-limits``    a hash: query id -> the history limits of each query that
                                  keeps a history (JSON).
``drasi:<app>:fused-consumers``   a hash: source id -> the consumer the fused actor runs for
                                  the source (JSON, its Redis URL without a password), so a
                                  restarted fused actor runs the same ones.
``drasi:<app>:chain:<query_id>``  a stream: a query's result rows as node changes, the source
                                  of the queries that read that query (query chaining).
``drasi:<app>:chain:<query_id>:rows`` a hash: row id (the node's id) -> the row, as written
                                  to the chain stream, with ``:token`` (the last batch
                                  written) beside it.
``drasi:<app>:postgres:<source_id>`` a stream: a PostgreSQL source's changes in the platform
                                  format, written by its reader only, each entry id made of the
                                  transaction's WAL position (the default ``stream_key``).
``drasi:<app>:postgres:<source_id>:reader`` a hash: the reader's state (its slot, database
                                  and the snapshot position), so a restarted reader resumes.
``drasi:<app>:reaction:<id>:positions`` a hash: query id -> how far a reaction of the app
                                  (HTTP) got in that query's result stream (JSON: the entry id,
                                  its sequence, the diffs of it done).
``drasi:<app>:reaction:<id>:dlq``  a stream: the diffs a reaction of the app could not deliver,
                                  each with its query, sequence, idempotency key and reason.
``drasi:<app>:control``           a hash: the running app's registration (the ``drasi-ray
                                  run`` process serving its control channel: pid, host, start,
                                  last heartbeat), expiring unless the process renews it.
``drasi:<app>:control:requests``  a stream: requests of the ``drasi-ray`` commands (apply,
                                  list, describe, delete, watch) to the running app.
``drasi:<app>:control:reply:<id>`` a list: the reply to one request, expiring.
================================  ===============================================================

Consumer names inside a group are ``<base>-<i>`` (``i`` = 0, 1, ...): stable across actor
restarts, so a restarted consumer finds its own pending entries again instead of leaving a ghost
consumer behind (a per-restart random name would strand them).

Keys under ``drasi:<app>:`` belong to one app, so two apps can share a Redis database. ``app``
must not contain ``:`` (it would make the namespace ambiguous).

All functions are pure; the module holds no state.
"""

from __future__ import annotations

from drasi_ray.model.errors import ConfigError

NAMESPACE = "drasi"
"""First component of every key drasi_ray owns (user-named streams excepted)."""

DEAD_LETTER_SUFFIX = ":dlq"
RESULTS_SUFFIX = "-results"


def _require(name: str, value: str) -> str:
    if not value:
        raise ConfigError(f"{name} must be a non-empty string")
    return value


def _require_app(app: str) -> str:
    _require("app", app)
    if ":" in app:
        raise ConfigError(f"app must not contain ':' (got {app!r})")
    return app


def dead_letter_stream(stream_key: str) -> str:
    """The dead-letter stream of a source stream: ``<stream_key>:dlq``."""
    return _require("stream_key", stream_key) + DEAD_LETTER_SUFFIX


def dead_letter_index(dead_letter_key: str) -> str:
    """The hash of original entry ids already dead-lettered: ``<dead_letter_stream>:ids``."""
    return _require("dead_letter_key", dead_letter_key) + ":ids"


def dead_letter_index_field(stream_key: str, entry_id: str) -> str:
    """An entry's field in the dead-letter index: ``<stream_key>/<entry_id>``.

    Entry ids are unique per stream only (two streams of a source may both hold ``1-0``), so
    the field names the stream too; an entry id never contains ``/``.
    """
    return f"{_require('stream_key', stream_key)}/{_require('entry_id', entry_id)}"


def result_stream(query_id: str) -> str:
    """A query's result stream: ``<query_id>-results`` (Drasi's reaction convention)."""
    return _require("query_id", query_id) + RESULTS_SUFFIX


def element_store(app: str, source_id: str) -> str:
    """The element-store hash of one source: ``drasi:<app>:store:<source_id>``."""
    return f"{NAMESPACE}:{_require_app(app)}:store:{_require('source_id', source_id)}"


def subscribers(app: str) -> str:
    """The hash of an app's live subscriptions (subscriber id -> spec):
    ``drasi:<app>:subscribers``."""
    return f"{NAMESPACE}:{_require_app(app)}:subscribers"


def subscriptions(app: str) -> str:
    """The subscription-table hash of an app: ``drasi:<app>:subscriptions``."""
    return f"{NAMESPACE}:{_require_app(app)}:subscriptions"


def query_registry(app: str) -> str:
    """The hash of query registrations of an app: ``drasi:<app>:queries``."""
    return f"{NAMESPACE}:{_require_app(app)}:queries"


def shard_count(app: str) -> str:
    """The current number of store shards of an app: ``drasi:<app>:shards``."""
    return f"{NAMESPACE}:{_require_app(app)}:shards"


def result_sequence(app: str, query_id: str) -> str:
    """The result-sequence counter of a query: ``drasi:<app>:seq:<query_id>``."""
    return f"{NAMESPACE}:{_require_app(app)}:seq:{_require('query_id', query_id)}"


def result_sequence_lease(app: str, query_id: str) -> str:
    """The sequence lease (ceiling) of a query: ``drasi:<app>:seq-lease:<query_id>``."""
    return f"{NAMESPACE}:{_require_app(app)}:seq-lease:{_require('query_id', query_id)}"


def coordinator_stats(app: str, source_id: str) -> str:
    """Durable counters of one source (changes, applied, duplicates): ``drasi:<app>:stats:<id>``."""
    return f"{NAMESPACE}:{_require_app(app)}:stats:{_require('source_id', source_id)}"


def function_state(app: str, query_id: str) -> str:
    """The function-state hash of a query: ``drasi:<app>:functions:<query_id>``."""
    return f"{NAMESPACE}:{_require_app(app)}:functions:{_require('query_id', query_id)}"


def manual_clock(app: str) -> str:
    """The time of an app's manual clock: ``drasi:<app>:clock``."""
    return f"{NAMESPACE}:{_require_app(app)}:clock"


def element_history(app: str, query_id: str) -> str:
    """The element history of a query: ``drasi:<app>:history:<query_id>``."""
    return f"{NAMESPACE}:{_require_app(app)}:history:{_require('query_id', query_id)}"


def history_limits(app: str) -> str:
    """The history limits of the queries that keep one: ``drasi:<app>:history-limits``."""
    return f"{NAMESPACE}:{_require_app(app)}:history-limits"


def fused_consumers(app: str) -> str:
    """The consumers the fused actor runs, by source: ``drasi:<app>:fused-consumers``."""
    return f"{NAMESPACE}:{_require_app(app)}:fused-consumers"


DEFAULT_CONSUMER_GROUP = "drasi_ray"
"""The group of a source config used outside any app (tests, benchmarks)."""


def consumer_group(app_id: str) -> str:
    """The consumer group of an app's source that names none: ``drasi_ray.<app id>``, so two
    apps reading one stream each see every entry (sharing a group is a choice made by naming
    it)."""
    return f"{DEFAULT_CONSUMER_GROUP}.{_require('app_id', app_id)}"


def consumer_name(base: str, index: int) -> str:
    """The name of consumer number ``index`` (>= 0) in a group: ``<base>-<index>``."""
    if index < 0:
        raise ConfigError(f"consumer index must be >= 0 (got {index})")
    return f"{_require('base', base)}-{index}"


def chain_stream(app: str, query_id: str) -> str:
    """The stream a chained query's rows are published on as node changes."""
    return f"{NAMESPACE}:{_require_app(app)}:chain:{_require('query_id', query_id)}"


def chain_rows(app: str, query_id: str) -> str:
    """The hash of the rows a chained query has published (node id -> row JSON)."""
    return chain_stream(app, query_id) + ":rows"


def postgres_stream(app: str, source_id: str) -> str:
    """The stream a PostgreSQL source's reader writes by default:
    ``drasi:<app>:postgres:<source_id>``."""
    return f"{NAMESPACE}:{_require_app(app)}:postgres:{_require('source_id', source_id)}"


def postgres_reader(app: str, source_id: str) -> str:
    """The hash of a PostgreSQL reader's state: ``drasi:<app>:postgres:<source_id>:reader``."""
    return postgres_stream(app, source_id) + ":reader"


def reaction_positions(app: str, reaction_id: str) -> str:
    """How far a reaction of the app got per query: ``drasi:<app>:reaction:<id>:positions``."""
    return _reaction_key(app, reaction_id) + ":positions"


def reaction_dead_letters(app: str, reaction_id: str) -> str:
    """A reaction's dead-letter stream: ``drasi:<app>:reaction:<id>:dlq``."""
    return _reaction_key(app, reaction_id) + ":dlq"


def _reaction_key(app: str, reaction_id: str) -> str:
    return f"{NAMESPACE}:{_require_app(app)}:reaction:{_require('reaction_id', reaction_id)}"


def control(app: str) -> str:
    """The running app's registration: ``drasi:<app>:control``."""
    return f"{NAMESPACE}:{_require_app(app)}:control"


def control_requests(app: str) -> str:
    """The commands' requests to the running app: ``drasi:<app>:control:requests``."""
    return f"{NAMESPACE}:{_require_app(app)}:control:requests"


def control_reply(app: str, request_id: str) -> str:
    """The reply to one request: ``drasi:<app>:control:reply:<request_id>``."""
    return f"{control(app)}:reply:{_require('request_id', request_id)}"
