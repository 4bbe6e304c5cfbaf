"""The log reaction: every result as one JSON line on the host's stdout (Ray forwards it to the
driver), its stderr, or the ``drasi_ray.reaction.<query id>`` logger."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from drasi_ray.model import encoding
from drasi_ray.model.reaction_specs import LogReaction
from drasi_ray.model.results import Delivered
from drasi_ray.reactions.base import Reaction
from drasi_ray.reactions.jsonl import result_line

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}


class LoggingReaction(Reaction[list[str]]):
    """Writes one JSON line per result (:func:`~drasi_ray.reactions.jsonl.result_line`) to
    ``spec.to``: stdout or stderr (flushed per write, so Ray forwards it at once), or the
    logger at the configured level."""

    kind = "log"

    def __init__(self, query_id: str, spec: LogReaction) -> None:
        self._logger = logging.getLogger(f"drasi_ray.reaction.{query_id}")
        self._level = _LEVELS[spec.level]
        self._to = spec.to

    def render(self, items: Sequence[Delivered]) -> list[str]:
        return [encoding.dumps(result_line(item)).decode() for item in items]

    async def write(self, rendered: list[str], retry: bool) -> None:
        if self._to == "logger":
            for line in rendered:
                self._logger.log(self._level, "%s", line)
            return
        out = sys.stdout if self._to == "stdout" else sys.stderr
        out.write("".join(f"{line}\n" for line in rendered))
        out.flush()
