"""Tests that run the whole pipeline on a real local Ray.

Their fixtures (``redis_server``, ``redis_url``, ``ray_session``) live in ``tests/conftest.py``,
shared with ``tests/analytics``.
"""
