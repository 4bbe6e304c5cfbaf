"""How the control plane reaches shards and hosts by name (drasi_ray.actors.handles), against
real Ray actors: a handle is looked up once, and again when the actor it found is gone."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
import ray

from drasi_ray.actors import names
from drasi_ray.actors.handles import RayCluster
from drasi_ray.model.errors import UnknownComponentError

pytestmark = pytest.mark.usefixtures("ray_session")


@ray.remote
class _Host:
    def __init__(self, token: str) -> None:
        self._token = token

    async def incarnation(self) -> str:
        return self._token


def _start(name: str, namespace: str, token: str) -> Any:
    handle = _Host.options(name=name, namespace=namespace).remote(token)  # type: ignore[attr-defined]
    ray.get(handle.incarnation.remote())
    return handle


def _stop(handle: Any, name: str, namespace: str) -> None:
    ray.kill(handle, no_restart=True)
    while True:  # the name is free once Ray has seen the actor die
        try:
            ray.get_actor(name, namespace=namespace)
        except ValueError:
            return


def test_a_host_started_again_under_its_name_is_found_by_the_next_call() -> None:
    namespace, name = f"handles-{uuid.uuid4().hex[:8]}", names.shared_host(0)
    cluster = RayCluster(namespace)
    first = _start(name, namespace, "first")
    assert asyncio.run(cluster.host(name).incarnation()) == "first"
    assert cluster.host(name) is cluster.host(name)  # one handle per name, kept
    _stop(first, name, namespace)
    second = _start(name, namespace, "second")
    try:
        assert asyncio.run(cluster.host(name).incarnation()) == "second"
    finally:
        ray.kill(second, no_restart=True)


def test_a_host_gone_for_good_is_reported_by_name() -> None:
    namespace, name = f"handles-{uuid.uuid4().hex[:8]}", names.shared_host(0)
    cluster = RayCluster(namespace)
    first = _start(name, namespace, "first")
    assert asyncio.run(cluster.host(name).incarnation()) == "first"
    _stop(first, name, namespace)
    with pytest.raises(UnknownComponentError, match=name):
        asyncio.run(cluster.host(name).incarnation())
