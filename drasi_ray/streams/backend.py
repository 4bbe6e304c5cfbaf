"""``RedisStreamBackend``: the consumer-group operations drasi_ray needs, typed, over redis.asyncio.

Create it inside the actor that uses it (``RedisStreamBackend.from_url(url)``): it owns a
connection pool, which does not pickle; actors receive settings, never a backend.

Contracts shared by every method:

- Redis exceptions are translated at this boundary (:mod:`drasi_ray.streams.redis_errors`):
  unreachable -> ``RedisUnavailableError``, refused -> ``RedisRejectedError``, ``NOGROUP`` ->
  ``GroupMissingError``, anything else -> ``StreamError``; the original is ``__cause__`` and no
  message contains the password.
- Entry ids are ``str``; field names and values stay ``bytes`` (decoding is the caller's).
- The client speaks RESP2 and this class parses the replies of the stream commands itself
  (redis-py's own reply callbacks for them are removed on this private client): one parse per
  entry on the hot path, and the server's exact reply shape (nil entries!) stays visible.

Redis versions: needs >= 6.2 (``XAUTOCLAIM``, exclusive ``XPENDING`` ranges). Both
``XAUTOCLAIM`` reply shapes are handled: 6.2 answers ``[cursor, entries]`` where a claimed
entry whose data was deleted is a bare nil (its id is not in the reply, and it stays pending on
the claimer); 7.0+ answers ``[cursor, entries, deleted_ids]`` and drops those from the pending
list itself.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis import exceptions as rexc

from drasi_ray.model import keys, urls
from drasi_ray.model.changes import parse_entry_id
from drasi_ray.model.errors import AckError, GroupMissingError, StreamError
from drasi_ray.streams import admin, redis_errors, resp
from drasi_ray.streams.records import (
    ClaimResult,
    ConsumerInfo,
    DeadLetter,
    GroupProgress,
    StreamEntry,
)

__all__ = [
    "ClaimResult",
    "ConsumerInfo",
    "DeadLetter",
    "GroupProgress",
    "RedisStreamBackend",
    "StreamEntry",
]

# KEYS: dead-letter stream, its index. ARGV: the entry's index field, then XADD's arguments.
_DEAD_LETTER_ONCE = """
if redis.call('HSETNX', KEYS[2], ARGV[1], '1') == 0 then return false end
return redis.call('XADD', KEYS[1], unpack(ARGV, 2))
"""
_RAW_REPLY_COMMANDS = ("XREADGROUP", "XAUTOCLAIM", "XCLAIM", "XPENDING")
_MAX_SEQ = 18446744073709551615  # largest sequence part of a stream id (2**64 - 1)
_OWN_PENDING_PAGE = 500


def _pairs(flat: list[bytes]) -> dict[bytes, bytes]:
    if len(flat) == 2:  # the common shape: one field (``data``)
        return {flat[0]: flat[1]}
    it = iter(flat)
    return dict(zip(it, it, strict=False))


def _entries(raw: Iterable[Any]) -> tuple[list[StreamEntry], int]:
    """Parse ``[[id, [f, v, ...] | nil] | nil, ...]`` -> entries, and the count of bare nils."""
    out: list[StreamEntry] = []
    nils = 0
    for item in raw:
        if item is None:
            nils += 1
            continue
        fields = item[1]
        out.append(StreamEntry(item[0].decode(), None if fields is None else _pairs(fields)))
    return out, nils


def _id_before(entry_id: str) -> str:
    """The largest stream id smaller than ``entry_id`` ("0" for 0-0): an exclusive lower bound."""
    ms, seq = parse_entry_id(entry_id)
    if seq > 0:
        return f"{ms}-{seq - 1}"
    if ms > 0:
        return f"{ms - 1}-{_MAX_SEQ}"
    return "0"


class RedisStreamBackend:
    """Thin async access to one Redis server's streams and consumer groups.

    Holds one piece of state besides the client: the ``XAUTOCLAIM`` cursor per
    (stream, group, consumer), so successive :meth:`autoclaim` calls walk the whole pending
    list a page at a time instead of rescanning its head.
    """

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        target: str = "redis",
        secrets: tuple[str, ...] = (),
    ) -> None:
        """Wrap ``client`` (must use ``decode_responses=False`` and RESP2).

        ``target`` is how messages name the server (already redacted); ``secrets`` are scrubbed
        from every message. Prefer :meth:`from_url`.
        """
        for command in _RAW_REPLY_COMMANDS:
            client.response_callbacks.pop(command, None)
        self._client = client
        # execute_command is untyped in redis-py; give it one typed name.
        self._execute: Callable[..., Awaitable[Any]] = client.execute_command
        self._target = target
        self._secrets = secrets
        self._cursors: dict[tuple[str, str, str], str] = {}
        self._reads = resp.Pipe(client)  # read_new's own connection (module docstring)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisStreamBackend:
        """Connect lazily to ``url``; ``options`` go to ``redis.asyncio.Redis.from_url``.

        ``decode_responses`` and ``protocol`` are fixed (bytes, RESP2). If you pass
        ``socket_timeout``, keep it above every ``block_ms`` you read with, or a blocked read
        times out as ``RedisUnavailableError``.
        """
        options["decode_responses"] = False
        options["protocol"] = 2
        client = aioredis.Redis.from_url(url, **options)
        return cls(
            client,
            target=urls.redact_url(url),
            secrets=urls.url_secrets(url),
        )

    @property
    def client(self) -> aioredis.Redis:
        """The underlying client, for commands this class does not wrap (tests, tooling)."""
        return self._client

    def _error(
        self, exc: BaseException, operation: str, stream: str = "", group: str = ""
    ) -> StreamError:
        return redis_errors.translate(
            exc, operation, self._target, self._secrets, stream=stream, group=group
        )

    async def _xinfo(self, subcommand: str, stream: str, group: str = "") -> Any | None:
        """``XINFO <subcommand> <stream>``'s reply, or None if the stream does not exist."""
        operation = f"XINFO {subcommand}"
        try:
            return await self._execute("XINFO", subcommand, stream)
        except rexc.ResponseError as exc:
            if admin.is_missing_key(exc):
                return None
            raise self._error(exc, operation, stream, group) from exc
        except (rexc.RedisError, OSError) as exc:
            raise self._error(exc, operation, stream, group) from exc

    async def _call(self, stream: str, group: str, *args: Any) -> Any:
        """Run one command; translate failures. ``args[0]`` is the command name."""
        try:
            return await self._execute(*args)
        except (rexc.RedisError, OSError) as exc:
            raise self._error(exc, str(args[0]), stream, group) from exc

    # -- groups --------------------------------------------------------------------------

    async def ensure_group(self, stream: str, group: str, start_id: str = "$") -> bool:
        """Create ``group`` on ``stream`` (and the stream if missing). False if it existed.

        ``start_id`` "$" delivers only entries added after creation; "0" the whole history.
        Idempotent: safe to call on every start and after a ``GroupMissingError``.
        """
        try:
            await self._execute("XGROUP", "CREATE", stream, group, start_id, "MKSTREAM")
        except rexc.ResponseError as exc:
            if str(exc).startswith("BUSYGROUP"):
                return False
            raise self._error(exc, "XGROUP CREATE", stream, group) from exc
        except (rexc.RedisError, OSError) as exc:
            raise self._error(exc, "XGROUP CREATE", stream, group) from exc
        return True

    async def delete_consumer(self, stream: str, group: str, consumer: str) -> int:
        """``XGROUP DELCONSUMER``; returns how many pending entries the consumer still had.

        Those entries are gone from the pending list for good (nobody can claim them), so
        only delete a consumer whose pending list is empty. Forgets its claim cursor.
        """
        self._cursors.pop((stream, group, consumer), None)
        return int(
            await self._call(stream, group, "XGROUP", "DELCONSUMER", stream, group, consumer)
        )

    # -- reading -------------------------------------------------------------------------

    async def read_pending(
        self, stream: str, group: str, consumer: str, count: int, after: str = "0"
    ) -> list[StreamEntry]:
        """Up to ``count`` of this consumer's own pending entries with ids above ``after``.

        What a restarted consumer reads first. Entries whose data was deleted come back with
        ``fields=None``: ack them. Page on by passing the last id seen as ``after``; an empty
        list means none are left. ``GroupMissingError`` if the group is gone.
        """
        reply = await self._call(
            stream, group, "XREADGROUP", "GROUP", group, consumer,
            "COUNT", count, "STREAMS", stream, after,
        )  # fmt: skip
        return _entries(reply[0][1])[0] if reply else []

    async def read_new(
        self,
        stream: str,
        group: str,
        consumer: str,
        count: int,
        block_ms: int | None = None,
        *,
        ack: Sequence[str] = (),
        acked: Callable[[int | StreamError], None] | None = None,
    ) -> list[StreamEntry]:
        """Up to ``count`` never-delivered entries (id ``>``), now pending on ``consumer``.

        ``block_ms=None`` returns at once; otherwise waits up to ``block_ms`` for an entry
        (0 = forever, as in Redis). An empty list means nothing arrived.
        ``GroupMissingError`` (``NOGROUP``) after the group or the stream vanished.

        Reads go over a connection of their own (:class:`~drasi_ray.streams.resp.Pipe`): call
        it from one task at a time (a consumer's read loop), as a blocked read holds it.

        ``ack``: ids to acknowledge first, in ONE ``XACK`` sent in the same write on the same
        connection (Redis runs it before the read); ``acked`` is then called, as soon as its
        reply is read and before the read's (which may block), with how many were pending or
        the translated error. If the connection fails first, ``acked`` is not called and the
        read raises: the ids may or may not be acked (at-least-once: they are read again).
        """
        command: list[Any] = ["XREADGROUP", "GROUP", group, consumer, "COUNT", count]
        if block_ms is not None:
            command += ["BLOCK", block_ms]
        command += ["STREAMS", stream, ">"]
        packed = [resp.pack(command)]
        on_reply = None
        if ack:
            packed.insert(0, resp.pack(("XACK", stream, group, *ack)))
            if acked is not None:
                on_reply = self._reporting_ack(acked, stream, group)
        try:
            reply = (await self._reads.execute(packed, on_reply))[-1]
        except (rexc.RedisError, OSError) as exc:
            raise self._error(exc, "XREADGROUP", stream, group) from exc
        if isinstance(reply, rexc.ResponseError):
            raise self._error(reply, "XREADGROUP", stream, group) from reply
        return _entries(reply[0][1])[0] if reply else []

    def _reporting_ack(
        self, acked: Callable[[int | StreamError], None], stream: str, group: str
    ) -> Callable[[int, Any], None]:
        """The reply callback that hands the first reply (an XACK's) to ``acked``."""

        def on_reply(index: int, reply: Any) -> None:
            if index == 0:
                if isinstance(reply, rexc.ResponseError):
                    acked(self._error(reply, "XACK", stream, group))
                else:
                    acked(int(reply))

        return on_reply

    # -- acknowledging -------------------------------------------------------------------

    async def ack(self, stream: str, group: str, ids: Sequence[str]) -> int:
        """Acknowledge ``ids`` with ONE ``XACK``; returns how many were pending.

        Ids that were not pending (already acked, never delivered) count 0 and are no error:
        at-least-once callers may ack twice. Note Redis answers 0, not ``NOGROUP``, when the
        group or stream is gone. If the batch is refused as a whole (e.g. one malformed id),
        each id is acked on its own and :class:`AckError` lists the ones that still failed.
        """
        if not ids:
            return 0
        try:
            # Hand-packed (drasi_ray.streams.resp): one id per argument, a batch per call.
            (reply,) = await resp.execute_packed(
                self._client, [resp.pack(("XACK", stream, group, *ids))]
            )
            if isinstance(reply, rexc.ResponseError):
                raise reply
            return int(reply)
        except rexc.ResponseError as exc:
            if redis_errors.is_rejection(exc):
                raise self._error(exc, "XACK", stream, group) from exc
            return await self._ack_each(stream, group, ids)
        except (rexc.RedisError, OSError) as exc:
            raise self._error(exc, "XACK", stream, group) from exc

    async def _ack_each(self, stream: str, group: str, ids: Sequence[str]) -> int:
        """The fallback of :meth:`ack`: one pipelined ``XACK`` per id, failures collected."""
        pipe = self._client.pipeline(transaction=False)
        for entry_id in ids:
            pipe.execute_command("XACK", stream, group, entry_id)
        try:
            results = await pipe.execute(raise_on_error=False)
        except (rexc.RedisError, OSError) as exc:
            raise self._error(exc, "XACK", stream, group) from exc
        acked = 0
        failed: dict[str, str] = {}
        for entry_id, result in zip(ids, results, strict=True):
            if isinstance(result, Exception):
                failed[entry_id] = urls.scrub(str(result), self._secrets)
            else:
                acked += int(result)
        if failed:
            shown = ", ".join(list(failed)[:5])
            raise AckError(
                f"XACK on {self._target} failed for {len(failed)} id(s) of {stream!r}/{group!r}:"
                f" {shown}",
                acked,
                failed,
            )
        return acked

    # -- claiming ------------------------------------------------------------------------

    async def autoclaim(
        self, stream: str, group: str, consumer: str, min_idle_ms: int, count: int
    ) -> ClaimResult:
        """One ``XAUTOCLAIM`` step: take up to ``count`` entries idle >= ``min_idle_ms``.

        The scan cursor is kept per (stream, group, consumer) and advances across calls; when
        Redis returns cursor 0-0 the scan wrapped and the next call starts from the head.
        Every claim raises the entries' delivery counts by one. Deleted entries are reported in
        ``deleted_ids`` (on 6.2 found with one extra own-pending read per affected step).
        """
        key = (stream, group, consumer)
        start = self._cursors.get(key, "0-0")
        reply = await self._call(
            stream, group, "XAUTOCLAIM", stream, group, consumer, min_idle_ms, start,
            "COUNT", count,
        )  # fmt: skip
        cursor = reply[0].decode()
        entries, nils = _entries(reply[1])
        deleted = [raw.decode() for raw in reply[2]] if len(reply) > 2 else []
        if nils:  # Redis 6.2 shape: the claimed-but-deleted ids are not in the reply
            deleted += await self._own_deleted(stream, group, consumer, start, cursor)
        if cursor == "0-0":
            self._cursors.pop(key, None)
        else:
            self._cursors[key] = cursor
        return ClaimResult(tuple(entries), tuple(deleted))

    async def _own_deleted(
        self, stream: str, group: str, consumer: str, start: str, end: str
    ) -> list[str]:
        """Ids in [start, end) pending on ``consumer`` whose data is gone (end 0-0 = no end).

        Found by reading the consumer's own pending entries over the range the claim step
        scanned: a deleted entry reads back as an id with nil fields.
        """
        limit = None if end == "0-0" else parse_entry_id(end)
        after = _id_before(start)
        deleted: list[str] = []
        while True:
            page = await self.read_pending(stream, group, consumer, _OWN_PENDING_PAGE, after)
            for entry in page:
                if limit is not None and parse_entry_id(entry.id) >= limit:
                    return deleted
                if entry.fields is None:
                    deleted.append(entry.id)
            if len(page) < _OWN_PENDING_PAGE:
                return deleted
            after = page[-1].id

    def forget_cursor(self, stream: str, group: str, consumer: str) -> None:
        """Restart :meth:`autoclaim`'s scan for this consumer from the head next time."""
        self._cursors.pop((stream, group, consumer), None)

    async def renew_claim(
        self, stream: str, group: str, consumer: str, ids: Sequence[str]
    ) -> list[str]:
        """Reset the idle time of ``ids`` to 0 (``XCLAIM ... 0 <ids> IDLE 0 JUSTID``).

        For a batch that takes longer than the reclaim idle time: keeps peers' ``XAUTOCLAIM``
        off it. Returns the ids still pending (the others were acked meanwhile). JUSTID leaves
        delivery counts alone. Caveat: min-idle 0 also takes back an id a peer already
        claimed; renew before ``min_idle_ms`` elapses, not after.
        """
        if not ids:
            return []
        reply = await self._call(
            stream, group, "XCLAIM", stream, group, consumer, 0, *ids, "IDLE", 0, "JUSTID"
        )
        return [raw.decode() for raw in reply]

    # -- inspecting ----------------------------------------------------------------------

    async def delivery_counts(self, stream: str, group: str, ids: Sequence[str]) -> dict[str, int]:
        """How often each of ``ids`` was delivered (``XPENDING`` extended form).

        Ids not pending (acked meanwhile) are absent from the result. Scans the range
        min(ids)..max(ids) a page at a time, so it costs one call unless other consumers'
        entries are interleaved with these.
        """
        wanted = set(ids)
        if not wanted:
            return {}
        ordered = sorted(wanted, key=parse_entry_id)
        page_size = max(len(wanted), 100)
        start, end = ordered[0], ordered[-1]
        found: dict[str, int] = {}
        while True:
            page = await self._call(stream, group, "XPENDING", stream, group, start, end, page_size)
            for raw_id, _owner, _idle, times in page:
                entry_id = raw_id.decode()
                if entry_id in wanted:
                    found[entry_id] = int(times)
            if len(page) < page_size or len(found) == len(wanted):
                return found
            start = "(" + page[-1][0].decode()

    async def pending_up_to(self, stream: str, group: str, max_id: str, limit: int = 1) -> int:
        """How many entries with id <= ``max_id`` are pending in ``group`` (capped at ``limit``).

        With the default ``limit=1`` an existence check: 0 means everything up to ``max_id``
        was acknowledged.
        """
        page = await self._call(stream, group, "XPENDING", stream, group, "-", max_id, limit)
        return len(page)

    async def stream_last_id(self, stream: str) -> str | None:
        """The stream's last generated id ("0-0" if never written), None if it does not exist."""
        reply = await self._xinfo("STREAM", stream)
        return None if reply is None else admin.last_id_of(reply)

    async def group_progress(self, stream: str, group: str) -> GroupProgress:
        """The group's last delivered id, pending count and consumers.

        ``GroupMissingError`` if the stream or the group does not exist.
        """
        info = await self._group_info(stream, group)
        if info is None:
            raise GroupMissingError(
                f"XINFO GROUPS on {self._target}: no group {group!r} on stream {stream!r}",
                stream,
                group,
            )
        return admin.progress_of(group, info, await self._consumers(stream, group))

    async def _group_info(self, stream: str, group: str) -> dict[str, Any] | None:
        """``group``'s ``XINFO GROUPS`` record, or None if the stream or the group is missing."""
        return admin.group_record(await self._xinfo("GROUPS", stream, group), group)

    async def trim_acked(self, stream: str) -> int:
        """Delete the entries every group of ``stream`` has acked (``XTRIM MINID``).

        The floor of a group is its oldest pending entry, else the entry after its last
        delivered id; entries below the lowest floor of all groups are needed by nobody. A
        stream with no group is left alone. Returns the number of entries deleted.
        """
        groups = await self._xinfo("GROUPS", stream)
        floors = [await self._group_floor(stream, admin.flat_info(raw)) for raw in groups or ()]
        if not floors:
            return 0
        floor = min(floors)
        try:
            deleted = await self._execute("XTRIM", stream, "MINID", f"{floor[0]}-{floor[1]}")
        except (rexc.RedisError, OSError) as exc:
            raise self._error(exc, "XTRIM", stream) from exc
        return int(deleted)

    async def tombstone_bound(
        self, stream: str, group: str, min_age_ms: int
    ) -> tuple[int, int] | None:
        """The stream position below which no change can reach ``group``'s consumers again,
        and at least ``min_age_ms`` old by the server's clock: ``(ms, seq)``, exclusive.

        Below it every entry is acked (under the group's floor: its oldest pending entry, else
        the entry after its last delivered one) and gone from the stream (under the oldest
        retained entry: a group recreated at ``0`` replays only what the stream retains), so a
        tombstone of the element store older than it blocks nothing any more. The age margin
        covers what no Redis state shows: a consumer that read an entry, stalled past
        ``claim_idle_ms`` and sends it long after a peer reclaimed and acked it. ``None`` when
        the stream or the group does not exist. The floor is read before the oldest entry:
        entries delivered in between are newer than every tombstone already made.
        """
        mine = await self._group_info(stream, group)
        if mine is None:
            return None
        floor = await self._group_floor(stream, mine)
        try:
            oldest = await self._execute("XRANGE", stream, "-", "+", "COUNT", 1)
            seconds, micros = await self._execute("TIME")
        except (rexc.RedisError, OSError) as exc:
            raise self._error(exc, "XRANGE/TIME", stream) from exc
        now_ms = int(seconds) * 1000 + int(micros) // 1000
        bounds = [floor, (now_ms - min_age_ms + 1, 0)]  # entries of that ms are old enough
        if oldest:
            bounds.append(parse_entry_id(admin.text(oldest[0][0])))
        return min(bounds)

    async def _group_floor(self, stream: str, info: dict[str, Any]) -> tuple[int, int]:
        group = admin.text(info["name"])
        if int(info["pending"]) > 0:
            summary = await self._call(stream, group, "XPENDING", stream, group)
            # ``info`` may be stale: acked since, nothing pending is left (a nil lowest id).
            # Every entry up to its last-delivered id was acked then, so the floor below holds.
            if summary[1] is not None:
                return parse_entry_id(admin.text(summary[1]))
        ms, seq = parse_entry_id(admin.text(info["last-delivered-id"]))
        return (ms, seq + 1)

    async def _consumers(self, stream: str, group: str) -> tuple[ConsumerInfo, ...]:
        reply = await self._call(stream, group, "XINFO", "CONSUMERS", stream, group)
        return admin.consumers_of(reply)

    # -- dead letters --------------------------------------------------------------------

    async def dead_letter(
        self,
        dlq_stream: str,
        items: Sequence[DeadLetter],
        maxlen: int | None = None,
        now_ms: int | None = None,
    ) -> list[str]:
        """Append ``items`` to ``dlq_stream``, each at most once; returns the new entries' ids.

        Format: :class:`DeadLetter`. ``maxlen`` trims the dead-letter stream approximately
        (``MAXLEN ~``). ``now_ms`` (the ``failed_at_ms`` stamp) defaults to this machine's
        clock. Does not ack the originals: the caller acks after this returns, so a crash in
        between re-delivers the entry. Dead-lettering is nevertheless idempotent: a script
        records each original entry (its stream and id) in ``<dlq>:ids`` (a hash) and adds the
        dead letter only the first time, so the dead-letter stream holds every bad entry exactly
        once.
        """
        if not items:
            return []
        stamp = now_ms if now_ms is not None else _now_ms()
        index = keys.dead_letter_index(dlq_stream)
        trim: list[Any] = [] if maxlen is None else ["MAXLEN", "~", maxlen]
        pipe = self._client.pipeline(transaction=False)
        for item in items:
            flat = [part for pair in item.to_fields(stamp).items() for part in pair]
            once = keys.dead_letter_index_field(item.source_stream, item.entry_id)
            pipe.execute_command(
                "EVAL", _DEAD_LETTER_ONCE, 2, dlq_stream, index, once, *trim, "*", *flat
            )
        try:
            ids = await pipe.execute()
        except (rexc.RedisError, OSError) as exc:
            raise self._error(exc, "XADD", dlq_stream) from exc
        return [admin.text(raw) for raw in ids if raw is not None]

    async def close(self) -> None:
        """Close the client and its connection pool. The backend is unusable afterwards."""
        self._reads.close()
        await self._client.aclose(close_connection_pool=True)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
