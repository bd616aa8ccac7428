"""The unmodified kitaru 0.27.2 client (CLI and SDK) against our agent-run entrypoint.

The client runs in its own cached environment (``kitaru[cli]==0.27.2``, built once under
``.local/cache/`` with :func:`tests.support.zenml_env.ensure_venv`). Through the gateway's
agent port it logs in with a password and with an API key read from stdin, runs
``kitaru status``, and through its SDK manages users, service accounts, API keys and a
worker; every result is checked here.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import LaunchedStack, StackStartError, launch_stack
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
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LaunchedStack]:
    data_dir = tmp_path_factory.mktemp("kitaru-stack")
    try:
        with launch_stack(
            data_dir,
            admin_password=PASSWORD,
            extra_env={"SERVER_DEFAULT_ACCOUNT_PASSWORD": PASSWORD},
        ) as running:
            yield running
    except StackStartError as exc:
        pytest.fail(f"our stack did not start: {exc}", pytrace=False)


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
    assert key["key"].startswith("SVCKEY_")
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

    # The CLI logs in with an API key from stdin (it checks the key with the api-key grant).
    # kitaru 0.27.2 re-reads a stored key as a bearer only when it starts with KITKEY_; ours
    # start with SVCKEY_, so `status` then uses the key through KITARU_API_KEY, which the CLI
    # documents as taking precedence over stored credentials.
    key_env = environment(tmp_path / "key")
    login_out = cli(kitaru_client, ["login", url, "--api-key-stdin"], key_env,
                    stdin=steps["fresh key"] + "\n")  # fmt: skip
    assert steps["fresh key"] not in json.dumps(login_out)
    status = cli(kitaru_client, ["status"], {**key_env, "KITARU_API_KEY": steps["fresh key"]})
    assert status.get("item", status)["authentication"] == "authenticated", status
