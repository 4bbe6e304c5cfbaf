"""Tables as the resource commands print them (Drasi's CLI draws the same shape)::

  ID      | STATUS
----------+---------
  sensors | Running
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson


def cell(value: Any) -> str:
    """A value as a cell: nothing for null, text as it is, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return ", ".join(value)
    return orjson.dumps(value).decode()


def render(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """``header`` and ``rows`` as a table, columns as wide as their widest cell."""
    cells = [[cell(value) for value in row] for row in rows]
    widths = [max(len(row[i]) for row in [list(header), *cells]) for i in range(len(header))]
    lines = [" | ".join(name.ljust(width) for name, width in zip(header, widths, strict=True))]
    lines.append("-+-".join("-" * width for width in widths))
    lines += [
        " | ".join(text.ljust(width) for text, width in zip(row, widths, strict=True))
        for row in cells
    ]
    return "\n".join("  " + line.rstrip() for line in lines)
