"""Translating redis-py exceptions into the drasi_ray error tree, without leaking secrets.

The one place that knows which Redis failure is which kind of drasi_ray error:

- cannot reach the server (refused, reset, timed out, still loading) ->
  :class:`~drasi_ray.model.errors.RedisUnavailableError`: retry with backoff;
- the server refuses (``OOM``, ``READONLY``, ``NOAUTH``, ``WRONGPASS``, ``NOPERM``,
  ``MISCONF``) -> :class:`~drasi_ray.model.errors.RedisRejectedError`;
- ``NOGROUP`` -> :class:`~drasi_ray.model.errors.GroupMissingError`: recreate the group;
- any other error reply or client error -> :class:`~drasi_ray.model.errors.StreamError`.

Messages name the operation and the server as :func:`~drasi_ray.model.urls.redact_url` shows it; the
password (and the URL query string, which may carry one) never appears. The original exception is
chained as ``__cause__`` by the caller (``raise translate(...) from exc``).
"""

from __future__ import annotations

from redis import exceptions as rexc

from drasi_ray.model.errors import (
    GroupMissingError,
    RedisRejectedError,
    RedisUnavailableError,
    StreamError,
)
from drasi_ray.model.urls import scrub

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

    ``target`` should already be redacted (:func:`~drasi_ray.model.urls.redact_url`); ``secrets``
    are scrubbed from the server's text as a second line of defence. ``stream``/``group`` fill
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
