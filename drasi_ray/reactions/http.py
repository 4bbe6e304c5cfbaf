"""The HTTP reaction's endpoint: a request per diff (or per batch) from Drasi's templates.

:class:`HttpEndpoint` is the :class:`~drasi_ray.reactions.relay.Endpoint` a
:class:`~drasi_ray.reactions.relay.StreamRelay` delivers to: it renders each diff with the
calls configured for its query and change kind (:class:`~drasi_ray.model.reaction_specs.
HttpReaction`, templates in :mod:`drasi_ray.reactions.templates`) and sends it with aiohttp.
Every request carries ``Idempotency-Key: <queryId>:<sequence>:<index>`` (the diff's place in
the query's results, the same on every retry and after a restart) and, with a token,
``Authorization: Bearer <token>``.

Verdicts: a 2xx answer is delivered; 408, 429 and 5xx answers, timeouts and connection
failures are worth retrying; any other answer is refused (retrying the same request will not
change it) and dead-lettered at once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from yarl import URL

from drasi_ray.model import encoding
from drasi_ray.model.errors import ConfigError
from drasi_ray.model.reaction_specs import CHANGE_KINDS, HttpCall, HttpReaction
from drasi_ray.reactions.feed import kind_of
from drasi_ray.reactions.relay import Call, Outcome, RendersEachDiff, Verdict
from drasi_ray.reactions.templates import Mode, Template, check_fields, compile_template

IDEMPOTENCY_HEADER = "Idempotency-Key"
RETRYABLE_STATUS = frozenset({408, 429})
_REASON_BODY_CHARS = 200


class Token:
    """A bearer token; shown as ``Token(***)`` wherever it is printed or logged."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Token(***)"


def resolve_token(spec: HttpReaction, environ: Mapping[str, str] = os.environ) -> Token | None:
    """The reaction's token from ``token_env`` or ``token_file``; ConfigError (one line,
    naming the variable or file, never the token) when it is missing or empty."""
    return read_secret(f"reaction {spec.id!r}", "token", spec.token_env, spec.token_file, environ)


def read_secret(
    owner: str,
    what: str,
    env_name: str | None,
    file_name: str | None,
    environ: Mapping[str, str] = os.environ,
) -> Token | None:
    """A secret from the variable ``env_name`` or the file ``file_name`` (stripped; None when
    neither is given). ConfigError, one line starting with ``owner`` and naming the variable or
    file (``<what>_env`` / ``<what>_file``), never the secret, when it is missing or empty."""
    if env_name is not None:
        value = environ.get(env_name, "").strip()
        if not value:
            raise ConfigError(f"{owner}: {what}_env {env_name} is not set (or empty)")
        return Token(value)
    if file_name is not None:
        path = Path(file_name)
        try:
            value = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            raise ConfigError(f"{owner}: {what}_file {path} does not exist") from None
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise ConfigError(f"{owner}: {what}_file {path} cannot be read ({reason})") from None
        if not value:
            raise ConfigError(f"{owner}: {what}_file {path} is empty")
        return Token(value)
    return None


@dataclass(frozen=True, slots=True)
class CompiledCall:
    """An :class:`HttpCall` with its templates compiled."""

    method: str
    url: Template
    body: Template | None
    headers: tuple[tuple[str, Template], ...]

    @property
    def templates(self) -> list[Template]:
        found = [self.url, *(template for _name, template in self.headers)]
        return found if self.body is None else [*found, self.body]


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One rendered request."""

    method: str
    url: str
    body: bytes | None
    headers: tuple[tuple[str, str], ...]


def compile_call(call: HttpCall, common: Mapping[str, str]) -> CompiledCall:
    headers = {**common, **call.headers}
    if call.body is not None and not any(name.lower() == "content-type" for name in headers):
        headers["Content-Type"] = "application/json"
    return CompiledCall(
        call.method,
        compile_template(call.url, Mode.URL),
        None if call.body is None else compile_template(call.body, Mode.BODY),
        tuple((name, compile_template(value, Mode.HEADER)) for name, value in headers.items()),
    )


def compile_query(spec: HttpReaction, query_id: str) -> dict[str, CompiledCall | None]:
    """The compiled call of each change kind of ``query_id`` (None: nothing is sent)."""
    calls = spec.calls(query_id)
    compiled: dict[str, CompiledCall | None] = {}
    for kind in CHANGE_KINDS:
        call = calls.call(kind)
        try:
            compiled[kind] = None if call is None else compile_call(call, spec.headers)
        except ConfigError as exc:
            raise ConfigError(f"reaction {spec.id!r}, query {query_id!r}, {kind}: {exc}") from None
    return compiled


def check_query(spec: HttpReaction, query_id: str, columns: Sequence[str]) -> None:
    """Refuse templates that do not fit ``query_id``'s result rows (ConfigError, one line)."""
    for kind, compiled in compile_query(spec, query_id).items():
        if compiled is not None:
            where = f"reaction {spec.id!r}, query {query_id!r}, {kind}"
            check_fields(compiled.templates, kind, columns, where)


class HttpEndpoint(RendersEachDiff):
    """Renders and sends the calls of an :class:`HttpReaction` (module docstring)."""

    def __init__(self, spec: HttpReaction, token: Token | None) -> None:
        self.spec = spec
        self.batch_size = spec.max_batch if spec.batch_path is not None else 1
        self._plans = {query_id: compile_query(spec, query_id) for query_id in spec.queries}
        self._auth = () if token is None else (("Authorization", f"Bearer {token.reveal()}"),)
        self._session: aiohttp.ClientSession | None = None

    def render(
        self, query_id: str, sequence: int, index: int, diff: Mapping[str, Any], source_time_ms: int
    ) -> Call:
        kind, before, after = kind_of(diff)
        key = f"{query_id}:{sequence}:{index}"
        call = Call(key, query_id, sequence, kind, diff, source_time_ms=source_time_ms)
        compiled = self._plans[query_id][kind]
        if compiled is None:
            return call
        context = {
            "after": after,
            "before": before,
            "queryId": query_id,
            "sequence": sequence,
            "kind": kind,
            "sourceTimeMs": source_time_ms,
        }
        try:
            payload = self._render(compiled, context, key)
        except Exception as exc:  # a value no template can write: dead-letter this diff
            return dataclasses.replace(call, error=f"render: {type(exc).__name__}: {exc}")
        return dataclasses.replace(call, payload=payload)

    def _render(
        self, compiled: CompiledCall, context: Mapping[str, Any], key: str
    ) -> HttpRequest | dict[str, Any]:
        if self.spec.batch_path is not None:
            return {
                "queryId": context["queryId"],
                "sequence": context["sequence"],
                "kind": context["kind"],
                "before": context["before"],
                "after": context["after"],
                "idempotencyKey": key,
            }
        headers = tuple((name, value.render(context)) for name, value in compiled.headers)
        body = None if compiled.body is None else compiled.body.render(context).encode()
        return HttpRequest(
            compiled.method,
            self.spec.base_url + compiled.url.render(context),
            body,
            (*headers, *self._auth, (IDEMPOTENCY_HEADER, key)),
        )

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            timeout = aiohttp.ClientTimeout(total=self.spec.timeout_ms / 1000)
            self._session = aiohttp.ClientSession(timeout=timeout)
        return self._session

    async def send(self, calls: Sequence[Call]) -> Outcome:
        request = self._batch_request(calls) if self.spec.batch_path else calls[0].payload
        assert isinstance(request, HttpRequest)
        try:
            async with self._client().request(
                request.method,
                URL(request.url, encoded=True),
                data=request.body,
                headers=list(request.headers),
                allow_redirects=False,
            ) as response:
                text = await response.text(errors="replace")
                return _verdict(response.status, text)
        except asyncio.TimeoutError:
            return Outcome(Verdict.RETRY, f"timed out after {self.spec.timeout_ms} ms")
        except (aiohttp.ClientError, OSError) as exc:
            return Outcome(Verdict.RETRY, f"{type(exc).__name__}: {exc}")

    def _batch_request(self, calls: Sequence[Call]) -> HttpRequest:
        body = encoding.dumps([call.payload for call in calls])
        headers = (("Content-Type", "application/json"), *self.spec.headers.items(), *self._auth)
        return HttpRequest("POST", self.spec.base_url + (self.spec.batch_path or ""), body, headers)

    def describe(self, call: Call) -> str:
        if self.spec.batch_path is not None:
            return f"POST {self.spec.base_url}{self.spec.batch_path}"
        request = call.payload
        assert isinstance(request, HttpRequest)
        return f"{request.method} {request.url}"

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def _verdict(status: int, text: str) -> Outcome:
    if 200 <= status < 300:
        return Outcome(Verdict.DELIVERED)
    reason = f"HTTP {status}: {text[:_REASON_BODY_CHARS].strip()}".rstrip(": ")
    if status >= 500 or status in RETRYABLE_STATUS:
        return Outcome(Verdict.RETRY, reason)
    return Outcome(Verdict.REFUSED, reason)
