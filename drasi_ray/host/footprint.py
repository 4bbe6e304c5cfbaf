"""How much memory one query holds: the bytes of every object reachable from its state.

Queries share a query host's process, so the process's resident size says nothing about one of
them. :func:`deep_size` walks the objects reachable from a query's engine and result buffers
(``gc.get_referents``, plus the fields of msgspec Structs, which the garbage collector does not
track) and adds up ``sys.getsizeof`` of each, once. Classes, modules and functions are shared
code, not the query's data, and are not counted; an object two queries of a host both hold
(an element of a delta they both received) counts in each. The walk costs time in proportion
to the objects (tens of milliseconds per 10,000 result rows): it runs when status is asked
for, never on the data path.
"""

from __future__ import annotations

import gc
import sys
import types
from collections.abc import Iterable

import msgspec

_SHARED_CODE = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.CodeType,
)


def deep_size(roots: Iterable[object]) -> int:
    """Bytes of the objects reachable from ``roots``, each counted once (module docstring)."""
    seen: set[int] = set()
    stack = list(roots)
    total = 0
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, _SHARED_CODE):
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, msgspec.Struct):
            stack.extend(getattr(item, name) for name in item.__struct_fields__)
        else:
            stack.extend(gc.get_referents(item))
    return total
