"""Source middleware (Drasi's ``middleware/`` crate): per query subscription, changes are
transformed before the query sees them. See :mod:`.pipeline` for the pipeline and one module
per kind (``relabel``, ``decoder``, ``parse_json``, ``promote``, ``unwind``, ``mapping`` for
``map``/``remap``, ``jq``); where middleware runs is described in
:mod:`drasi_ray.host.pipelines` (in the query, on its host)."""

from drasi_ray.source.middleware.base import Change, ElementLookup, Middleware
from drasi_ray.source.middleware.pipeline import Pipeline, build_pipeline, check_middleware

__all__ = [
    "Change",
    "ElementLookup",
    "Middleware",
    "Pipeline",
    "build_pipeline",
    "check_middleware",
]
