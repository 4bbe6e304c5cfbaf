"""The log reaction: every result as one line of the ``drasi_ray.reaction`` logger."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from drasi_ray.model import encoding
from drasi_ray.model.reaction_specs import LogReaction
from drasi_ray.model.results import Delivered
from drasi_ray.reactions.base import Reaction
from drasi_ray.reactions.jsonl import result_line

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}


class LoggingReaction(Reaction[list[str]]):
    """Logs ``query <id> #<sequence>: <json>`` per result, at the configured level."""

    kind = "log"

    def __init__(self, query_id: str, spec: LogReaction) -> None:
        self._logger = logging.getLogger(f"drasi_ray.reaction.{query_id}")
        self._level = _LEVELS[spec.level]

    def render(self, items: Sequence[Delivered]) -> list[str]:
        return [encoding.dumps(result_line(item)).decode() for item in items]

    async def write(self, rendered: list[str], retry: bool) -> None:
        for line in rendered:
            self._logger.log(self._level, "%s", line)
