"""A Server-Sent Events client that keeps each query's table as the dashboard page does:
the SSE reaction's tests read what a browser would show, without a browser.

:class:`SseClient` reads ``GET /events`` in a thread of its own, records every event, and
applies ``snapshot`` and ``diff`` events to per-query tables of rows by key. ``last_id`` is
the id of the last event received; a new client given it as ``last_event_id`` resumes where
this one stopped, as a reconnecting browser does.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import orjson

from drasi_ray.testing.waiting import wait_until


@dataclass(frozen=True, slots=True)
class Event:
    kind: str
    event_id: str | None
    data: Any


class SseClient:
    """Reads an SSE reaction's event stream (module docstring). Use as a context manager."""

    def __init__(
        self,
        base_url: str,
        queries: Sequence[str] = (),
        last_event_id: str | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        parts = urlsplit(base_url)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        query = urlencode([("query", query_id) for query_id in queries])
        self._path = "/events" + (f"?{query}" if query else "")
        self._headers = {} if last_event_id is None else {"Last-Event-ID": last_event_id}
        self._timeout = timeout_s
        self._lock = threading.Lock()
        self.events: list[Event] = []
        self.tables: dict[str, dict[int, dict[str, Any]]] = {}
        self.sequences: dict[str, int] = {}
        self.last_id: str | None = last_event_id
        self.status: int | None = None
        self._connection: http.client.HTTPConnection | None = None
        self._response: http.client.HTTPResponse
        self._thread = threading.Thread(target=self._read, daemon=True)

    def __enter__(self) -> SseClient:
        self._connection = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        self._connection.request("GET", self._path, headers=self._headers)
        self._response = self._connection.getresponse()
        self.status = self._response.status
        if self._response.status == 200:
            self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        connection = self._connection
        if connection is not None and connection.sock is not None:
            with contextlib.suppress(OSError):
                connection.sock.shutdown(socket.SHUT_RDWR)  # the reader sees the end
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        if connection is not None:
            connection.close()

    def _read(self) -> None:
        """Parse events off the response (which decodes the chunked framing, and already
        holds whatever arrived with the headers) until the connection closes."""
        kind, event_id = "message", None
        data: list[str] = []
        try:
            while raw := self._response.readline():
                line = raw.decode().rstrip("\r\n")
                if not line:
                    if data:
                        self._dispatch(Event(kind, event_id, orjson.loads("\n".join(data))))
                    kind, event_id, data = "message", None, []
                elif line.startswith(":"):
                    continue
                else:
                    name, _, value = line.partition(":")
                    value = value.removeprefix(" ")
                    if name == "event":
                        kind = value
                    elif name == "id":
                        event_id = value
                    elif name == "data":
                        data.append(value)
        except (OSError, ValueError, http.client.HTTPException):
            pass  # closed

    def _dispatch(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)
            if event.event_id is not None:
                self.last_id = event.event_id
            data = event.data
            if event.kind == "snapshot":
                self.tables[data["queryId"]] = {key: row for key, row in data["rows"]}
                self.sequences[data["queryId"]] = data["sequence"]
            elif event.kind == "diff":
                table = self.tables.setdefault(data["queryId"], {})  # resumed: no snapshot
                for change in data["changes"]:
                    if change["op"] == "delete":
                        del table[change["key"]]
                    else:
                        table[change["key"]] = change["row"]
                self.sequences[data["queryId"]] = data["sequence"]

    def rows(self, query_id: str) -> list[dict[str, Any]]:
        """The query's table as the client holds it."""
        with self._lock:
            return list(self.tables.get(query_id, {}).values())

    def kinds(self) -> list[str]:
        with self._lock:
            return [event.kind for event in self.events]

    def wait_for_sequence(self, query_id: str, sequence: int, timeout_s: float = 30.0) -> None:
        wait_until(
            lambda: self.sequences.get(query_id, -1) >= sequence,
            timeout_s,
            what=f"the client to reach {query_id} #{sequence}",
        )
