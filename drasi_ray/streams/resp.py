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

from collections.abc import Iterable
from typing import Any

import hiredis
import redis
import redis.asyncio as aioredis
from redis import exceptions as rexc

Arg = bytes | str | int


def pack(args: Iterable[Arg]) -> bytes:
    """One command as a RESP array of bulk strings (str as UTF-8, int in decimal)."""
    command: Any = tuple(args)  # hiredis's stub types the argument as a 1-tuple
    packed: bytes = hiredis.pack_command(command)
    return packed


async def execute_packed(client: aioredis.Redis, commands: list[bytes]) -> list[Any]:
    """Send ``commands`` (each from :func:`pack`) in one write; their replies, in order."""
    pool = client.connection_pool
    connection = await pool.get_connection()  # type: ignore[no-untyped-call]
    try:
        await connection.send_packed_command(b"".join(commands))
        replies: list[Any] = []
        for _ in commands:
            try:
                replies.append(await connection.read_response())
            except rexc.ResponseError as exc:
                replies.append(exc)
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
