"""Redis URLs as people see them: in messages, logs and reprs the password never appears.

:func:`redact_url` is how every message names a server; :func:`url_secrets` and :func:`scrub`
are the second line of defence for text that comes from elsewhere (a server's error reply).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import unquote, urlsplit, urlunsplit


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


def without_password(url: str) -> str:
    """``url`` as it may be stored: the password (and a ``password=`` query option) taken
    out, everything else kept (user, host, port, db, TLS options). Unparseable input comes
    back unchanged only if it holds no ``@`` (nothing that could be a credential)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url if "@" not in url else "<redis url>"
    netloc = parts.netloc
    if password is not None:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.split(':', 1)[0]}@{host}" if user.split(":", 1)[0] else host
    query = "&".join(
        option for option in parts.query.split("&") if option and not option.startswith("password=")
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def with_password(url: str, known: Iterable[str]) -> str:
    """The URL of ``known`` that :func:`without_password` turns into ``url`` (a stored URL
    given back its password), else ``url`` itself."""
    for candidate in known:
        if candidate != url and without_password(candidate) == url:
            return candidate
    return url
