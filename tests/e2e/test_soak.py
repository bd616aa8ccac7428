"""The soak (``make soak``, ``python -m bench.soak``): run for real at a tiny size so that
it cannot rot, and its verdict, which must fail on every loss it exists to find."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections import Counter

import pytest

from bench.soak.chaos import Outages, schedule
from bench.soak.options import parse_args
from bench.soak.report import VALKEY_GRACE, Report
from bench.soak.stack import valkey_options
from bench.soak.traffic import Answer
from deploy.config import load_stack
from tests.support.databases import Databases
from tests.support.processes import REPO_ROOT

# Seconds, small enough for CI: every part of the schedule happens once in ~8 s of sending.
TINY = [
    *("--deliveries", "40", "--kills", "2", "--workers", "2", "--duration", "8s"),
    *("--outage", "2s", "--valkey-down", "1s", "--restart-after", "0.5s"),
    # identity first: a tracking restarted while identity is away has no keys to verify
    # tokens with (it fetches identity's JWKS on first use), which a schedule this short
    # may hit by chance. SIGTERM: a tracking killed mid-request holds that run request's
    # idempotency claim for 5 min (the soak's own SIGKILL finds that).
    *("--away", "identity,tracking", "--stop-signal", "TERM", "--job-timeout", "2s"),
    *("--worker-env", "WORKER_LEASE_MARGIN=PT1S", "--worker-env", "WORKER_RETRY_DELAY=PT0.2S"),
    *("--worker-env", "WORKER_RETRY_MAX_DELAY=PT1S", "--drain-timeout", "60s"),
]


@pytest.mark.e2e
@pytest.mark.timeout(150)
def test_a_tiny_soak_runs_every_delivery_once_through_every_kind_of_kill(databases: Databases):
    done = subprocess.run(
        [sys.executable, "-m", "bench.soak", *TINY, "--database-url", databases.admin_url],
        cwd=REPO_ROOT,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=140,
        check=False,
    )
    report = done.stdout
    assert done.returncode == 0, report + done.stderr[-3000:]
    assert "result: PASS" in report
    assert "worker SIGKILLs:        2" in report
    assert "deliveries sent:        40" in report
    assert "processed exactly once: 40" in report
    # Valkey's outage was seen by the senders (a 503 each time, retried).
    assert "503: " in report, report
    for line in ("soak: Valkey killed", "soak: identity back", "soak: tracking back"):
        assert line in done.stderr


def answered(*statuses: int, at: float = 100.0) -> list[Answer]:
    return [Answer(status, at + n, 0.01) for n, status in enumerate(statuses)]


def outages(valkey: tuple[float, float] = (10.0, 13.0)) -> Outages:
    found = Outages()
    found.windows["valkey"] = [valkey]
    found.windows["tracking"] = [(20.0, 80.0)]
    return found


def test_the_report_counts_each_accepted_delivery_once_lost_or_duplicated():
    answers = {
        "once": answered(202),
        "retried": answered(503, 202, at=11.0),  # a 503 during Valkey's outage
        "lost": answered(202),
        "doubled": answered(202),
    }
    runs = {"once": 1, "retried": 1, "doubled": 3, "unasked": 1}
    report = Report.of(answers, Counter(runs), outages(), drained_at=95.0)
    assert (report.accepted, report.once, report.lost, report.duplicated) == (4, 2, 1, 1)
    assert (report.extra_runs, report.stray_runs, report.undocumented_5xx) == (2, 1, 0)
    assert report.drain_seconds == 15.0  # after tracking came back at 80
    assert report.failures == [
        "1 accepted deliveries lost",
        "1 deliveries run more than once",
    ]
    assert report.lines()[-1].startswith("result: FAIL: 1 accepted deliveries lost")


def test_a_5xx_other_than_valkeys_503_fails_the_soak():
    late = 13.0 + VALKEY_GRACE + 1  # Valkey back at 13 s, and more than the grace after
    answers = {
        "a": answered(503, 202, at=12.0),
        "b": answered(503, 202, at=late),
        "c": answered(502, 202, at=12.0),
    }
    report = Report.of(answers, {"a": 1, "b": 1, "c": 1}, outages(), drained_at=90.0)
    assert report.undocumented_5xx == 2
    assert report.failures == ["2 5xx answers other than Valkey's 503s"]


def test_a_delivery_never_accepted_or_a_queue_never_drained_fails_the_soak():
    answers = {"gave-up": answered(503, 0, 503, at=11.0), "refused": answered(401)}
    report = Report.of(answers, {}, outages(), drained_at=None)
    report.backlog = "1 jobs queued (due in +290 s to +290 s), 0 in progress"
    assert (report.never_accepted, report.rejected_4xx, report.lost) == (1, 1, 0)
    assert f"time to drain after the last outage ended: not drained: {report.backlog}" in (
        report.lines()
    )
    assert report.failures == [
        "1 deliveries never accepted",
        "1 deliveries refused with a 4xx",
        "the queue did not drain",
    ]


def test_an_execution_left_pending_by_a_drained_queue_fails_the_soak():
    """Its job was dropped after the run was requested: every delivery has its run."""
    answers = {str(n): answered(202) for n in range(3)}
    report = Report.of(answers, {str(n): 1 for n in range(3)}, outages(), drained_at=81.0)
    report.executions = Counter({"dispatched": 2, "pending": 1})
    assert report.lost == 0
    assert report.failures == ["1 trigger executions left pending by a drained queue"]


def test_a_clean_run_passes():
    answers = {str(n): answered(202) for n in range(5)}
    report = Report.of(answers, {str(n): 1 for n in range(5)}, outages(), drained_at=81.0)
    assert report.failures == []
    assert report.lines()[-1] == "result: PASS"


def test_the_full_schedule_is_security_md_at_full_size():
    args = parse_args([])
    steps = schedule(args)
    actions = Counter(step.action for step in steps)
    assert args.deliveries == 10_000
    assert actions == {
        "kill-worker": 100,
        "kill-valkey": 1,
        "restart-valkey": 1,
        "stop-tracking": 1,
        "start-tracking": 1,
        "stop-identity": 1,
        "start-identity": 1,
    }
    at = {step.action: step.at for step in steps if step.action != "kill-worker"}
    assert at["start-tracking"] - at["stop-tracking"] == 300
    assert at["start-identity"] - at["stop-identity"] == 300
    # One after the other, every outage within the sending.
    assert at["restart-valkey"] < at["stop-tracking"] < at["start-tracking"]
    assert at["start-tracking"] < at["stop-identity"] < at["start-identity"] < args.duration
    kills = [step.at for step in steps if step.action == "kill-worker"]
    assert min(kills) >= 0
    assert max(kills) < args.duration


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--outage", "5 minutes"], "not a duration"),
        (["--away", "tracking,webhooks"], "not tracking,identity"),
        (["--worker-env", "retry=1"], "not NAME=VALUE"),
        (["--outage", "60s", "--duration", "100s"], "--duration must leave"),
        (["--database-url", "sqlite:///x.db"], "must name a PostgreSQL server"),
    ],
)
def test_bad_options_are_refused_with_a_usage_error(flags, message, capsys):
    with pytest.raises(SystemExit) as exited:
        parse_args(flags)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("appendfsync", ["always", "everysec"])
def test_the_soaks_valkey_fsyncs_as_the_stack_file_says(appendfsync):
    stack = dataclasses.replace(load_stack(), valkey_appendfsync=appendfsync)
    options = valkey_options(stack)
    assert options[options.index("--appendfsync") + 1] == appendfsync
    assert "--appendonly" in options
