"""``bench/webhooks.py`` without wrk: its ``--appendfsync`` option, the policy it sets on a
real Valkey, and the shares it prints."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench import webhooks
from bench.tracking import Target
from tests.support.processes import LaunchedStack
from tests.support.redis_server import RestartableValkey


def test_appendfsync_names_the_policies_in_the_order_given():
    assert webhooks.parse_args([]).appendfsync == []
    args = webhooks.parse_args(["--appendfsync", "everysec, always"])
    assert args.appendfsync == ["everysec", "always"]


@pytest.mark.parametrize("policies", ["sometimes", "always,always", ","])
def test_a_bad_appendfsync_is_one_usage_error(policies: str, capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exited:
        webhooks.parse_args(["--appendfsync", policies])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--appendfsync" in err
    assert "Traceback" not in err


def test_ours_reads_and_sets_its_valkeys_policy(tmp_path: Path):
    with RestartableValkey(tmp_path, "--appendonly", "yes", "--appendfsync", "everysec") as valkey:
        log = tmp_path / "stack.log"
        log.write_text(f"[stack] valkey is ready at {valkey.url}\n")
        launched = LaunchedStack(subprocess.Popen(["true"]), tmp_path, log, ports={}, children={})
        launched.process.wait()
        target = Target("ours", "http://127.0.0.1:1", "token", "project", "stack")
        running = webhooks.Ours(target, "/path", launched)
        assert running.appendfsync() == "everysec"
        assert running.appendfsync("always") == "always"
        assert running.appendfsync() == "always"


def _measured(name: str, *rates: tuple[int, float]) -> webhooks.Measured:
    runs = [webhooks.Run(requests, 1.0, 0, 0, 1.0, p99, 0.0) for requests, p99 in rates]
    return webhooks.Measured(name, "stack", runs)


def test_policy_shares_compare_each_lane_with_the_first_policys_round_by_round():
    results = [
        _measured("ours, worker paused (everysec)", (1000, 4.0), (800, 5.0), (1200, 6.0)),
        _measured("ours, worker paused (always)", (900, 7.0), (800, 8.0), (600, 9.0)),
        _measured("ours (everysec)", (500, 1.0)),
    ]
    text = webhooks.format_policy_shares(results, ["everysec", "always"])
    # The rounds' ratios are 90%, 100% and 50%: their median, not the medians' 80%.
    assert text == (
        "ours, worker paused: appendfsync always accepted 90% of everysec's per second, "
        "p99 8.0 ms against 5.0 ms"
    )
