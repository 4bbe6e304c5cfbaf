"""The control channel the commands reach a running app through (drasi_ray.ops.control), on a
real Redis: registration, a request and its reply, the app's refusal, no answer in time, a
second server for a served app id, and what a stopped server leaves."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
import redis

from drasi_ray.model import keys
from drasi_ray.model.errors import ConfigError, ControlError, NotRunningError
from drasi_ray.ops.control import ControlClient, ControlServer, Request
from drasi_ray.testing.waiting import wait_until

APP = "control-test"


@pytest.fixture
def server(redis_url: str) -> Iterator[ControlServer]:
    serving = ControlServer(redis_url, APP, {"files": "app.yaml"}).start()
    try:
        yield serving
    finally:
        serving.close()


def answered(server: ControlServer, reply: dict[str, object]) -> threading.Thread:
    """A thread answering the next request with ``reply`` (as the run loop would)."""

    def serve() -> None:
        requests: list[Request] = wait_until(server.take, 10, what="a request")
        server.answer(requests[0], {**reply, "op": requests[0].op})

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def test_a_request_reaches_the_serving_process_and_its_reply_comes_back(
    server: ControlServer, redis_url: str
) -> None:
    with ControlClient(redis_url, APP) as client:
        registration = client.registration()
        assert (registration.host, registration.details["files"]) == (
            socket.gethostname(),
            "app.yaml",
        )
        answering = answered(server, {"ok": True, "result": {"rows": [1, 2]}})
        assert client.call("results", {"query": "q"}, 10) == {"rows": [1, 2]}
        answering.join()
        refusing = answered(server, {"ok": False, "error": "unknown query 'nope'"})
        with pytest.raises(ControlError, match=r"^unknown query 'nope'$"):
            client.call("describe", {"kind": "ContinuousQuery", "name": "nope"}, 10)
        refusing.join()
    with redis.Redis.from_url(redis_url) as plain:
        assert plain.xlen(keys.control_requests(APP)) == 0  # taken and deleted


def test_an_app_that_does_not_answer_or_does_not_run_is_one_clear_error(
    server: ControlServer, redis_url: str
) -> None:
    silent = pytest.raises(ControlError, match=r"did not answer within 0\.3s")
    with ControlClient(redis_url, APP) as client, silent:
        client.call("list", {}, 0.3)
    absent = pytest.raises(NotRunningError, match=r"app 'nobody' on redis://.* is not running")
    with ControlClient(redis_url, "nobody") as client, absent:
        client.call("list", {}, 5)


def test_a_served_app_id_is_refused_to_a_second_server_and_freed_by_close(
    server: ControlServer, redis_url: str
) -> None:
    with pytest.raises(ConfigError, match=f"app '{APP}' is already running"):
        ControlServer(redis_url, APP, {}).start()
    server.close()
    with redis.Redis.from_url(redis_url) as plain:
        assert not plain.exists(keys.control(APP))
    again = ControlServer(redis_url, APP, {}).start()
    again.close()


def test_the_registration_of_a_dead_process_on_this_host_is_taken_over(redis_url: str) -> None:
    with redis.Redis.from_url(redis_url) as plain:
        fields = {"pid": "999999", "host": socket.gethostname(), "started_ms": "1"}
        plain.hset(keys.control(APP), mapping={**fields, "heartbeat_ms": "1"})
    taking = ControlServer(redis_url, APP, {}).start()
    try:
        with ControlClient(redis_url, APP) as client:
            assert client.registration().pid != 999999
    finally:
        taking.close()
