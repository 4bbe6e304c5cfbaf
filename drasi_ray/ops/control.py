"""How the ``drasi-ray`` commands reach a running app: a control channel in the app's Redis.

An app runs in the process of ``drasi-ray run`` (its driver: the actors are its own, on a local
Ray or a cluster). That process serves the commands ``apply``, ``list``, ``describe``,
``delete`` and ``watch`` on its *control Redis*: the app's state Redis (``state.redis_url``),
else its first source's. A command finds the app by its id (``--app``, default ``default``)
and that Redis (``--redis-url``); it needs no Ray connection, so it works the same for an app
on a local Ray and one on a cluster, from any machine that reaches the Redis.

- **Registration** (``drasi:<app>:control``, a hash): the serving process's pid, host, start
  and last heartbeat, what it runs; renewed every :data:`HEARTBEAT_S` with an expiry of
  :data:`REGISTRATION_TTL_S`, deleted when ``run`` stops. No registration: the app is not
  running (a killed process's expires within the TTL). A second ``run`` of a running app id on
  the same Redis is refused, unless the one registered is a dead process on this host.
- **Requests** (``drasi:<app>:control:requests``, a stream): a command appends ``{id, op,
  args, deadline_ms}``; the server's thread reads the stream and deletes each request as it
  takes it (a request may hold a file's text). The ``run`` loop executes it on the app (a
  :class:`~drasi_ray.app.DrasiRay` is driven from one thread) between two rounds of printing
  results, and the thread's caller writes the reply.
- **Replies** (``drasi:<app>:control:reply:<id>``, a list): one JSON object, ``{"ok": true,
  "result": ...}`` or ``{"ok": false, "error": "..."}``, expiring after
  :data:`REPLY_TTL_S`; the command waits for it until its deadline.

A request whose deadline passed before it was taken is dropped unanswered: the command has
already reported that the app did not answer.
"""

from __future__ import annotations

import logging
import os
import queue
import socket
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import redis
from redis.typing import EncodableT

from drasi_ray.model import keys, urls
from drasi_ray.model.errors import ConfigError, ControlError, NotRunningError
from drasi_ray.streams import connections

logger = logging.getLogger("drasi_ray.control")

HEARTBEAT_S = 1.0
REGISTRATION_TTL_S = 5.0
REPLY_TTL_S = 60.0
REQUESTS_MAXLEN = 1000
READ_BLOCK_MS = 500
CHECK_S = 5.0
"""How long a command waits for the app's Redis to answer before saying it does not."""


@dataclass(frozen=True, slots=True)
class Request:
    """One command's request: ``op`` and its ``args``; ``deadline_ms`` (epoch ms) is when
    the command stops waiting."""

    id: str
    op: str
    args: dict[str, Any]
    deadline_ms: int

    def to_json(self) -> bytes:
        return orjson.dumps(
            {"id": self.id, "op": self.op, "args": self.args, "deadline_ms": self.deadline_ms}
        )

    @staticmethod
    def from_json(data: bytes) -> Request:
        doc = orjson.loads(data)
        return Request(str(doc["id"]), str(doc["op"]), dict(doc["args"]), int(doc["deadline_ms"]))


@dataclass(frozen=True, slots=True)
class Registration:
    """What the serving process registered: who it is and what it runs."""

    pid: int
    host: str
    started_ms: int
    heartbeat_ms: int
    details: dict[str, str]

    @staticmethod
    def from_hash(fields: Mapping[bytes, bytes]) -> Registration:
        text = {key.decode(): value.decode() for key, value in fields.items()}
        return Registration(
            int(text.pop("pid")),
            text.pop("host"),
            int(text.pop("started_ms")),
            int(text.pop("heartbeat_ms")),
            text,
        )

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"


def client(url: str) -> redis.Redis:
    """A client with a bounded connect timeout; reads may block as long as the command
    waits for its reply (a BLPOP), so they have none."""
    return connections.client(url, socket_timeout=None, health_check_interval=30)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class ControlServer:
    """The serving side, in the ``drasi-ray run`` process: registration, heartbeat and a
    thread that reads requests; :meth:`take` hands them to the caller, :meth:`answer`
    replies."""

    def __init__(self, redis_url: str, app_id: str, details: Mapping[str, str]) -> None:
        self.redis_url = redis_url
        self.app_id = app_id
        self._details: dict[EncodableT, EncodableT] = {k: v for k, v in details.items()}
        self._client = client(redis_url)
        self._requests: queue.Queue[Request] = queue.Queue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started_ms = _now_ms()

    def start(self) -> ControlServer:
        """Register (refusing an app id another live process serves) and start reading."""
        try:
            self._check_not_served()
            self._register()
            start = self._last_request_id()
        except redis.RedisError as exc:
            raise connections.explain(exc, self.redis_url, "the app's commands") from exc
        self._thread = threading.Thread(
            target=self._serve, args=(start,), name="drasi-ray-control", daemon=True
        )
        self._thread.start()
        return self

    def _check_not_served(self) -> None:
        current = self._client.hgetall(keys.control(self.app_id))
        if not current:
            return
        other = Registration.from_hash(current)  # type: ignore[arg-type]
        if other.host == socket.gethostname() and not _alive(other.pid):
            return  # a killed run of this app on this machine: take over
        raise ConfigError(
            f"app {self.app_id!r} is already running ({other.describe()}) on "
            f"{urls.redact_url(self.redis_url)}: stop it, or run this one with another --app-id"
        )

    def _register(self) -> None:
        fields: dict[EncodableT, EncodableT] = {
            "pid": str(os.getpid()),
            "host": socket.gethostname(),
            "started_ms": str(self._started_ms),
            "heartbeat_ms": str(_now_ms()),
            **self._details,
        }
        key = keys.control(self.app_id)
        with self._client.pipeline(transaction=True) as pipe:
            pipe.delete(key)
            pipe.hset(key, mapping=fields)
            pipe.pexpire(key, int(REGISTRATION_TTL_S * 1000))
            pipe.execute()

    def _last_request_id(self) -> str:
        """Requests written before this start are not this process's to answer."""
        last: Any = self._client.xrevrange(keys.control_requests(self.app_id), count=1)
        return last[0][0].decode() if last else "0-0"

    def _serve(self, start: str) -> None:
        """The thread: heartbeat, and requests from the stream into the queue."""
        reader = client(self.redis_url)
        last, beat = start, 0.0
        stream = keys.control_requests(self.app_id)
        while not self._stop.is_set():
            try:
                if time.monotonic() - beat >= HEARTBEAT_S:
                    self._heartbeat(reader)
                    beat = time.monotonic()
                read: Any = reader.xread({stream: last}, count=10, block=READ_BLOCK_MS)
                for _stream, entries in read or ():
                    for entry_id, fields in entries:
                        last = entry_id.decode()
                        reader.xdel(stream, entry_id)
                        self._accept(fields)
            except redis.RedisError as exc:  # Redis away: the registration lapses meanwhile
                logger.warning("control channel: %s", exc)
                self._stop.wait(HEARTBEAT_S)
        reader.close()

    def _heartbeat(self, reader: redis.Redis) -> None:
        key = keys.control(self.app_id)
        with reader.pipeline(transaction=True) as pipe:
            pipe.hset(key, "heartbeat_ms", str(_now_ms()))
            pipe.pexpire(key, int(REGISTRATION_TTL_S * 1000))
            pipe.execute()

    def _accept(self, fields: Mapping[bytes, bytes]) -> None:
        try:
            request = Request.from_json(fields[b"request"])
        except (KeyError, ValueError, TypeError) as exc:
            logger.warning("control channel: malformed request skipped (%s)", exc)
            return
        if request.deadline_ms < _now_ms():
            return  # its command gave up waiting
        self._requests.put(request)

    def take(self) -> list[Request]:
        """The requests waiting, in order (never blocks)."""
        taken: list[Request] = []
        while True:
            try:
                taken.append(self._requests.get_nowait())
            except queue.Empty:
                return taken

    def answer(self, request: Request, reply: Mapping[str, Any]) -> None:
        """Send ``reply`` (JSON-able) to the command waiting for ``request``."""
        key = keys.control_reply(self.app_id, request.id)
        try:
            with self._client.pipeline(transaction=True) as pipe:
                pipe.rpush(key, orjson.dumps(reply, default=str))
                pipe.pexpire(key, int(REPLY_TTL_S * 1000))
                pipe.execute()
        except redis.RedisError as exc:
            logger.warning("control channel: reply to %s lost: %s", request.op, exc)

    def close(self) -> None:
        """Stop reading and remove the registration (if it is still this process's)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=READ_BLOCK_MS / 1000 + 5)
        try:
            key = keys.control(self.app_id)
            if self._client.hget(key, "pid") == str(os.getpid()).encode():
                self._client.delete(key)
        except redis.RedisError as exc:
            logger.warning("control channel: registration left to expire: %s", exc)
        self._client.close()


class ControlClient:
    """The commands' side: find the app, send a request, wait for its reply."""

    def __init__(self, redis_url: str, app_id: str) -> None:
        keys.control(app_id)  # the id's own rules
        self.redis_url = redis_url
        self.app_id = app_id
        self._client = client(redis_url)
        self._checked = False

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._client.close()

    @property
    def where(self) -> str:
        return f"app {self.app_id!r} on {urls.redact_url(self.redis_url)}"

    def registration(self) -> Registration:
        """The running app's registration; NotRunningError when none serves it, a one-line
        error naming the Redis when it does not answer within :data:`CHECK_S`."""
        what = f"app {self.app_id!r}"
        if not self._checked:
            connections.check(self.redis_url, what, CHECK_S)
            self._checked = True
        try:
            fields: Any = self._client.hgetall(keys.control(self.app_id))
        except redis.RedisError as exc:
            raise connections.explain(exc, self.redis_url, what) from exc
        if not fields:
            raise NotRunningError(
                f"{self.where} is not running: start it with `drasi-ray run FILE` (--app-id "
                "names it; --app and --redis-url here say which app to reach)"
            )
        return Registration.from_hash(fields)

    def call(self, op: str, args: Mapping[str, Any], timeout_s: float) -> Any:
        """Run ``op`` on the running app; its result. ControlError when the app refuses
        or fails it (the message is the app's), NotRunningError when no app serves the id,
        TimeoutError... as ControlError when no reply comes within ``timeout_s``."""
        registration = self.registration()
        request = Request(uuid.uuid4().hex, op, dict(args), _now_ms() + int(timeout_s * 1000))
        try:
            self._client.xadd(
                keys.control_requests(self.app_id),
                {"request": request.to_json()},
                maxlen=REQUESTS_MAXLEN,
                approximate=True,
            )
            answer: Any = self._client.blpop(
                [keys.control_reply(self.app_id, request.id)], timeout=max(timeout_s, 0.01)
            )
        except redis.RedisError as exc:
            raise connections.explain(exc, self.redis_url, f"app {self.app_id!r}") from exc
        if answer is None:
            raise ControlError(
                f"{self.where} ({registration.describe()}) did not answer within "
                f"{timeout_s:g}s; a longer --timeout waits longer"
            )
        reply = orjson.loads(answer[1])
        if not reply.get("ok"):
            raise ControlError(str(reply.get("error")))
        return reply.get("result")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
