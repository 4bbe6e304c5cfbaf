"""Appending payloads to a stream: ``Publisher`` (sync) and ``AsyncPublisher`` (asyncio).

Both run one core (:class:`_Appending`: the packed commands, the ids, the error); they differ
only in how a chunk travels.

For drivers, tests, the CLI and reactions writing result streams. Each payload becomes one
entry with a single field (``data`` by default, the Drasi platform convention); building the
payload bytes is the caller's job (e.g. ``decode.encode_cloud_event``).

Writes are pipelined, ``chunk`` XADDs per round trip, non-transactional, and hand-packed
(:mod:`drasi_ray.streams.resp`; ``python -m bench.publish`` compares it with redis-py's pipeline:
less CPU per entry, which matters to a producer sharing its machine). If a chunk fails midway, the
entries before the failure are in the stream and the error says how many were written. Nothing is
retried here: after a connection error the caller cannot know whether the last chunk's entries were
written, so retrying is its choice (a retry may duplicate entries, which consumers tolerate: the
element store applies by version). ``maxlen`` trims with ``MAXLEN ~`` by default
(``approximate=True``), which lets Redis trim whole macro nodes cheaply; the stream may then stay a
little above ``maxlen``.
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


class _Appending:
    """One ``publish`` call, whatever the client: the packed ``XADD`` commands chunk by chunk,
    the ids written so far, and the error that says how many were written."""

    def __init__(
        self,
        publisher: _Publishing,
        stream: str,
        field: bytes,
        maxlen: int | None,
        approximate: bool,
    ) -> None:
        self._publisher = publisher
        self._stream = stream
        head: list[resp.Arg] = ["XADD", stream]
        if maxlen is not None:
            head += ["MAXLEN", "~" if approximate else "=", maxlen]
        self._head = (*head, "*", field)
        self.ids: list[str] = []

    def chunks(self, payloads: Iterable[bytes], size: int) -> Iterator[list[bytes]]:
        """The packed ``XADD``s, ``size`` payloads at a time."""
        if size < 1:
            raise ValueError(f"chunk must be >= 1 (got {size})")
        it = iter(payloads)
        while batch := list(islice(it, size)):
            yield [resp.pack((*self._head, payload)) for payload in batch]

    def take(self, replies: list[Any]) -> None:
        """Record a chunk's replies: the ids up to the first error reply, which is raised."""
        for reply in replies:
            if isinstance(reply, BaseException):
                raise self.failure(reply) from reply
            self.ids.append(reply.decode() if isinstance(reply, bytes) else str(reply))

    def failure(self, exc: BaseException) -> StreamError:
        """``exc`` as the error of this call, naming how many entries were written."""
        operation = f"XADD to {self._stream!r} (after {len(self.ids)} entries written)"
        publisher = self._publisher
        return redis_errors.translate(exc, operation, publisher.target, publisher.secrets)


class _Publishing:
    """What both publishers hold: the server as messages name it, and the secrets to scrub."""

    def __init__(self, target: str, secrets: tuple[str, ...]) -> None:
        self.target = target
        self.secrets = secrets

    def _appending(
        self, stream: str, field: bytes, maxlen: int | None, approximate: bool
    ) -> _Appending:
        return _Appending(self, stream, field, maxlen, approximate)


class Publisher(_Publishing):
    """Synchronous publisher over a redis-py client (not thread-safe across pipelines)."""

    def __init__(
        self, client: redis.Redis, *, target: str = "redis", secrets: tuple[str, ...] = ()
    ) -> None:
        """Wrap ``client`` (``decode_responses`` must be False). Prefer :meth:`from_url`."""
        super().__init__(target, secrets)
        self._client = client

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
        appending = self._appending(stream, field, maxlen, approximate)
        for commands in appending.chunks(payloads, chunk):
            try:
                replies = resp.execute_packed_blocking(self._client, commands)
            except (rexc.RedisError, OSError) as exc:
                raise appending.failure(exc) from exc
            appending.take(replies)
        return appending.ids

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

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Publisher:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class AsyncPublisher(_Publishing):
    """:class:`Publisher` for asyncio (same arguments, same contract, the same core)."""

    def __init__(
        self, client: aioredis.Redis, *, target: str = "redis", secrets: tuple[str, ...] = ()
    ) -> None:
        super().__init__(target, secrets)
        self._client = client

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
        appending = self._appending(stream, field, maxlen, approximate)
        for commands in appending.chunks(payloads, chunk):
            try:
                replies = await resp.execute_packed(self._client, commands)
            except (rexc.RedisError, OSError) as exc:
                raise appending.failure(exc) from exc
            appending.take(replies)
        return appending.ids

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

    async def close(self) -> None:
        await self._client.aclose(close_connection_pool=True)

    async def __aenter__(self) -> AsyncPublisher:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()
