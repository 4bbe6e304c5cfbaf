"""Translating redis-py exceptions into the drasi_ray error tree, without leaking secrets.

The one place that knows which Redis failure is which kind of drasi_ray error:

- cannot reach the server (refused, reset, timed out, still loading) ->
  :class:`~drasi_ray.errors.RedisUnavailableError`: retry with backoff;
- the server refuses (``OOM``, ``READONLY``, ``NOAUTH``, ``WRONGPASS``, ``NOPERM``,
  ``MISCONF``) -> :class:`~drasi_ray.errors.RedisRejectedError`;
- ``NOGROUP`` -> :class:`~drasi_ray.errors.GroupMissingError`: recreate the group;
- any other error reply or client error -> :class:`~drasi_ray.errors.StreamError`.

Messages name the operation and the server as :func:`redact_url` shows it; the password (and
the URL query string, which may carry one) never appears. The original exception is chained as
``__cause__`` by the caller (``raise translate(...) from exc``).
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from redis import exceptions as rexc

from drasi_ray.errors import (
    GroupMissingError,
    RedisRejectedError,
    RedisUnavailableError,
    StreamError,
)

REJECTION_CODES = ("OOM", "READONLY", "NOAUTH", "WRONGPASS", "NOPERM", "MISCONF")
"""Error-reply prefixes that mean "the server will not do this" rather than "unreachable"."""

_REJECTION_TYPES: tuple[type[Exception], ...] = (
    rexc.AuthenticationError,
    rexc.AuthorizationError,
    rexc.NoPermissionError,
    rexc.ReadOnlyError,
    rexc.OutOfMemoryError,
)
_UNAVAILABLE_TYPES: tuple[type[Exception], ...] = (rexc.ConnectionError, rexc.TimeoutError, OSError)


def redact_url(url: str) -> str:
    """``redis://user:pw@host:6379/0?password=x`` -> ``redis://user:***@host:6379/0``.

    Keeps what helps an operator find the server (scheme, user, host, port, db), replaces the
    password and drops the query string. Unparseable input yields ``"<redis url>"``.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return "<redis url>"
    user = parts.username or ""
    userinfo = f"{user}@" if user else ""
    if parts.password is not None:
        userinfo = f"{user}:***@"
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return f"{parts.scheme}://{userinfo}{host}{port}{parts.path}"


def url_secrets(url: str) -> tuple[str, ...]:
    """Strings that must never appear in a message: the URL's password, raw and unquoted."""
    try:
        password = urlsplit(url).password
    except ValueError:
        return ()
    if not password:
        return ()
    return tuple({password, unquote(password)})


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    """Replace every occurrence of each secret in ``text`` with ``***``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def is_rejection(exc: BaseException) -> bool:
    """True if ``exc`` is a server refusal that retrying the same call will not fix soon."""
    if isinstance(exc, _REJECTION_TYPES):
        return True
    return isinstance(exc, rexc.ResponseError) and str(exc).startswith(REJECTION_CODES)


def translate(
    exc: BaseException,
    operation: str,
    target: str,
    secrets: tuple[str, ...] = (),
    *,
    stream: str = "",
    group: str = "",
) -> StreamError:
    """The drasi_ray error for ``exc``, raised by ``operation`` against ``target``.

    ``target`` should already be redacted (:func:`redact_url`); ``secrets`` are scrubbed from
    the server's text as a second line of defence. ``stream``/``group`` fill
    :class:`GroupMissingError`.
    """
    # redis-py strips the error code from replies it maps to a class (OOM -> OutOfMemoryError):
    # the class name keeps the message precise.
    detail = scrub(str(exc), secrets)
    message = f"{operation} on {target} failed ({type(exc).__name__}): {detail}"
    if is_rejection(exc):
        return RedisRejectedError(message)
    if isinstance(exc, _UNAVAILABLE_TYPES):
        return RedisUnavailableError(message)
    if isinstance(exc, rexc.ResponseError) and str(exc).startswith("NOGROUP"):
        return GroupMissingError(message, stream, group)
    return StreamError(message)
