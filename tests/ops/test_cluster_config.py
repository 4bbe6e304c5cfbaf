"""``cluster.yaml`` passes the cluster launcher's own validation (what ``ray up`` runs first)."""

from __future__ import annotations

from pathlib import Path

import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

ROOT = Path(__file__).parent.parent.parent


def test_cluster_yaml_validates_with_ray_up_semantics() -> None:
    config = prepare_config(yaml.safe_load((ROOT / "cluster.yaml").read_text()))
    validate_config(config)
    assert config["provider"]["type"] == "local"
    assert "python -m pip install --quiet -e ~/drasi_ray" in config["setup_commands"]
    head_start = " ".join(config["head_start_ray_commands"])
    assert "--port=6380" in head_start  # Ray's GCS never collides with a Redis on 6379
    assert config["file_mounts"] == {"~/drasi_ray": ".", "~/.ray/auth_token": "~/.ray/auth_token"}
    starts = [*config["head_start_ray_commands"], *config["worker_start_ray_commands"]]
    for command in (c for c in starts if c.startswith(("ray start", "RAY_AUTH"))):
        assert command.startswith("RAY_AUTH_MODE=token ray start"), command  # token auth
    assert "--dashboard-host=127.0.0.1" in head_start  # the dashboard on loopback only
