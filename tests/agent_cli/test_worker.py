"""``agent-run worker start`` against the real service: it registers with the API key,
runs each claimed task's command with the task token (and never the key), reports how it
ended, renews its token before expiry and after a 401, and drains on SIGTERM."""

from __future__ import annotations

import json
import queue
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from tests.agent_cli.conftest import (
    AGENT_RUN,
    admin_headers,
    cli_environment,
    new_api_key,
    run_cli,
    service_env,
)
from tests.support.processes import RunningService, run_service

PRINT_ENV = f"{sys.executable} -c 'import json, os; print(json.dumps(dict(os.environ)))'"


class WorkerProcess:
    """``agent-run -o json worker start`` and the JSON events it prints, as they come."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.process = subprocess.Popen(
            [AGENT_RUN, "-o", "json", "worker", "start", "--poll-interval", "0.1",
             "--heartbeat-interval", "0.5", *args],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.events: list[dict[str, Any]] = []
        self._lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(json.loads(line))
        self._lines.put(None)

    def wait_for(
        self, event: str, timeout: float = 30.0, *, nth: int = 1, **fields: Any
    ) -> dict[str, Any]:
        """The ``nth`` event named ``event`` with ``fields`` (seen before or to come)."""

        def matches(item: dict[str, Any]) -> bool:
            return item["event"] == event and fields.items() <= item.items()

        found = [seen for seen in self.events if matches(seen)]
        deadline = time.monotonic() + timeout
        while len(found) < nth and (left := deadline - time.monotonic()) > 0:
            try:
                item = self._lines.get(timeout=left)
            except queue.Empty:
                break
            if item is None:
                break
            self.events.append(item)
            if matches(item):
                found.append(item)
        if len(found) < nth:
            pytest.fail(f"no {event} {fields} event #{nth}; saw {self.events}\n{self.stderr()}")
        return found[nth - 1]

    def stop(self, timeout: float = 30.0) -> int:
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=timeout)
        self.wait_for("exit")
        return code

    def stderr(self) -> str:
        if self.process.poll() is None:
            return ""
        assert self.process.stderr is not None
        return self.process.stderr.read()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout=10)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def start_worker() -> Iterator[Any]:
    started: list[WorkerProcess] = []

    def start(env: dict[str, str], *args: str) -> WorkerProcess:
        started.append(WorkerProcess(env, *args))
        return started[-1]

    yield start
    for worker in started:
        worker.close()


def keyed_env(url: str, tmp_path: Path) -> dict[str, str]:
    """A worker's environment: the server and a fresh API key."""
    return cli_environment(tmp_path, SERVICE_API_URL=url, SERVICE_API_KEY=new_api_key(url))


def create_task(url: str, headers: dict[str, str], command: str, **extra: Any) -> str:
    body = {"kind": "agent", "timeout_seconds": 60, "run": {"command": command}, **extra}
    response = httpx.post(f"{url}/api/v1/tasks", json=body, headers=headers, timeout=30)
    assert response.status_code == 201, response.text
    task_id: str = response.json()["id"]
    return task_id


def settled(url: str, headers: dict[str, str], task_id: str, timeout: float = 30) -> Any:
    """The task once it is no longer pending, claimed or running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = httpx.get(f"{url}/api/v1/tasks/{task_id}", headers=headers, timeout=30).json()
        if task["status"] not in ("pending", "claimed", "running"):
            return task
        time.sleep(0.1)
    pytest.fail(f"task {task_id} did not settle: {task}", pytrace=False)


def test_task_command_gets_the_task_token_and_never_the_api_key(
    service: RunningService, tmp_path: Path, start_worker
):
    admin = admin_headers(service.url)
    key = new_api_key(service.url)
    run = {"command": PRINT_ENV, "env": {"TASK_VAR": "from the task"}}
    task_id = create_task(service.url, admin, PRINT_ENV, run=run)
    env = cli_environment(
        tmp_path,
        SERVICE_API_URL=service.url,
        SERVICE_API_KEY=key,
        SERVICE_API_TOKEN="the-worker's-own-token",
        SERVICE_TASK_ID="stale",
    )
    worker = start_worker(env)

    task = settled(service.url, admin, task_id)
    assert task["status"] == "completed", task
    assert task["result"]["exit_code"] == 0
    seen = json.loads(task["result"]["stdout"])
    token = seen["SERVICE_API_TOKEN"]
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["sub"] == f"task:{task_id}"
    assert {k for k in seen if k.upper() == "SERVICE_API_KEY"} == set()
    assert not any(key in value for value in seen.values())
    assert seen["SERVICE_TASK_ID"] == task_id
    assert seen["SERVICE_API_URL"] == service.url
    assert seen["TASK_VAR"] == "from the task"
    assert seen["HOME"] == env["HOME"]  # the rest of the worker's environment is kept
    as_task = httpx.get(f"{service.url}/api/v1/tasks/{task_id}",
                        headers={"Authorization": f"Bearer {token}"}, timeout=30)  # fmt: skip
    assert as_task.status_code == 200

    registered = worker.wait_for("registered")
    worker.wait_for("finished", task_id=task_id, status="completed", exit_code=0)
    assert worker.stop() == 0
    with_key = {k: v for k, v in env.items() if k != "SERVICE_API_TOKEN"}
    listed = run_cli(["-o", "json", "worker", "list"], with_key).json()
    assert registered["worker_id"] in [w["id"] for w in listed]


def test_failures_timeouts_and_results_are_reported(
    service: RunningService, tmp_path: Path, start_worker
):
    admin = admin_headers(service.url)
    env = keyed_env(service.url, tmp_path)
    failing = create_task(service.url, admin, "echo oops >&2; exit 3")
    slow = create_task(service.url, admin, "sleep 30", timeout_seconds=1)
    into_result = """ > "$SERVICE_TASK_RESULT_PATH" """
    valued = create_task(service.url, admin, """echo '{"answer": 42}'""" + into_result)
    bad_value = create_task(service.url, admin, "echo 'nope'" + into_result)
    absent = {"command": "true", "working_dir": str(tmp_path / "absent")}
    missing_dir = create_task(service.url, admin, "true", run=absent)
    evaluator = httpx.post(
        f"{service.url}/api/v1/tasks", json={"kind": "evaluator", "timeout_seconds": 60},
        headers=admin, timeout=30,
    ).json()["id"]  # fmt: skip
    worker = start_worker(env, "--claim", "agent", "--claim", "evaluator", "--concurrency", "6")

    started = time.monotonic()
    failed = settled(service.url, admin, failing)
    assert (failed["status"], failed["error"]) == ("failed", "the command exited with code 3")
    assert failed["result"]["stderr"] == "oops\n"
    timed_out = settled(service.url, admin, slow)
    assert timed_out["status"] == "timed_out"
    assert timed_out["error"] == "the command ran longer than 1 seconds"
    assert time.monotonic() - started < 20
    assert settled(service.url, admin, valued)["result"]["value"] == {"answer": 42}
    invalid = settled(service.url, admin, bad_value)
    assert (invalid["status"], invalid["error"]) == (
        "failed", "the command wrote a result that is not valid JSON",
    )  # fmt: skip
    not_started = settled(service.url, admin, missing_dir)
    assert not_started["status"] == "failed"
    assert not_started["error"].startswith("the command could not start")
    refused = settled(service.url, admin, evaluator)
    assert refused["error"] == "this worker runs only tasks that carry a command"
    assert worker.stop() == 0


def test_sigterm_drains_the_running_task_and_claims_no_more(
    service: RunningService, tmp_path: Path, start_worker
):
    admin = admin_headers(service.url)
    env = keyed_env(service.url, tmp_path)
    running = create_task(service.url, admin, "sleep 2; echo finished")
    worker = start_worker(env)
    worker.wait_for("claimed", task_id=running)

    worker.process.send_signal(signal.SIGTERM)
    worker.wait_for("draining")
    later = create_task(service.url, admin, "echo never")
    assert worker.process.wait(timeout=30) == 0
    worker.wait_for("stopped", tasks=1)

    done = settled(service.url, admin, running)
    assert (done["status"], done["result"]["stdout"]) == ("completed", "finished\n")
    pending = httpx.get(f"{service.url}/api/v1/tasks/{later}", headers=admin, timeout=30)
    assert pending.json()["status"] == "pending"


def test_a_second_sigterm_stops_the_running_task_and_fails_it(
    service: RunningService, tmp_path: Path, start_worker
):
    admin = admin_headers(service.url)
    env = keyed_env(service.url, tmp_path)
    running = create_task(service.url, admin, "sleep 60")
    worker = start_worker(env)
    worker.wait_for("claimed", task_id=running)
    deadline = time.monotonic() + 30
    while httpx.get(f"{service.url}/api/v1/tasks/{running}", headers=admin,
                    timeout=30).json()["status"] != "running":  # fmt: skip
        assert time.monotonic() < deadline
        time.sleep(0.1)

    worker.process.send_signal(signal.SIGTERM)
    worker.wait_for("draining")
    worker.process.send_signal(signal.SIGTERM)
    assert worker.process.wait(timeout=30) == 0

    stopped = settled(service.url, admin, running)
    assert (stopped["status"], stopped["error"]) == (
        "failed", "the worker stopped before the command finished",
    )  # fmt: skip


def test_a_worker_without_an_api_key_exits_3(service: RunningService, tmp_path: Path):
    env = cli_environment(tmp_path, SERVICE_API_URL=service.url)

    done = run_cli(["-o", "json", "worker", "start"], env)

    assert done.returncode == 3
    assert done.error()["message"].startswith("a worker needs an API key")


def test_worker_token_is_renewed_before_it_expires(
    tmp_path: Path, database_url: str, redis_url: str, start_worker
):
    env = service_env(database_url, redis_url, SERVICE_WORKER_TOKEN_LIFETIME="PT3S")
    with run_service("agent_accounts", env, tmp_path / "service.log") as running:
        worker = start_worker(keyed_env(running.url, tmp_path))
        registered = worker.wait_for("registered")
        renewed = worker.wait_for("token_renewed", reason="expiry", timeout=15)
        again = worker.wait_for("token_renewed", reason="expiry", timeout=15, nth=2)
        assert again["expires_at"] > renewed["expires_at"]
        # The worker goes on claiming and running tasks.
        admin = admin_headers(running.url)
        task = settled(running.url, admin, create_task(running.url, admin, "echo renewed"))
        assert task["result"]["stdout"] == "renewed\n"
        assert registered["worker_id"] == task["worker_id"]
        assert worker.stop() == 0


def test_worker_token_refused_with_a_401_is_renewed_with_the_key(
    tmp_path: Path, database_url: str, redis_url: str, start_worker
):
    # A one-hour token: nothing but the 401 can make the worker renew it here.
    base = service_env(database_url, redis_url)
    log = tmp_path / "service.log"
    with run_service("agent_accounts", base, log) as first:
        worker = start_worker(keyed_env(first.url, tmp_path))
        worker.wait_for("registered")
    port = int(first.url.rsplit(":", 1)[1])
    # The same database under a new signing key: the worker's token is now refused.
    restarted = {**base, "SERVICE_JWT_SIGNING_KEYS": secrets.token_urlsafe(32)}
    with run_service("agent_accounts", restarted, log, port=port) as second:
        worker.wait_for("token_renewed", reason="401", timeout=60)
        admin = admin_headers(second.url)
        task = settled(second.url, admin, create_task(second.url, admin, "echo after"))
        assert task["result"]["stdout"] == "after\n"
        assert worker.stop() == 0


def test_a_revoked_api_key_stops_the_worker_with_exit_3(
    service: RunningService, tmp_path: Path, start_worker
):
    admin = admin_headers(service.url)
    issued = httpx.post(f"{service.url}/api/v1/api-keys", json={"name": "revoked-worker"},
                        headers=admin, timeout=30).json()  # fmt: skip
    env = cli_environment(tmp_path, SERVICE_API_URL=service.url, SERVICE_API_KEY=issued["key"])
    worker = start_worker(env)
    worker.wait_for("registered")

    revoked = httpx.patch(f"{service.url}/api/v1/api-keys/{issued['id']}",
                          json={"active": False}, headers=admin, timeout=30)  # fmt: skip
    assert revoked.status_code == 200
    assert worker.process.wait(timeout=30) == 3
    assert json.loads(worker.stderr())["error"] == {"message": "Invalid API key.", "code": "AUTH"}
