"""The device authorization flow end to end, through the gateway of the real stack.

A CLI authorizes, polls (pending), a user verifies in the "browser", the CLI polls again
and gets a token, uses it on tracking; the user locks the device, and tracking refuses the
token from then on.
"""

from __future__ import annotations

import re
import secrets
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.processes import LaunchedStack, stack_for_tests
from tests.support.zenml_env import (
    SNIPPET_PRELUDE,
    ZenmlEnvError,
    client_environment,
    client_venv,
    run_snippet,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

ADMIN_PASSWORD = f"E2e-{secrets.token_urlsafe(12)}"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, databases_of_stack: dict[str, str]
) -> Iterator[LaunchedStack]:
    with stack_for_tests(
        tmp_path_factory,
        "device-flow",
        admin_password=ADMIN_PASSWORD,
        databases=databases_of_stack,
    ) as up:
        yield up


def test_device_flow_token_works_on_tracking_until_the_device_is_locked(stack: LaunchedStack):
    def url(path: str) -> str:
        return stack.url("platform", path)

    with (
        httpx.Client(timeout=10.0, trust_env=False) as cli,
        httpx.Client(timeout=10.0, trust_env=False) as browser,
    ):
        client_id = str(uuid.uuid4())
        authorized = cli.post(
            url("/api/v1/device_authorization"),
            data={"client_id": client_id},
            headers={"User-Agent": "Host/e2e ZenML/0.96.3 Python/3.11 OS/Linux"},
        )
        assert authorized.status_code == 200, authorized.text
        flow = authorized.json()
        poll = {
            "grant_type": DEVICE_GRANT,
            "client_id": client_id,
            "device_code": flow["device_code"],
        }

        pending = cli.post(url("/api/v1/login"), data=poll)
        assert pending.status_code == 400
        assert pending.json()["error"] == "authorization_pending"

        login = browser.post(
            url("/api/v1/login"), data={"username": "default", "password": ADMIN_PASSWORD}
        )
        assert login.status_code == 200, login.text
        browser.cookies.clear()
        user = {"Authorization": f"Bearer {login.json()['access_token']}"}
        device_id = httpx.URL(flow["verification_uri_complete"]).params["device_id"]
        verified = browser.put(
            url(f"/api/v1/devices/{device_id}/verify"),
            json={"user_code": flow["user_code"], "trusted_device": False},
            headers=user,
        )
        assert verified.status_code == 200, verified.text

        time.sleep(flow["interval"] + 0.2)
        redeemed = cli.post(url("/api/v1/login"), data=poll)
        assert redeemed.status_code == 200, redeemed.text
        assert redeemed.json()["device_id"] == device_id
        device = {"Authorization": f"Bearer {redeemed.json()['access_token']}"}

        projects = cli.get(url("/api/v1/projects"), headers=device)
        assert projects.status_code == 200, projects.text

        locked = browser.put(
            url(f"/api/v1/devices/{device_id}"), json={"locked": True}, headers=user
        )
        assert locked.status_code == 200, locked.text
        refused = cli.get(url("/api/v1/projects"), headers=device)
        assert refused.status_code == 401
        assert refused.json()["detail"][0] == "CredentialsNotValid"


# The zenml client's own device login (what `zenml login <url>` runs), unmodified.
WEB_LOGIN = """
import zenml.cli  # web_login imports the CLI, which imports web_login: load the CLI first
from zenml.login.web_login import web_login

token = web_login(url=STORE_URL)
emit({"access_token": token.access_token, "device_id": str(token.device_id)})
"""

# Then the client works with the stored device token alone (no username or password).
USE_STORED_TOKEN = """
from zenml.client import Client

client = Client()
emit({"user": client.active_user.name, "artifacts": client.list_artifacts().total})
"""

VERIFY_URL = re.compile(r"device_id=([0-9a-f-]{36})&user_code=([0-9a-f]{32})")


def _admin_headers(stack: LaunchedStack) -> dict[str, str]:
    with httpx.Client(timeout=10.0, trust_env=False) as http:
        login = http.post(
            stack.url("platform", "/api/v1/login"),
            data={"username": "default", "password": ADMIN_PASSWORD},
        )
    assert login.status_code == 200, login.text
    return {"Authorization": f"Bearer {login.json()['access_token']}"}


def _read_verification_url(process: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    """The device id and user code the client printed for its user to open."""
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        match = VERIFY_URL.search(line)
        if match:
            return match.group(1), match.group(2)
    process.kill()
    raise AssertionError("the client printed no verification URL:\n" + "".join(seen))


def test_the_zenml_client_logs_in_with_the_device_flow(
    stack: LaunchedStack, tmp_path: Path
) -> None:
    try:
        zenml = client_venv()
    except ZenmlEnvError as exc:
        pytest.fail(f"zenml client environment: {exc}", pytrace=False)
    store_url = stack.url("platform", "")
    env = client_environment(store_url=store_url, username="", password="", config_dir=tmp_path)
    for name in ("ZENML_STORE_USERNAME", "ZENML_STORE_PASSWORD"):
        env.pop(name)
    # No browser to open, and a console wide enough that the URL is printed on one line.
    env.update({"BROWSER": "true", "COLUMNS": "400"})
    script = tmp_path / "web_login.py"
    script.write_text(SNIPPET_PRELUDE + f"STORE_URL = {store_url!r}\n" + WEB_LOGIN)
    process = subprocess.Popen(
        [str(zenml.python), str(script)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        device_id, user_code = _read_verification_url(process, timeout=120)
        with httpx.Client(timeout=10.0, trust_env=False) as browser:
            verified = browser.put(
                stack.url("platform", f"/api/v1/devices/{device_id}/verify"),
                json={"user_code": user_code, "trusted_device": True},
                headers=_admin_headers(stack),
            )
        assert verified.status_code == 200, verified.text
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, output
    assert f'"device_id": "{device_id}"' in output

    used = run_snippet(zenml.python, USE_STORED_TOKEN, env=env, cwd=tmp_path, timeout=120)
    assert used.returncode == 0, used.output_tail()
    assert used.value["user"] == "default"
