"""How evaluating a row fails quietly: :class:`RowDropped`.

Its own module, below :mod:`~drasi_ray.query.values` and :mod:`~drasi_ray.query.temporal`,
which both raise it.
"""

from __future__ import annotations


class RowDropped(Exception):
    """Raised while evaluating a row that must be dropped (e.g. a division by zero).

    Deliberately not a :class:`~drasi_ray.model.errors.DrasiRayError`: it never escapes the engine,
    which catches it around each row's evaluation.
    """
