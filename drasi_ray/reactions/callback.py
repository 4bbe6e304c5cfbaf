"""The callback reaction: a Python function called for every result, in the query actor.

A retry resumes at the result whose call raised: the results before it are not passed again.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from drasi_ray.model.reaction_specs import CallbackReaction
from drasi_ray.model.results import Delivered
from drasi_ray.reactions.base import Reaction


@dataclass(slots=True)
class _Cursor:
    """A batch and how far into it the calls got."""

    items: Sequence[Delivered]
    done: int = 0


class FunctionReaction(Reaction[_Cursor]):
    """Calls ``function(result)``; awaits it when it returns an awaitable."""

    kind = "callback"

    def __init__(self, spec: CallbackReaction) -> None:
        self._spec = spec
        self._function: Callable[..., Any] | None = None

    async def open(self) -> None:
        self._function = self._spec.resolve()

    def render(self, items: Sequence[Delivered]) -> _Cursor:
        return _Cursor(items)

    async def write(self, rendered: _Cursor, retry: bool) -> None:
        function = self._function or self._spec.resolve()
        while rendered.done < len(rendered.items):
            outcome = function(rendered.items[rendered.done])
            if inspect.isawaitable(outcome):
                await outcome
            rendered.done += 1
