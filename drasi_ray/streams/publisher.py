"""Appending payloads to a stream: ``Publisher`` (sync) and ``AsyncPublisher`` (asyncio).

For drivers, tests, the CLI and reactions writing result streams. Each payload becomes one
entry with a single field (``data`` by default, the Drasi platform convention); building the
payload bytes is the caller's job (e.g. ``decode.encode_cloud_event``).

Writes are pipelined, ``chunk`` XADDs per round trip, non-transactional, and hand-packed
(:mod:`drasi_ray.streams.resp`; ``python -m bench.publish`` measured 1.2-2.3x less CPU per
entry than redis-py's pipeline, sync and asyncio alike, which matters to a producer sharing
its machine). If a chunk fails midway, the entries before the failure are in the stream and
the error says how many were written. Nothing is retried here: after a connection error the
caller cannot know whether the last chunk's entries were written, so retrying is its choice (a
retry may duplicate entries, which consumers tolerate: the element store applies by version).
``maxlen`` trims with ``MAXLEN ~`` by default (``approximate=True``), which lets Redis trim
whole macro nodes cheaply; the stream may then stay a little above ``maxlen``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

import redis
import redis.asyncio as aioredis
from redis import exceptions as rexc

from drasi_ray.model import urls
from drasi_ray.model.errors import StreamError
from drasi_ray.streams import redis_errors, resp

DEFAULT_FIELD = b"data"


def _chunks(payloads: Iterable[bytes], size: int) -> Iterator[list[bytes]]:
    if size < 1:
        raise ValueError(f"chunk must be >= 1 (got {size})")
    it = iter(payloads)
    while batch := list(islice(it, size)):
        yield batch


def _xadds(
    stream: str, payloads: list[bytes], field: bytes, maxlen: int | None, approximate: bool
) -> list[bytes]:
    """``XADD stream [MAXLEN ~|= n] * field payload`` for each payload, packed."""
    head: list[resp.Arg] = ["XADD", stream]
    if maxlen is not None:
        head += ["MAXLEN", "~" if approximate else "=", maxlen]
    head += ["*", field]
    return [resp.pack((*head, payload)) for payload in payloads]


def _written(replies: list[Any]) -> tuple[list[str], BaseException | None]:
    """The ids of the replies up to the first error reply, and that error (or None)."""
    ids: list[str] = []
    for reply in replies:
        if isinstance(reply, BaseException):
            return ids, reply
        ids.append(reply.decode() if isinstance(reply, bytes) else str(reply))
    return ids, None


class Publisher:
    """Synchronous publisher over a redis-py client (not thread-safe across pipelines)."""

    def __init__(
        self, client: redis.Redis, *, target: str = "redis", secrets: tuple[str, ...] = ()
    ) -> None:
        """Wrap ``client`` (``decode_responses`` must be False). Prefer :meth:`from_url`."""
        self._client = client
        self._target = target
        self._secrets = secrets

    @classmethod
    def from_url(cls, url: str, **options: Any) -> Publisher:
        """Connect lazily to ``url``; ``options`` go to ``redis.Redis.from_url``."""
        options["decode_responses"] = False
        client = redis.Redis.from_url(url, **options)
        return cls(client, target=urls.redact_url(url), secrets=urls.url_secrets(url))

    def publish(
        self,
        stream: str,
        payloads: Iterable[bytes],
        field: bytes = DEFAULT_FIELD,
        maxlen: int | None = None,
        approximate: bool = True,
        chunk: int = 1000,
    ) -> list[str]:
        """XADD one entry per payload, in order; returns the new entry ids in order."""
        ids: list[str] = []
        for batch in _chunks(payloads, chunk):
            commands = _xadds(stream, batch, field, maxlen, approximate)
            try:
                written, error = _written(resp.execute_packed_blocking(self._client, commands))
            except (rexc.RedisError, OSError) as exc:
                raise self._error(exc, stream, len(ids)) from exc
            ids += written
            if error is not None:
                raise self._error(error, stream, len(ids)) from error
        return ids

    def publish_one(
        self,
        stream: str,
        payload: bytes,
        field: bytes = DEFAULT_FIELD,
        maxlen: int | None = None,
        approximate: bool = True,
    ) -> str:
        """XADD one entry; returns its id."""
        return self.publish(stream, [payload], field, maxlen, approximate)[0]

    def _error(self, exc: BaseException, stream: str, written: int) -> StreamError:
        operation = f"XADD to {stream!r} (after {written} entries written)"
        return redis_errors.translate(exc, operation, self._target, self._secrets)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Publisher:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class AsyncPublisher:
    """The asyncio twin of :class:`Publisher` (same arguments, same contract)."""

    def __init__(
        self, client: aioredis.Redis, *, target: str = "redis", secrets: tuple[str, ...] = ()
    ) -> None:
        self._client = client
        self._target = target
        self._secrets = secrets

    @classmethod
    def from_url(cls, url: str, **options: Any) -> AsyncPublisher:
        """Connect lazily to ``url``; ``options`` go to ``redis.asyncio.Redis.from_url``."""
        options["decode_responses"] = False
        client = aioredis.Redis.from_url(url, **options)
        return cls(client, target=urls.redact_url(url), secrets=urls.url_secrets(url))

    async def publish(
        self,
        stream: str,
        payloads: Iterable[bytes],
        field: bytes = DEFAULT_FIELD,
        maxlen: int | None = None,
        approximate: bool = True,
        chunk: int = 1000,
    ) -> list[str]:
        """XADD one entry per payload, in order; returns the new entry ids in order."""
        ids: list[str] = []
        for batch in _chunks(payloads, chunk):
            commands = _xadds(stream, batch, field, maxlen, approximate)
            try:
                written, error = _written(await resp.execute_packed(self._client, commands))
            except (rexc.RedisError, OSError) as exc:
                raise self._error(exc, stream, len(ids)) from exc
            ids += written
            if error is not None:
                raise self._error(error, stream, len(ids)) from error
        return ids

    async def publish_one(
        self,
        stream: str,
        payload: bytes,
        field: bytes = DEFAULT_FIELD,
        maxlen: int | None = None,
        approximate: bool = True,
    ) -> str:
        """XADD one entry; returns its id."""
        return (await self.publish(stream, [payload], field, maxlen, approximate))[0]

    def _error(self, exc: BaseException, stream: str, written: int) -> StreamError:
        operation = f"XADD to {stream!r} (after {written} entries written)"
        return redis_errors.translate(exc, operation, self._target, self._secrets)

    async def close(self) -> None:
        await self._client.aclose(close_connection_pool=True)

    async def __aenter__(self) -> AsyncPublisher:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()
