"""Packed Redis commands for the hot paths (XACK of a batch, the state write, XADDs).

redis-py packs every argument in Python (``Encoder.encode`` plus a few concatenations), which
for a command with a thousand arguments costs more than the round trip it rides on.
:func:`pack` has hiredis (the C parser redis-py uses) write the RESP array, and
:func:`execute_packed` sends one or several packed commands on a connection of the client's
own pool and reads their replies, as a pipeline would; :func:`execute_packed_blocking` is its
twin for a synchronous client.

Contract of :func:`execute_packed`: the replies come back in order; an error reply is
returned in the list as the ``ResponseError`` redis-py's parser made of it (not raised), so a
caller sees every command's outcome; connection and timeout errors are raised, and the
connection is then discarded (a reply may have been half read), and nothing is retried (the
caller knows whether a command may run twice). Only for commands whose raw reply is what the
caller wants (integers, ``OK``, bulk strings as bytes).
"""

from __future__ import annotations

import asyncio
import collections
import socket
from collections.abc import Callable, Iterable
from typing import Any, cast

import hiredis
import redis
import redis.asyncio as aioredis
from redis import exceptions as rexc

Arg = bytes | str | int

_CONNECT_TIMEOUT_S = 5.0


def pack(args: Iterable[Arg]) -> bytes:
    """One command as a RESP array of bulk strings (str as UTF-8, int in decimal)."""
    command: Any = tuple(args)  # hiredis's stub types the argument as a 1-tuple
    packed: bytes = hiredis.pack_command(command)
    return packed


async def execute_packed(
    client: aioredis.Redis,
    commands: list[bytes],
    on_reply: Callable[[int, Any], None] | None = None,
) -> list[Any]:
    """Send ``commands`` (each from :func:`pack`) in one write; their replies, in order.

    ``on_reply(index, reply)``, if given, is called with each reply as soon as it is read,
    before the next is waited for (a later command may block, as ``XREADGROUP BLOCK`` does).
    """
    pool = client.connection_pool
    connection = await pool.get_connection()  # type: ignore[no-untyped-call]
    try:
        await connection.send_packed_command(b"".join(commands))
        replies: list[Any] = []
        for index in range(len(commands)):
            try:
                reply = await connection.read_response()
            except rexc.ResponseError as exc:
                reply = exc
            replies.append(reply)
            if on_reply is not None:
                on_reply(index, reply)
        return replies
    except BaseException:
        await connection.disconnect()  # a reply may be half read: never reuse it
        raise
    finally:
        await pool.release(connection)


def execute_packed_blocking(client: redis.Redis, commands: list[bytes]) -> list[Any]:
    """:func:`execute_packed` for a synchronous client (same contract)."""
    pool = client.connection_pool
    connection: Any = pool.get_connection()  # redis-py's sync Connection is not typed
    try:
        connection.send_packed_command([b"".join(commands)])  # a list: sent as one chunk
        replies: list[Any] = []
        for _ in commands:
            try:
                replies.append(connection.read_response())
            except rexc.ResponseError as exc:
                replies.append(exc)
        return replies
    except BaseException:
        connection.disconnect()
        raise
    finally:
        pool.release(connection)


class Pipe:
    """One connection of its own, with a client's settings, for packed commands sent by ONE
    task at a time in a hot loop (a consumer's reads, a shard's state writes).

    Each call of :meth:`execute` costs a write and the replies' arrival: no pool checkout, no
    task or ``wait_for`` per command as redis-py's asyncio connection has, which is most of
    what a small batch's Redis calls cost in Python. hiredis parses the replies. Its contract
    is :func:`execute_packed`'s, and redis-py's exceptions are raised: ``ConnectionError`` when
    the connection fails or closes, ``TimeoutError`` when the replies take longer than the
    client's ``socket_timeout``; the connection is then dropped and the next call makes a new
    one. A call that is cancelled drops it too (a reply may be on its way).

    Only for a plain TCP connection (``redis://``); for any other (TLS, a Unix socket, a
    credential provider) it falls back to :func:`execute_packed` on the client's pool.
    """

    def __init__(self, client: aioredis.Redis) -> None:
        self._client = client
        pool = client.connection_pool
        settings = pool.connection_kwargs
        self._settings = settings
        self._plain = pool.connection_class is aioredis.Connection and not settings.get(
            "credential_provider"
        )
        self._timeout: float | None = settings.get("socket_timeout")
        self._protocol: _ReplyProtocol | None = None

    async def execute(
        self, commands: list[bytes], on_reply: Callable[[int, Any], None] | None = None
    ) -> list[Any]:
        """:func:`execute_packed` on this pipe's connection."""
        if not self._plain:
            return await execute_packed(self._client, commands, on_reply)
        protocol = self._protocol
        if protocol is None or protocol.closed:
            protocol = self._protocol = await self._connect()
        try:
            return await protocol.execute(
                b"".join(commands), len(commands), self._timeout, on_reply
            )
        except BaseException:
            protocol.close()
            self._protocol = None
            raise

    async def _connect(self) -> _ReplyProtocol:
        settings = self._settings
        host, port = settings.get("host", "localhost"), settings.get("port", 6379)
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(
                settings.get("socket_connect_timeout") or _CONNECT_TIMEOUT_S
            ):
                _, protocol = await loop.create_connection(_ReplyProtocol, host, port)
        except (OSError, TimeoutError) as exc:
            raise rexc.ConnectionError(f"Error connecting to {host}:{port}: {exc}") from exc
        if settings.get("socket_keepalive"):
            protocol.keepalive()
        handshake = _handshake(settings)
        try:
            for reply in await protocol.execute(
                b"".join(handshake), len(handshake), self._timeout, None
            ):
                if isinstance(reply, Exception):
                    raise reply
        except BaseException:
            protocol.close()
            raise
        return protocol

    def close(self) -> None:
        """Close the connection (a later call opens a new one)."""
        if self._protocol is not None:
            self._protocol.close()
            self._protocol = None


def _handshake(settings: dict[str, Any]) -> list[bytes]:
    """AUTH, SELECT and CLIENT SETNAME as the client's settings ask (a no-op otherwise: one
    PING, which also proves the connection)."""
    commands = []
    password, username = settings.get("password"), settings.get("username")
    if password is not None:
        commands.append(pack(("AUTH", username, password) if username else ("AUTH", password)))
    if settings.get("db"):
        commands.append(pack(("SELECT", int(settings["db"]))))
    if settings.get("client_name"):
        commands.append(pack(("CLIENT", "SETNAME", settings["client_name"])))
    return commands or [pack(("PING",))]


def _reply_error(message: str) -> rexc.RedisError:
    """The redis-py exception of an error reply (``LOADING``: the server is starting)."""
    if message.startswith("LOADING"):
        return rexc.BusyLoadingError(message)
    return rexc.ResponseError(message)


class _ReplyProtocol(asyncio.Protocol):
    """Replies matched to their commands in order; error replies are values, not raised.

    A call's timeout is kept by one watchdog timer of the connection, armed for the oldest
    waiting call's deadline (not a timer per call): when it fires with that call's replies not
    all in, the call fails with redis-py's ``TimeoutError`` (its caller then closes the
    connection, failing the calls behind it)."""

    def __init__(self) -> None:
        self._reader = hiredis.Reader(replyError=_reply_error)
        self._waiting: collections.deque[_Call] = collections.deque()
        self._transport: asyncio.Transport | None = None
        self._watchdog: asyncio.TimerHandle | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's is not an asyncio.Transport subclass, only alike).
        self._transport = cast(asyncio.Transport, transport)

    def keepalive(self) -> None:
        sock = self._transport.get_extra_info("socket") if self._transport else None
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)

    async def execute(
        self,
        packed: bytes,
        count: int,
        timeout_s: float | None,
        on_reply: Callable[[int, Any], None] | None,
    ) -> list[Any]:
        if self.closed or self._transport is None:
            raise rexc.ConnectionError("Connection closed by server.")
        loop = asyncio.get_running_loop()
        deadline = None if timeout_s is None else loop.time() + timeout_s
        call = _Call(loop.create_future(), count, on_reply, deadline)
        self._waiting.append(call)
        self._transport.write(packed)
        if deadline is not None and self._watchdog is None:
            self._watchdog = loop.call_at(deadline, self._watch)
        return await call.done

    def _watch(self) -> None:
        """Fail the oldest waiting call if its deadline passed; else wait for the next one."""
        self._watchdog = None
        loop = asyncio.get_running_loop()
        for call in self._waiting:
            if call.deadline is None:
                continue
            if call.deadline <= loop.time():
                if not call.done.done():
                    call.done.set_exception(rexc.TimeoutError("Timeout reading from socket"))
                return
            self._watchdog = loop.call_at(call.deadline, self._watch)
            return

    def data_received(self, data: bytes) -> None:
        reader = self._reader
        reader.feed(data)
        try:
            while self._waiting:
                reply = reader.gets()
                if reply is False:
                    return
                call = self._waiting[0]
                if call.take(reply):
                    self._waiting.popleft()
        except Exception as exc:  # a protocol error, or a reply callback's failure
            self._fail(rexc.ConnectionError(f"Error reading a reply: {exc}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(rexc.ConnectionError("Connection closed by server."))

    def _fail(self, error: Exception) -> None:
        while self._waiting:
            done = self._waiting.popleft().done
            if not done.done():
                done.set_exception(error)

    def close(self) -> None:
        self.closed = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if self._transport is not None:
            self._transport.close()


class _Call:
    """One :meth:`_ReplyProtocol.execute`: its future, and the replies it waits for."""

    __slots__ = ("count", "deadline", "done", "on_reply", "replies")

    def __init__(
        self,
        done: asyncio.Future[list[Any]],
        count: int,
        on_reply: Callable[[int, Any], None] | None,
        deadline: float | None = None,
    ) -> None:
        self.done = done
        self.count = count
        self.on_reply = on_reply
        self.deadline = deadline
        """When the call fails with ``TimeoutError`` if its replies are not all in (the
        loop's clock; None: never)."""
        self.replies: list[Any] = []

    def take(self, reply: Any) -> bool:
        """Note the next reply; True once the last one came (the future is then done)."""
        replies = self.replies
        replies.append(reply)
        if self.on_reply is not None and not self.done.done():
            self.on_reply(len(replies) - 1, reply)
        if len(replies) < self.count:
            return False
        if not self.done.done():
            self.done.set_result(replies)
        return True
