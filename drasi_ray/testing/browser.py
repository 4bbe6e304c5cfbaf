"""A real browser on the dashboard: Playwright driving Debian's Chromium (never a download).

:func:`chromium` opens a headless Chromium from :data:`CHROMIUM` (the ``chromium`` package;
``.ci/run`` installs it with apt-get when it is absent) with a fresh profile, and
:func:`missing_reason` says why it cannot (tests skip with it). :func:`table` reads a query's
table off the dashboard page as text, as a person sees it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def missing_reason() -> str | None:
    """Why no browser test can run here (None: it can)."""
    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is not installed (pip install -e '.[dev]')"
    if not CHROMIUM.exists():
        return f"Debian's chromium is not installed ({CHROMIUM}): apt-get install -y chromium"
    return None


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium browser context (fresh user data dir), closed on exit."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="drasi-chromium-") as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            headless=True,
            args=list(ARGS),
            viewport={"width": 1400, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


def table(page: Any, query_id: str) -> list[dict[str, str]]:
    """The rows of ``query_id``'s table on the page (rows fading out after a delete are not
    counted), each column's cell text."""
    rows: list[dict[str, str]] = page.evaluate(
        """(queryId) => {
            const card = [...document.querySelectorAll("section.query")]
                .find((node) => node.dataset.query === queryId);
            if (!card) return [];
            return [...card.querySelectorAll("tbody tr:not(.row-deleted)")].map((tr) =>
                Object.fromEntries([...tr.querySelectorAll("td")].map(
                    (td) => [td.dataset.column, td.textContent])));
        }""",
        query_id,
    )
    return rows


def shown(value: Any) -> str:
    """How the page writes a value (JavaScript's ``String``, ``JSON.stringify`` for lists and
    maps, ``null`` for null), for comparing a row with its table."""
    import json

    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def shown_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    return [{column: shown(value) for column, value in row.items()} for row in rows]
