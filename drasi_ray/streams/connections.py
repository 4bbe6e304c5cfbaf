"""Opening a Redis connection with a deadline, and saying plainly why one cannot be opened.

Every synchronous client of the driver and the command line comes from :func:`client`, whose
connect and read timeouts are bounded, and every command and ``start()`` first calls
:func:`check` on each Redis it needs: a PING that keeps trying until ``timeout_s`` and then
raises one error naming the server (password masked, :func:`~drasi_ray.model.urls.redact_url`),
what it is for (``source 'sensors'``) and what to check. So a closed port, a wrong password, a
TLS mismatch or a host that does not answer ends in one clear line within the deadline, never
in a retry loop or a traceback.

TLS (``rediss://``) takes redis-py's URL options: ``ssl_ca_certs`` (the CA file to verify the
server with), ``ssl_certfile`` and ``ssl_keyfile`` (a client certificate), ``ssl_cert_reqs``
(``required``, the default, or ``none``) and ``ssl_check_hostname``
(docs/operations.md, "Security").
"""

from __future__ import annotations

import ssl
import time
from typing import Any

import redis
from redis import exceptions as rexc

from drasi_ray.model import urls
from drasi_ray.model.errors import RedisRejectedError, RedisUnavailableError, StreamError

CONNECT_TIMEOUT_S = 5.0
"""Socket connect timeout of one attempt (a check makes several within its deadline)."""
SOCKET_TIMEOUT_S = 30.0
"""Read timeout of the driver's and the command line's clients (none of them blocks longer)."""
DEFAULT_DEADLINE_S = 30.0
"""How long :func:`check` keeps trying by default (``connect_timeout_s`` of the app)."""
_RETRY_PAUSE_S = 0.5


def client(url: str, **options: Any) -> redis.Redis:
    """A synchronous client returning bytes, with bounded connect and read timeouts (``options``
    go to ``redis.Redis.from_url`` and win)."""
    settings: dict[str, Any] = {
        "decode_responses": False,
        "socket_connect_timeout": CONNECT_TIMEOUT_S,
        "socket_timeout": SOCKET_TIMEOUT_S,
        **options,
    }
    return redis.Redis.from_url(url, **settings)


def check(url: str, what: str, timeout_s: float = DEFAULT_DEADLINE_S) -> None:
    """PING the Redis of ``url`` until it answers or ``timeout_s`` passed.

    Raises :class:`RedisRejectedError` at once when the server refuses (a wrong password, a
    user without permission) or TLS cannot be set up (no retry fixes those), and
    :class:`RedisUnavailableError` when it did not answer by the deadline; both name ``what``
    (e.g. ``source 'sensors'``), the server with its password masked, and what to check. A URL
    redis-py cannot parse is a ConfigError-like :class:`StreamError`.
    """
    target = urls.redact_url(url)
    deadline = time.monotonic() + timeout_s
    try:
        probe = client(url, socket_connect_timeout=min(CONNECT_TIMEOUT_S, max(timeout_s, 0.1)))
    except (ValueError, TypeError) as exc:
        raise StreamError(f"{what}: the Redis URL {target} is not valid: {exc}") from exc
    with probe:
        while True:
            try:
                probe.ping()
                return
            except Exception as exc:
                problem = explain(exc, url, what)
                if isinstance(problem, RedisRejectedError) or time.monotonic() >= deadline:
                    raise problem from exc
            time.sleep(min(_RETRY_PAUSE_S, max(deadline - time.monotonic(), 0.0)))


def explain(exc: BaseException, url: str, what: str) -> StreamError:
    """The drasi_ray error for a failed connection to ``url``: one line, password masked."""
    target = urls.redact_url(url)
    detail = urls.scrub(str(exc), urls.url_secrets(url)).rstrip(". ") or type(exc).__name__
    if _is_tls_failure(exc):
        return RedisRejectedError(
            f"cannot set up TLS with Redis at {target} ({what}): {detail}; check the "
            "certificates (ssl_ca_certs, ssl_certfile, ssl_keyfile in the URL) and that the "
            "server speaks TLS on that port"
        )
    if isinstance(exc, (rexc.AuthenticationError, rexc.AuthorizationError)) or (
        isinstance(exc, rexc.ResponseError) and str(exc).startswith(("WRONGPASS", "NOAUTH"))
    ):
        return RedisRejectedError(
            f"Redis at {target} ({what}) refused the credentials: {detail}; check the user "
            "and password of the URL (or the variable or file it is read from)"
        )
    if isinstance(exc, (rexc.ConnectionError, rexc.TimeoutError, OSError)):
        return RedisUnavailableError(
            f"cannot reach Redis at {target} ({what}): {detail}; check that the server runs "
            "and that host and port of the URL are right and reachable from here"
        )
    return StreamError(f"Redis at {target} ({what}) failed: {type(exc).__name__}: {detail}")


def _is_tls_failure(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        text = str(seen)
        if isinstance(seen, ssl.SSLError) or "SSL" in text or "certificate" in text:
            return True
        seen = seen.__cause__ or seen.__context__
    return False
