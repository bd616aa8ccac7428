"""The device authorization flow end to end, through the gateway of the real stack.

A CLI authorizes, polls (pending), a user verifies in the "browser", the CLI polls again
and gets a token, uses it on tracking; the user locks the device, and tracking refuses the
token from then on.
"""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.support.processes import LaunchedStack, StackStartError, launch_stack

pytestmark = pytest.mark.e2e

ADMIN_PASSWORD = f"E2e-{secrets.token_urlsafe(12)}"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LaunchedStack]:
    try:
        with launch_stack(
            tmp_path_factory.mktemp("device-flow"), admin_password=ADMIN_PASSWORD
        ) as running:
            yield running
    except StackStartError as exc:
        pytest.fail(str(exc), pytrace=False)


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
