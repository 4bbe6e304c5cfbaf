"""Direct lines: the pipeline's per-batch calls between actors over one TCP connection.

A Ray actor call costs several times the CPU and latency of the same call as a framed pickle
over an asyncio TCP connection between the same two actors (``python -m bench.hops`` measures
both; bench/CURRENT.md has the figures). Every batch makes three such calls (consumer ->
coordinator, coordinator -> query, query -> subscriber), so at moderate load Ray's per-call
cost, not our code, was most of an event's latency and of the machine's CPU.

Ray keeps every job it does well: it places, names and restarts the actors, carries every
control call, and is the fallback of every line. A line is an optimisation with no failure
mode of its own:

- The callee (an async actor) serves the methods of a protocol class
  (:class:`~drasi_ray.shards.calls.ShardCalls`, :class:`~drasi_ray.shards.calls.HostCalls`) on
  a :class:`LineServer`, started on first use, with a target that implements it (mypy checks
  that it does); its Ray method ``line_address`` returns where to connect, with a random token
  the caller must present first (the address travels over Ray's authenticated channel; a
  connection without the token is closed before anything is unpickled).
- The caller's :class:`Line` (async) or :class:`SyncLine` (a blocking client, for the
  subscriber in the driver) is typed by the same protocol: ``line.call(HostCalls.deliver,
  *args)`` names the method by the protocol's function (mypy checks the arguments and the
  result), sends the call as ``(id, method name, args)`` and matches the replies by id; calls
  on one connection overlap like Ray calls to an async actor do, and start in the order they
  were sent.
- A line never hangs a call: while calls of a connection run, the callee sends a heartbeat
  every :data:`HEARTBEAT_S`, and a waiting call whose callee stays silent (no reply, no
  heartbeat) for the line's deadline (:data:`CALL_DEADLINE_S`) breaks the line. So a frozen
  callee, or a peer whose host vanished without closing the connection (half-open), costs a
  call the deadline, then the Ray fallback. A call that only waits (backpressure) goes on as
  long as it needs: its callee keeps sending heartbeats. TCP keepalive also probes idle
  connections, so a vanished peer is noticed before the next call is written.
- When a line breaks (the callee died or restarted, a network error, the deadline), every call
  waiting on it is made again as a plain Ray call, which waits out a restart or raises
  ``RayActorError`` as before, and the next call reconnects to the callee's new address. A call
  that had run (or, after the deadline, is still running) when its line broke runs twice: a
  method served on a line must be idempotent or tolerate that.
  ``apply_batch`` and ``deliver`` are (batches and deliveries are retried already,
  at-least-once); a subscriber's ``take`` whose reply was lost with a live callee loses the
  results it had taken, as a lost Ray reply would (subscriber buffers are in memory: the
  result streams are the durable output).
- A callee that answers ``line_address`` with None (lines disabled: ``RayConfig.direct_calls``
  false) or that cannot be reached (a firewall between nodes) is called through Ray; reaching
  it is tried again after a backoff (:class:`_Reconnect`).

Exceptions raised by the method reach the caller as themselves (not wrapped as Ray would).
"""

from __future__ import annotations

import asyncio
import hmac
import inspect
import itertools
import logging
import pickle
import secrets
import socket
import struct
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar

import ray

from drasi_ray.model.backoff import Backoff

logger = logging.getLogger("drasi_ray.line")

_FRAME = struct.Struct("!Q")
"""Every frame: its length (8 bytes, network order), then a pickle of the call or reply."""
TOKEN_BYTES = 16
CONNECT_TIMEOUT_S = 3.0
RETRY_FIRST_S = 1.0
RETRY_MAX_S = 60.0
"""After failed connects, calls go through Ray for ~1, 2, 4 ... up to 60 s before a new try."""
HEARTBEAT_S = 1.0
"""While calls of a connection run, its server sends a heartbeat frame this often."""
CALL_DEADLINE_S = 10.0
"""A waiting call breaks its line when the callee sent nothing (no reply, no heartbeat) for
this long; the call is then made through Ray. Well above :data:`HEARTBEAT_S`, so an event loop
busy for a few seconds is not taken for a dead one."""
KEEPALIVE_IDLE_S = 10
KEEPALIVE_INTERVAL_S = 5
KEEPALIVE_PROBES = 3
"""TCP keepalive of every line socket: an idle connection is probed after 10 s, every 5 s, and
dropped by the kernel after 3 unanswered probes."""
_HEARTBEAT_ID = -1

T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class LineAddress:
    """Where an actor's line server listens, and the token it expects first."""

    host: str
    port: int
    token: bytes


class LineBroken(ConnectionError):
    """The connection under a call closed before its reply came (the call may have run)."""


def _frame(payload: object) -> bytes:
    body = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    return _FRAME.pack(len(body)) + body


def _reply_frame(call_id: int, ok: bool, value: object) -> bytes:
    try:
        return _frame((call_id, ok, value))
    except Exception as exc:  # an unpicklable result or exception: say what it was
        problem = RuntimeError(f"line reply not picklable: {value!r} ({exc})")
        return _frame((call_id, False, problem))


_HEARTBEAT = _frame((_HEARTBEAT_ID, True, None))


def _tune(sock: socket.socket | None) -> None:
    """Send each frame at once (a call waits for its reply: Nagle would hold it back) and keep
    idle connections probed (see :data:`KEEPALIVE_IDLE_S`)."""
    if sock is None:
        return
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, value in (
        ("TCP_KEEPIDLE", KEEPALIVE_IDLE_S),
        ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL_S),
        ("TCP_KEEPCNT", KEEPALIVE_PROBES),
    ):
        if hasattr(socket, option):  # Linux; elsewhere the system's keepalive timing applies
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


async def _read_frame(reader: asyncio.StreamReader) -> Any:
    (length,) = _FRAME.unpack(await reader.readexactly(_FRAME.size))
    return pickle.loads(await reader.readexactly(length))


def protocol_methods(protocol: type[Any]) -> list[str]:
    """The names of the coroutine methods a protocol class declares, its own and those of the
    protocols it extends (not those of :class:`typing.Protocol` itself): what a line serves.
    A protocol extending two serves both (the fused actor's line: :mod:`drasi_ray.actors.
    fused`)."""
    names: dict[str, None] = {}
    for cls in protocol.__mro__:
        if cls in (object, Protocol, Generic):
            continue
        for name, member in vars(cls).items():
            if not name.startswith("_") and inspect.iscoroutinefunction(member):
                names[name] = None
    return list(names)


class LineServer(Generic[T]):
    """The callee's side: serves ``target``'s implementation of ``protocol`` to lines.

    Create it as ``LineServer[Protocol](target, Protocol)``: mypy then checks that ``target``
    implements the protocol (a protocol class cannot be given where ``type[T]`` is expected, so
    the type parameter is named explicitly). Not ``enabled`` (``RayConfig.direct_calls``
    false), it never listens and its address is None, which sends every caller through Ray.
    """

    def __init__(self, target: T, protocol: type[Any], enabled: bool = True) -> None:
        self._enabled = enabled
        # Each served method bound once: a call names one of these, nothing else is reachable.
        self._handlers: dict[str, Callable[..., Awaitable[Any]]] = {
            name: getattr(target, name) for name in protocol_methods(protocol)
        }
        self._token = secrets.token_bytes(TOKEN_BYTES)
        self._server: asyncio.Server | None = None
        self._starting = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        self.served = 0
        """Calls answered on lines so far (the rest of the actor's calls came through Ray)."""

    async def address(self) -> LineAddress | None:
        """Start listening on this node's address (once); where to connect (None: disabled)."""
        if not self._enabled:
            return None
        async with self._starting:
            if self._server is None:
                host = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]
                self._server = await asyncio.start_server(self._serve, host, 0)
        host, port = self._server.sockets[0].getsockname()[:2]
        return LineAddress(host, port, self._token)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        _tune(writer.get_extra_info("socket"))
        running: set[asyncio.Task[None]] = set()  # this connection's calls
        heartbeats = asyncio.ensure_future(_heartbeats(writer, running))
        try:
            token = await reader.readexactly(TOKEN_BYTES)
            if not hmac.compare_digest(token, self._token):
                logger.warning("line: refused a connection with a wrong token")
                return
            while True:
                call_id, method, args = await _read_frame(reader)
                task = asyncio.ensure_future(self._run(writer, call_id, method, args))
                for calls in (self._tasks, running):
                    calls.add(task)
                    task.add_done_callback(calls.discard)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the caller went away; its waiting calls fall back to Ray
        except Exception as exc:  # a call that does not unpickle here: the caller falls back
            logger.warning("line: closing a connection: %r", exc)
        finally:
            heartbeats.cancel()
            writer.close()

    async def _run(
        self, writer: asyncio.StreamWriter, call_id: int, method: str, args: tuple[Any, ...]
    ) -> None:
        try:
            handler = self._handlers.get(method)
            if handler is None:
                raise AttributeError(f"method {method!r} is not served on this line")
            self.served += 1
            value = await handler(*args)
        except Exception as exc:
            reply = _reply_frame(call_id, False, exc)
        else:
            reply = _reply_frame(call_id, True, value)
        if not writer.is_closing():
            writer.write(reply)


async def _heartbeats(writer: asyncio.StreamWriter, running: set[asyncio.Task[None]]) -> None:
    """Every :data:`HEARTBEAT_S`, while calls of this connection run, tell the caller the
    callee is alive (so a call that waits long, e.g. for backpressure, is not given up)."""
    while not writer.is_closing():
        await asyncio.sleep(HEARTBEAT_S)
        if running and not writer.is_closing():
            writer.write(_HEARTBEAT)


class _Connection:
    """One open line: calls in flight by id, the task reading their replies, and the watchdog
    that breaks the line when the callee stays silent past ``deadline_s`` while calls wait."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, deadline_s: float
    ) -> None:
        self._writer = writer
        self._ids = itertools.count()
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self.broken = False
        self._deadline_s = deadline_s
        self._heard = time.monotonic()  # the last frame, or the start of the oldest wait
        self._reading = asyncio.ensure_future(self._read(reader))
        self._watchdog = asyncio.ensure_future(self._watch())

    async def call(self, method: str, args: tuple[Any, ...]) -> Any:
        if self.broken:
            raise LineBroken("line closed")
        if not self._waiting:  # silence counts only while a call waits
            self._heard = time.monotonic()
        call_id = next(self._ids)
        reply = asyncio.get_running_loop().create_future()
        self._waiting[call_id] = reply
        try:
            self._writer.write(_frame((call_id, method, args)))
            return await reply
        finally:
            self._waiting.pop(call_id, None)

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                call_id, ok, value = await _read_frame(reader)
                self._heard = time.monotonic()
                reply = self._waiting.pop(call_id, None)
                if reply is None or reply.done():
                    continue
                if ok:
                    reply.set_result(value)
                else:
                    reply.set_exception(value)
        except asyncio.CancelledError:
            self._break(LineBroken("line closed"))
            raise
        except Exception as exc:  # closed, reset, or a reply that does not unpickle here
            self._break(LineBroken(f"line closed: {exc!r}"))

    async def _watch(self) -> None:
        """Break the line once a call has waited ``deadline_s`` without a frame from the
        callee (frozen, or gone without closing the connection)."""
        while not self.broken:
            await asyncio.sleep(self._deadline_s / 4)
            silent = time.monotonic() - self._heard
            if self._waiting and silent > self._deadline_s:
                self._break(LineBroken(f"callee silent for {silent:.1f} s"))

    def _break(self, reason: LineBroken) -> None:
        self.broken = True
        for reply in self._waiting.values():
            if not reply.done():
                reply.set_exception(reason)
        self._waiting.clear()
        self._writer.close()

    def close(self) -> None:
        self._reading.cancel()
        self._watchdog.cancel()


class _Reconnect:
    """When a line may try to connect again: at once at first, then after each failure a
    :class:`~drasi_ray.model.backoff.Backoff` delay from :data:`RETRY_FIRST_S` up to
    :data:`RETRY_MAX_S` (a restarting callee refuses for a second or two; a firewall between
    nodes refuses for ever)."""

    __slots__ = ("_at", "_backoff")

    def __init__(self) -> None:
        self._at = 0.0
        self._backoff = Backoff(RETRY_FIRST_S, RETRY_MAX_S)

    def due(self) -> bool:
        return time.monotonic() >= self._at

    def failed(self) -> None:
        self._at = time.monotonic() + self._backoff.next_delay()

    def succeeded(self) -> None:
        self._at = 0.0
        self._backoff.reset()


class Line(Generic[T]):
    """The caller's side of a line to one actor serving protocol ``T`` (use it from one event
    loop).

    ``await line.call(HostCalls.deliver, *args)`` behaves as
    ``await handle.deliver.remote(*args)``, only cheaper. Calls go through Ray until the line
    is open: the first call starts opening it in the background, and never waits for a
    connect. ``deadline_s``: how long a waiting
    call tolerates a silent callee before it goes through Ray (:data:`CALL_DEADLINE_S`).
    """

    def __init__(self, handle: Any, deadline_s: float = CALL_DEADLINE_S) -> None:
        _check_deadline(deadline_s)
        self.handle = handle
        self.fallbacks = 0
        """Calls made again through Ray because their line broke under them."""
        self._deadline_s = deadline_s
        self._connection: _Connection | None = None
        self._connecting: asyncio.Future[None] | None = None
        self._reconnect = _Reconnect()

    async def call(
        self,
        method: Callable[Concatenate[T, P], Awaitable[R]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """Call ``method`` (a function of the protocol) on the callee with ``args``."""
        _positional(kwargs)
        name = method.__name__
        connection = self._open_connection()
        if connection is not None:
            try:
                result: R = await connection.call(name, args)
                return result
            except LineBroken as exc:
                self.fallbacks += 1
                logger.info("line to %s broke (%s); the call goes through Ray", name, exc)
        fallback: R = await getattr(self.handle, name).remote(*args)
        return fallback

    async def opened(self, timeout_s: float = 5.0) -> bool:
        """Wait up to ``timeout_s`` for the line to be open; whether it is. Calls never need
        this (they go through Ray meanwhile): benchmarks and tests that measure lines do."""
        deadline = time.monotonic() + timeout_s
        while self._open_connection() is None:
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    def _open_connection(self) -> _Connection | None:
        """The open connection, or None (then start opening one unless that is under way)."""
        if self._connection is not None and not self._connection.broken:
            return self._connection
        if self._connecting is None and self._reconnect.due():
            self._connecting = asyncio.ensure_future(self._open())
        return None

    async def _open(self) -> None:
        try:
            address: LineAddress | None = await _line_address(self.handle).remote()
            if address is None:
                self._reconnect.failed()
                return
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(address.host, address.port), CONNECT_TIMEOUT_S
            )
        except (OSError, asyncio.TimeoutError, ray.exceptions.RayError) as exc:
            logger.info("line: cannot connect (%s); calls go through Ray for now", exc)
            self._reconnect.failed()
            return
        finally:
            self._connecting = None
        _tune(writer.get_extra_info("socket"))
        writer.write(address.token)
        self._connection = _Connection(reader, writer, self._deadline_s)
        self._reconnect.succeeded()

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class SyncLine(Generic[T]):
    """A blocking line to an actor serving protocol ``T``, for code outside any event loop
    (the subscriber in the driver).

    One call at a time (a lock). The callee's heartbeats keep a long call alive; a callee
    silent for ``deadline_s`` breaks the line and the call goes through Ray, as in :class:`Line`.
    """

    def __init__(self, handle: Any, deadline_s: float = CALL_DEADLINE_S) -> None:
        _check_deadline(deadline_s)
        self.handle = handle
        self._deadline_s = deadline_s
        self._socket: socket.socket | None = None
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._reconnect = _Reconnect()

    def call(
        self,
        method: Callable[Concatenate[T, P], Awaitable[R]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """Call ``method`` (a coroutine function of the protocol) and wait for its result."""
        _positional(kwargs)
        name = method.__name__
        with self._lock:
            sock = self._connect()
            if sock is not None:
                try:
                    ok, value = self._exchange(sock, name, args)
                except Exception as exc:  # closed, timed out, or a reply not unpicklable here
                    logger.info("line to %s broke (%s); the call goes through Ray", name, exc)
                    self._drop()
                else:
                    if ok:
                        result: R = value
                        return result
                    raise value
        fallback: R = ray.get(getattr(self.handle, name).remote(*args))
        return fallback

    def _exchange(
        self, sock: socket.socket, method: str, args: tuple[Any, ...]
    ) -> tuple[bool, Any]:
        """Send the call, then read frames (heartbeats skipped) until its reply; each read
        waits at most the deadline (``socket.timeout`` breaks the line)."""
        call_id = next(self._ids)
        sock.settimeout(self._deadline_s)
        sock.sendall(_frame((call_id, method, args)))
        while True:
            (length,) = _FRAME.unpack(_receive(sock, _FRAME.size))
            reply_id, ok, value = pickle.loads(_receive(sock, length))
            if reply_id == _HEARTBEAT_ID:
                continue
            if reply_id != call_id:
                raise EOFError(f"line reply {reply_id} for call {call_id}")
            return ok, value

    def _connect(self) -> socket.socket | None:
        if self._socket is not None:
            return self._socket
        if not self._reconnect.due():
            return None
        try:
            address: LineAddress | None = ray.get(_line_address(self.handle).remote())
            if address is None:
                self._reconnect.failed()
                return None
            sock = socket.create_connection((address.host, address.port), CONNECT_TIMEOUT_S)
            _tune(sock)
            sock.sendall(address.token)
        except (OSError, ray.exceptions.RayError) as exc:
            logger.info("line: cannot connect (%s); calls go through Ray for now", exc)
            self._reconnect.failed()
            return None
        self._reconnect.succeeded()
        self._socket = sock
        return sock

    def _drop(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def close(self) -> None:
        with self._lock:
            self._drop()

    def __getstate__(self) -> dict[str, Any]:
        return {"handle": self.handle, "deadline_s": self._deadline_s}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["handle"], state["deadline_s"])  # type: ignore[misc]


def _positional(kwargs: dict[str, Any]) -> None:
    """Line calls carry positional arguments only (as the frame does)."""
    if kwargs:
        raise TypeError(f"line calls take positional arguments only (got {sorted(kwargs)})")


def _check_deadline(deadline_s: float) -> None:
    """A deadline must leave room for two heartbeats, or a live callee would be given up."""
    if deadline_s <= 2 * HEARTBEAT_S:
        raise ValueError(f"a line's deadline must exceed {2 * HEARTBEAT_S} s (got {deadline_s})")


class _NoLine:
    """Stands in for the ``line_address`` method of an actor that has none."""

    @staticmethod
    def remote() -> Any:
        return ray.put(None)


def _line_address(handle: Any) -> Any:
    try:
        return handle.line_address
    except AttributeError:  # an actor without a line server: every call through Ray
        return _NoLine


def _receive(sock: socket.socket, count: int) -> bytes:
    chunks = []
    while count:
        chunk = sock.recv(min(count, 1 << 20))
        if not chunk:
            raise EOFError("line closed")
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)
