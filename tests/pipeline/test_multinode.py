"""A real multi-node Ray cluster on this machine (three nodes, each with its own CPUs and a
custom resource): actors dealt over the nodes by the placement rule, results identical to one
node, and a node ended mid-stream (its raylet killed) recovered with nothing lost and nothing
applied twice, its actors restarted over the nodes left by the same rule. The cluster runs in
a process of its own (drasi_ray.testing.multinode), apart from the session's Ray."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_three_nodes_place_by_rule_match_one_node_and_survive_a_lost_node(redis_url: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "drasi_ray.testing.multinode", "--redis-url", redis_url],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no report (exit {done.returncode}):\n{done.stderr[-3000:]}"
    report = json.loads(lines[-1])
    summary = json.dumps(report, indent=1)
    # The plan is the rule's, and every actor runs where the plan puts it (placement.py).
    assert report["planned"] == report["expected_placement"], summary
    assert report["off_plan"] == [], summary
    assert report["moved"] and report["lost_node"] not in report["moved"].values(), summary
    # The lost node's actors are restarted where the rule deals them over the nodes left
    # (placement.fallback_order): spread over both, not piled on the head.
    assert report["moved"] == report["expected_moved"], summary
    assert len(set(report["moved"].values())) == 2, summary
    assert report["mismatched_vs_one_node"] == 0, summary
    assert report["mismatched_vs_in_order"] == 0, summary
    assert report["store_mismatches"] == 0, summary
    assert report["pending"] == 0, summary
    assert report["results_before_loss"] and report["results_after_restart"], summary
    assert report["sequences_increasing"], summary
    assert report["passed"] and done.returncode == 0, summary
