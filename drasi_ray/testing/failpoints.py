"""Failpoints: deterministic fault injection for crash tests and chaos runs.

Off unless an app is built with ``DrasiRay(..., failpoints=Failpoints(...))`` (a
:class:`~drasi_ray.shards.core.ApplyProbe`). They make a
component fail for real (the process exits) at a precise point, so tests can assert exact
accounting without sleeping and hoping.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

logger = logging.getLogger("drasi_ray.failpoints")


@dataclass(frozen=True, slots=True)
class Failpoints:
    """Where to fail. ``crash_on_elements``: a store shard's process exits whenever it
    applies a change to one of these element ids (a change whose handling always crashes)."""

    crash_on_elements: frozenset[str] = frozenset()

    def check_element(self, element_id: str) -> None:
        if element_id in self.crash_on_elements:
            logger.error("failpoint: crashing on element %s", element_id)
            os._exit(17)
