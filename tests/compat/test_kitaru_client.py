"""The unmodified kitaru 0.27.2 client (CLI and SDK) against our agent-run entrypoint.

The client runs in its own cached environment (``kitaru[cli]==0.27.2``, built once under
the user's cache with :func:`tests.support.zenml_env.ensure_venv`). Through the gateway's
agent port it logs in with a password and with an API key read from stdin, runs
``kitaru status`` with each stored credential, and through its SDK manages users, service
accounts, API keys and a worker and walks the task and session lists with kitaru's own
list params (``kitaru session list`` too); every result is checked here. The interactive
device login runs the CLI under a pty (``script``), approves the device through the API,
and checks what the CLI stored and that its device session works until the device is
locked.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.processes import LaunchedStack, stack_for_tests
from tests.support.terminal import read_until
from tests.support.zenml_env import (
    OFFLINE_PROXY,
    ZenmlEnvError,
    ZenmlVenv,
    ensure_venv,
    run_snippet,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

KITARU = "kitaru[cli]==0.27.2"
SCENARIO = Path(__file__).with_name("kitaru_scenario.py")
PASSWORD = f"Compat-{secrets.token_urlsafe(12)}"


@pytest.fixture(scope="module")
def kitaru_client() -> ZenmlVenv:
    try:
        return ensure_venv("kitaru-client-0.27.2", KITARU)
    except ZenmlEnvError as exc:
        pytest.fail(f"kitaru client environment: {exc}", pytrace=False)


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, databases_of_stack: dict[str, str]
) -> Iterator[LaunchedStack]:
    with stack_for_tests(
        tmp_path_factory,
        "kitaru-stack",
        admin_password=PASSWORD,
        databases=databases_of_stack,
        # A 1 s poll interval keeps the device login under the pty fast.
        extra_env={
            "SERVER_DEFAULT_ACCOUNT_PASSWORD": PASSWORD,
            "SERVER_DEVICE_AUTH_POLLING_INTERVAL_SECONDS": "1",
        },
    ) as up:
        yield up


def environment(workdir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    home = workdir / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "HOME": str(home),
        "TMPDIR": str(workdir),
        "PYTHONNOUSERSITE": "1",
        "KITARU_CONFIG_DIR": str(workdir / "config"),
        "KITARU_DISABLE_CLIENT_ANALYTICS": "1",
        "KITARU_NON_INTERACTIVE": "1",
        "HTTP_PROXY": OFFLINE_PROXY,
        "HTTPS_PROXY": OFFLINE_PROXY,
        "NO_PROXY": "127.0.0.1,localhost",
    }
    env.update(extra or {})
    return env


def cli(client: ZenmlVenv, args: list[str], env: dict[str, str], stdin: str = "") -> Any:
    done = subprocess.run(
        [str(client.path / "bin" / "kitaru"), "-o", "json", *args],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"kitaru {args[0]} failed:\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout)


def test_kitaru_client_against_our_agent_entrypoint(
    kitaru_client: ZenmlVenv, stack: LaunchedStack, tmp_path: Path
):
    url = stack.url("agent", "")
    env = environment(tmp_path)

    logged_in = cli(kitaru_client, ["login", url, "--username", "default", "--password-stdin"],
                    env, stdin=PASSWORD + "\n")  # fmt: skip
    assert json.dumps(logged_in)  # a JSON result, exit 0
    status = cli(kitaru_client, ["status"], env)
    item = status.get("item", status)
    assert item["authentication"] == "authenticated"
    assert item["server"]["version"] == "0.27.2"
    assert item["server"]["auth_scheme"] == "local"

    try:
        result = run_snippet(
            kitaru_client.python,
            SCENARIO.read_text(),
            env=environment(tmp_path / "sdk", {"AGENT_URL": url, "ADMIN_PASSWORD": PASSWORD}),
            cwd=tmp_path,
            timeout=300,
            filename=SCENARIO.name,
        )
    except ZenmlEnvError as exc:
        pytest.fail(f"the SDK scenario did not report: {exc}", pytrace=False)
    steps = result.value
    assert "error" not in steps, steps

    created = steps["create user"]
    assert created["active"] is False
    assert len(created["activation_token"]) == 64
    assert steps["activate"]["active"] is True
    assert steps["login as activated user"] is True
    deactivated = steps["deactivate"]
    assert deactivated["active"] is False
    assert len(deactivated["activation_token"]) == 64
    assert steps["deactivated user login"] == 401
    service = steps["create service account"]
    assert service["is_service_account"] is True
    assert service["active"] is True

    key = steps["create api key"]
    assert key["key"].startswith("KITKEY_")
    rotated = steps["rotate api key"]
    assert rotated["key"] != key["key"]
    assert rotated["last_rotated"] is not None
    assert steps["old key within retain window"] == "default"
    assert steps["deactivate api key"]["active"] is False
    assert steps["deactivated key"] == 401
    names = steps["list accounts"]
    assert {"default", created["name"], service["name"]} <= set(names)

    worker = steps["register worker"]
    assert worker["token"]
    assert worker["worker"]["name"] == "compat-worker"
    assert steps["renew worker token"]["token"] != worker["token"]
    assert steps["worker token on renew route"] == 403

    # Lists, with the SDK's own list params: pages of 2 follow the cursor, newest first
    # (or oldest first when asked), filters narrow, include_payloads adds the data.
    tasks = steps["created tasks"]
    assert steps["task pages"] == [tasks[::-1][:2], tasks[::-1][2:]]
    assert steps["task pages ascending"] == [tasks[:2], tasks[2:]]
    assert steps["sdk task list"] == {"items": [], "next_cursor": None}
    assert steps["sdk typed tasks"] == [[t, t, "abort", {}] for t in tasks[::-1]]
    assert steps["task list bad cursor"] == 422
    sessions = steps["created sessions"]
    assert steps["session pages"] == [sessions[::-1][:2], sessions[::-1][2:]]
    assert steps["session payloads"] == [{}, {}, {}]
    # `kitaru session list` sends its filter, size and cursor; a bad cursor is refused.
    nothing = json.dumps({"field": "name", "op": "eq", "value": f"none-{secrets.token_hex(4)}"})
    listed = cli(kitaru_client, ["session", "list", "--size", "1", "--filter", nothing], env)
    assert listed["items"] == [], listed
    assert listed["page"]["next_cursor"] is None, listed
    refused = subprocess.run(
        [str(kitaru_client.path / "bin" / "kitaru"), "-o", "json", "session", "list",
         "--cursor", "not-a-cursor"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "cursor" in json.loads(refused.stderr)["error"]["message"], refused.stderr

    # The CLI logs in with an API key from stdin (it checks the key with the api-key grant)
    # and stores it; later commands send the stored key as their bearer, which kitaru
    # 0.27.2 does only for a key starting with KITKEY_ (any other, it says ok, then 401s).
    fresh = steps["fresh key"]
    key_env = environment(tmp_path / "key")
    login_out = cli(kitaru_client, ["login", url, "--api-key-stdin"], key_env, stdin=fresh + "\n")
    assert fresh not in json.dumps(login_out)
    [entry] = json.loads((tmp_path / "key" / "config" / "credentials.json").read_text()).values()
    assert entry["api_key"] == fresh
    status = cli(kitaru_client, ["status"], key_env)
    assert status.get("item", status)["authentication"] == "authenticated", status


def test_kitaru_doctor_finds_our_agent_entrypoint_healthy(
    kitaru_client: ZenmlVenv, stack: LaunchedStack, tmp_path: Path
):
    """``kitaru doctor`` probes /health/live and /health, reads /api/v1/info and lists
    workers with the stored credential: every required check passes."""
    url = stack.url("agent", "")
    env = environment(tmp_path)
    cli(kitaru_client, ["login", url, "--username", "default", "--password-stdin"], env,
        stdin=PASSWORD + "\n")  # fmt: skip
    report = cli(kitaru_client, ["doctor"], env)
    item = report.get("item", report)
    checks = {check["name"]: check for check in item["checks"]}
    for name in ("liveness", "readiness", "server_info", "authentication"):
        assert checks[name]["status"] == "pass", checks[name]
    assert item["healthy"] is True, item


VERIFICATION = re.compile(r"device_id=([0-9a-f-]{36})&user_code=([A-Z0-9]{4}-[A-Z0-9]{4})")


def test_kitaru_cli_device_login_under_a_pty(
    kitaru_client: ZenmlVenv, stack: LaunchedStack, tmp_path: Path
):
    url = stack.url("agent", "")
    env = environment(tmp_path)
    env.pop("KITARU_NON_INTERACTIVE")
    admin_token = httpx.post(
        f"{url}/api/v1/login",
        data={"grant_type": "password", "username": "default", "password": PASSWORD},
        timeout=30,
    ).json()["access_token"]
    admin = {"Authorization": f"Bearer {admin_token}"}
    # Text output: the JSON modes are non-interactive by definition.
    command = shlex.join([str(kitaru_client.path / "bin" / "kitaru"), "--no-browser", "login", url])
    started = time.monotonic()
    process = subprocess.Popen(
        ["script", "-qfec", command, "/dev/null"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        shown = read_until(process, VERIFICATION, timeout=60)
        match = VERIFICATION.search(shown)
        assert match is not None
        device_id, user_code = match.groups()
        assert f"{url}/devices/verify?" in shown
        approved = httpx.post(
            f"{url}/api/v1/devices/{device_id}/verify",
            json={"user_code": user_code, "trusted": False},
            headers=admin,
            timeout=30,
        )
        assert approved.status_code == 200, approved.text
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        assert process.stdout is not None
        process.stdout.close()
    assert process.returncode == 0, shown + output.decode(errors="replace")
    assert time.monotonic() - started < 30  # the 1 s poll interval, not the default 5 s

    # The CLI keeps the device id and code (its refresh credential) and a session token.
    stored = json.loads((tmp_path / "config" / "credentials.json").read_text())
    [entry] = stored.values()
    assert entry["device_id"] == device_id
    assert re.fullmatch(r"[0-9a-f]{64}", entry["device_code"])
    assert entry["api_token"]["access_token"]
    device = httpx.get(f"{url}/api/v1/devices/{device_id}", headers=admin, timeout=30).json()
    assert device["status"] == "active"
    assert device["client_version"] == "0.27.2"

    non_interactive = {**env, "KITARU_NON_INTERACTIVE": "1"}
    status = cli(kitaru_client, ["status"], non_interactive)
    assert status.get("item", status)["authentication"] == "authenticated", status

    # Locking the device ends its session and its refresh.
    locked = httpx.patch(f"{url}/api/v1/devices/{device_id}", json={"locked": True},
                         headers=admin, timeout=30)  # fmt: skip
    assert locked.status_code == 200
    refused = httpx.get(
        f"{url}/api/v1/accounts/me",
        headers={"Authorization": f"Bearer {entry['api_token']['access_token']}"},
        timeout=30,
    )
    assert refused.status_code == 401
    done = subprocess.run(
        [str(kitaru_client.path / "bin" / "kitaru"), "-o", "json", "status"],
        env=non_interactive, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    # The CLI finds its token refused, tries its device code, and is told the device is locked.
    assert done.returncode != 0
    result = json.loads(done.stderr)
    assert result["ok"] is False
    assert result["error"]["message"] == "Device is locked"
