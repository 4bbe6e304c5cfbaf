"""Small helpers for code that runs inside Ray actors."""

from __future__ import annotations

import warnings

import ray


def was_restarted() -> bool:
    """True when the current actor is a restart (Ray reconstructed it after a failure)."""
    with warnings.catch_warnings():
        # Ray 2.60's own implementation of this call trips one of its deprecation warnings.
        warnings.simplefilter("ignore", DeprecationWarning)
        return bool(ray.get_runtime_context().was_current_actor_reconstructed)
