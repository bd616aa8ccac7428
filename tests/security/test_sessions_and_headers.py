"""Attacks on sessions and on the client address, against the real stack (one launcher,
both entrypoints).

- A password change on the agent-run server ends every other session of the account
  (password, API-key and device logins, worker tokens), on every route family; the
  session that made the change goes on. An admin's reset (deactivate, activate) ends
  them all, devices included.
- A local process talking to a service's own port cannot choose its client address with
  ``X-Forwarded-For``: rotating the header does not escape login throttling, and the log
  names its real address. Only the gateway, which connects from an address of its own, is
  believed.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from deploy.gateway.render import LOCAL_SOURCE_ADDRESS
from shared.throttle import LoginThrottleSettings
from tests.security.support import ADMIN_PASSWORD, AGENT_PASSWORD, bearer
from tests.support.processes import LaunchedStack
from tests.support.waiting import wait_for

pytestmark = pytest.mark.e2e

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
# A local process with an address of its own (all of 127.0.0.0/8 is loopback on Linux):
# neither the test's usual 127.0.0.1 nor the gateway's.
OTHER_LOCAL_ADDRESS = "127.0.0.3"
CLIENT_FAILURE_THRESHOLD = LoginThrottleSettings().login_client_failure_threshold
# One route of each family the agent-run server serves to an account.
ROUTE_FAMILIES = [
    ("GET", "/api/v1/accounts/me"),
    ("GET", "/api/v1/accounts"),
    ("GET", "/api/v1/api-keys"),
    ("POST", "/api/v1/api-keys"),
    ("GET", "/api/v1/devices"),
    ("GET", "/api/v1/workers"),
    ("GET", "/api/v1/tasks"),
    ("GET", "/api/v1/sessions"),
]


class Agent:
    """The agent-run server's entrypoint, as one client."""

    def __init__(self, http: httpx.Client, stack: LaunchedStack) -> None:
        self.http = http
        self.stack = stack

    def url(self, path: str) -> str:
        return self.stack.url("agent", path)

    def login(self, name: str, password: str) -> dict[str, str]:
        response = self.http.post(
            self.url("/api/v1/login"),
            data={"grant_type": "password", "username": name, "password": password},
        )
        assert response.status_code == 200, response.text
        return bearer(response.json()["access_token"])

    def user(self, admin: dict[str, str], name: str, password: str) -> dict[str, Any]:
        response = self.http.post(
            self.url("/api/v1/users"), json={"name": name, "password": password}, headers=admin
        )
        assert response.status_code == 201, response.text
        created: dict[str, Any] = response.json()
        return created

    def statuses(self, headers: dict[str, str]) -> dict[str, int]:
        """Each route family's status for ``headers`` (a POST creates nothing it keeps:
        the key is deleted again)."""
        seen = {}
        for method, path in ROUTE_FAMILIES:
            body = {"name": f"probe-{secrets.token_hex(4)}"} if method == "POST" else None
            response = self.http.request(method, self.url(path), json=body, headers=headers)
            if response.status_code == 201:
                key = response.json()["id"]
                self.http.delete(self.url(f"/api/v1/api-keys/{key}"), headers=headers)
            seen[f"{method} {path}"] = response.status_code
        return seen

    def device_login(self, headers: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
        """A device authorized by ``headers``'s account, and its session."""
        device = self.http.post(
            self.url("/api/v1/device_authorization"), data={"hostname": "laptop"}
        ).json()
        verified = self.http.post(
            self.url(f"/api/v1/devices/{device['device_id']}/verify"),
            json={"user_code": device["user_code"], "trusted": False},
            headers=headers,
        )
        assert verified.status_code == 200, verified.text
        polled = self.poll(device)
        assert polled.status_code == 200, polled.text
        return device, bearer(polled.json()["access_token"])

    def poll(self, device: dict[str, Any]) -> httpx.Response:
        return self.http.post(
            self.url("/api/v1/login"),
            data={
                "grant_type": DEVICE_GRANT,
                "device_id": device["device_id"],
                "device_code": device["device_code"],
            },
        )


@pytest.fixture
def agent(http: httpx.Client, stack: LaunchedStack) -> Agent:
    return Agent(http, stack)


def test_a_password_change_ends_every_other_session_on_every_route_family(agent: Agent):
    admin = agent.login("default", AGENT_PASSWORD)
    password = f"pw-{secrets.token_hex(8)}"
    alice = agent.user(admin, f"alice-{secrets.token_hex(4)}", password)
    changer = agent.login(alice["name"], password)
    other = agent.login(alice["name"], password)
    _, device_session = agent.device_login(other)
    key = agent.http.post(
        agent.url("/api/v1/api-keys"), json={"name": f"k-{secrets.token_hex(4)}"}, headers=other
    ).json()["key"]
    from_key = agent.http.post(
        agent.url("/api/v1/login"), data={"grant_type": "api-key"}, headers=bearer(key)
    ).json()["access_token"]
    worker = agent.http.post(
        agent.url("/api/v1/workers"),
        json={"name": "w", "scope": {"claims": [{"kind": "evaluator"}]},
              "runtime": {"platform": "bare"}},
        headers=bearer(key),
    ).json()  # fmt: skip
    everything = agent.statuses(changer)
    assert set(everything.values()) == {200, 201}, everything
    for headers in (other, device_session, bearer(from_key)):
        assert agent.statuses(headers) == everything

    changed = agent.http.patch(
        agent.url(f"/api/v1/users/{alice['id']}"),
        json={"password": "a-new-password-1", "old_password": password},
        headers=changer,
    )
    assert changed.status_code == 200, changed.text

    ended = dict.fromkeys(everything, 401)
    for headers in (other, device_session, bearer(from_key)):
        assert agent.statuses(headers) == ended
    heartbeat = agent.http.post(
        agent.url(f"/api/v1/workers/{worker['worker']['id']}/heartbeat"),
        json={"task_ids": []},
        headers=bearer(worker["token"]),
    )
    assert heartbeat.status_code == 401
    assert agent.statuses(changer) == everything


def test_an_admin_reset_ends_every_session_and_device(agent: Agent):
    admin = agent.login("default", AGENT_PASSWORD)
    password = f"pw-{secrets.token_hex(8)}"
    bob = agent.user(admin, f"bob-{secrets.token_hex(4)}", password)
    session = agent.login(bob["name"], password)
    device, device_session = agent.device_login(session)

    reset = agent.http.post(agent.url(f"/api/v1/users/{bob['id']}/deactivate"), headers=admin)
    assert reset.status_code == 200, reset.text
    activated = agent.http.post(
        agent.url(f"/api/v1/users/{bob['id']}/activate"),
        json={"activation_token": reset.json()["activation_token"], "password": "bob-reset-1"},
    )
    assert activated.status_code == 200, activated.text

    ended = dict.fromkeys(agent.statuses(agent.login(bob["name"], "bob-reset-1")), 401)
    assert agent.statuses(session) == ended
    assert agent.statuses(device_session) == ended
    # The device's code no longer gets a session, now that the account is active again.
    refresh = agent.poll(device)
    assert (refresh.status_code, refresh.json().get("error")) == (400, "invalid_grant")


def test_a_forged_x_forwarded_for_on_a_services_own_port_is_not_believed(
    stack: LaunchedStack, http: httpx.Client
):
    """A local process (127.0.0.1, the address every local process had, and the one the
    services believed) rotates X-Forwarded-For on identity's own port: its failures still
    count against its real address, which is locked out, and which the log names. Run
    last in this module: it locks out 127.0.0.1 on the platform for a while."""
    login = stack.replica_url("identity", 1, "/api/v1/login")
    forged = [f"203.0.113.{n}" for n in range(1, CLIENT_FAILURE_THRESHOLD + 2)]
    for address in forged[:-1]:
        failed = http.post(
            login,
            data={"username": f"nobody-{secrets.token_hex(4)}", "password": "wrong"},
            headers={"X-Forwarded-For": address},
        )
        assert failed.status_code == 401, failed.text
    refused = http.post(
        login,
        data={"username": "default", "password": ADMIN_PASSWORD},
        headers={"X-Forwarded-For": forged[-1]},
    )
    assert refused.status_code == 429, refused.text

    # Through the gateway, a client at another address is that address to identity: the
    # gateway's header is believed (and the lockout above is not this client's).
    elsewhere = httpx.HTTPTransport(local_address=OTHER_LOCAL_ADDRESS)
    with httpx.Client(timeout=10.0, trust_env=False, transport=elsewhere) as other:
        answer = other.post(
            stack.url("platform", "/api/v1/login"),
            data={"username": "default", "password": ADMIN_PASSWORD},
            headers={"X-Forwarded-For": forged[0]},
        )
    assert answer.status_code == 200, answer.text

    def logged(client: str) -> Callable[[], bool]:
        line = re.compile(rf"identity\S*\s*\|.*POST /api/v1/login \d+ .*'client': '{client}'")
        return lambda: line.search(stack.output()) is not None

    # Services write routine log lines in batches (up to half a second late).
    wait_for(logged(re.escape(OTHER_LOCAL_ADDRESS)), "the gateway's client logged", within=10)
    wait_for(logged(r"127\.0\.0\.1"), "the direct caller's address logged", within=10)
    assert not any(address in stack.output() for address in forged)
    assert LOCAL_SOURCE_ADDRESS not in re.findall(r"'client': '([^']+)'", stack.output())
