"""A non-admin against the admin's webhook and trigger, through the gateway of a real
stack: rotating the secret (which would hand her a key that signs deliveries running the
admin's pipelines), deactivating, renaming and deleting are refused with 403, and the
webhook, its trigger and its secret stay as they were; the creator and an admin may."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.support.processes import LaunchedStack, stack_for_tests

pytestmark = pytest.mark.e2e

ADMIN_PASSWORD = f"Owners-{secrets.token_urlsafe(12)}"
MEMBER_PASSWORD = f"Member-{secrets.token_urlsafe(12)}"
START_TIMEOUT = 60.0


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, databases_of_stack: dict[str, str]
) -> Iterator[LaunchedStack]:
    with stack_for_tests(
        tmp_path_factory,
        "webhook-owners",
        admin_password=ADMIN_PASSWORD,
        start_timeout=START_TIMEOUT,
        databases=databases_of_stack,
    ) as up:
        yield up


@pytest.fixture(scope="module")
def client(stack: LaunchedStack) -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30.0, trust_env=False) as http:
        yield http


@pytest.fixture(scope="module")
def api(stack: LaunchedStack) -> Callable[[str], str]:
    def _api(path: str) -> str:
        url: str = stack.url("platform", f"/api/v1/{path}")
        return url

    return _api


def _login(
    client: httpx.Client, api: Callable[[str], str], name: str, password: str
) -> dict[str, str]:
    response = client.post(api("login"), data={"username": name, "password": password})
    assert response.status_code == 200, response.text
    client.cookies.clear()  # each request names its user by its bearer alone
    return {"Authorization": f"Bearer {response.json()['access_token']}"}


@pytest.fixture(scope="module")
def admin(client: httpx.Client, api: Callable[[str], str]) -> dict[str, str]:
    return _login(client, api, "default", ADMIN_PASSWORD)


@pytest.fixture(scope="module")
def member(
    client: httpx.Client, api: Callable[[str], str], admin: dict[str, str]
) -> dict[str, str]:
    """A user who is not an admin."""
    body = {"name": "mallory", "password": MEMBER_PASSWORD, "active": True, "is_admin": False}
    created = client.post(api("users"), json=body, headers=admin)
    assert created.status_code == 200, created.text
    return _login(client, api, "mallory", MEMBER_PASSWORD)


@pytest.fixture(scope="module")
def project(client: httpx.Client, api: Callable[[str], str], admin: dict[str, str]) -> str:
    found = client.get(api("projects/default"), headers=admin)
    assert found.status_code == 200, found.text
    project_id: str = found.json()["id"]
    return project_id


def _post(client: httpx.Client, url: str, headers: dict[str, str], body: dict[str, Any]) -> Any:
    response = client.post(url, json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def _webhook(
    client: httpx.Client, api: Callable[[str], str], headers: dict[str, str], project: str
) -> tuple[dict[str, Any], str]:
    """A new custom webhook of the user ``headers`` names, and its secret."""
    secret = secrets.token_urlsafe(24)
    name = f"owned-{secrets.token_hex(4)}"
    body = {"project": project, "name": name, "webhook_type": "custom", "secret": secret}
    return _post(client, api("webhooks"), headers, body), secret


def _deliver(
    client: httpx.Client, api: Callable[[str], str], hook: dict[str, Any], secret: str
) -> int:
    """The intake's status for a fresh delivery signed with ``secret``."""
    body = json.dumps({"build": secrets.token_hex(8)}).encode()
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/json",
        "X-ZenML-Event": "build.finished",
        "X-ZenML-Signature-256": signature,
    }
    response = client.post(
        api(f"webhooks/custom/{hook['id']}/events"), content=body, headers=headers
    )
    return response.status_code


def _refused(response: httpx.Response, thing: str, action: str) -> None:
    assert response.status_code == 403, response.text
    assert response.json()["detail"] == [
        "IllegalOperationError",
        f"Only the {thing}'s creator or an admin may {action}.",
    ]


def test_a_member_cannot_rotate_deactivate_rename_or_delete_the_admins_webhook(
    client, api, admin, member, project
):
    hook, secret = _webhook(client, api, admin, project)
    path = api(f"webhooks/{hook['id']}")
    before = client.get(path, headers=admin).json()

    rotated = client.put(path + "/secret", json={}, headers=member)
    _refused(rotated, "webhook", "rotate its secret")
    assert "secret" not in rotated.json()
    chosen = client.put(path + "/secret", json={"secret": "mallory-knows-this"}, headers=member)
    _refused(chosen, "webhook", "rotate its secret")
    _refused(client.put(path, json={"active": False}, headers=member), "webhook", "change it")
    _refused(client.put(path, json={"name": "renamed"}, headers=member), "webhook", "change it")
    _refused(client.delete(path, headers=member), "webhook", "delete it")

    after = client.get(path, headers=admin).json()
    assert (after["name"], after["body"]) == (before["name"], before["body"])
    # The secret is the admin's still: her choice does not sign, the old one does.
    assert _deliver(client, api, hook, "mallory-knows-this") == 401
    assert _deliver(client, api, hook, secret) == 202


def test_a_member_cannot_change_archive_or_delete_the_admins_trigger(
    client, api, admin, member, project
):
    hook, _ = _webhook(client, api, admin, project)
    body = {
        "project": project,
        "name": f"owned-{secrets.token_hex(4)}",
        "webhook_id": hook["id"],
        "snapshot_id": str(uuid.uuid4()),
        "configuration": {"target_events": []},
    }
    trigger = _post(client, api("webhook_triggers"), admin, body)
    path = api(f"webhook_triggers/{trigger['id']}")
    change = {"snapshot_id": str(uuid.uuid4()), "active": False}

    _refused(client.put(path, json=change, headers=member), "webhook trigger", "change it")
    _refused(client.delete(path, headers=member), "webhook trigger", "archive it")
    hard = client.delete(path, params={"soft": "false"}, headers=member)
    _refused(hard, "webhook trigger", "delete it")

    after = client.get(path, headers=admin).json()["body"]
    assert after == trigger["body"]


def test_the_creator_and_an_admin_may_change_rotate_and_delete(client, api, admin, member, project):
    own, secret = _webhook(client, api, member, project)
    path = api(f"webhooks/{own['id']}")
    rotated = client.put(path + "/secret", json={}, headers=member)
    assert rotated.status_code == 200, rotated.text
    new_secret = rotated.json()["secret"]
    assert _deliver(client, api, own, secret) == 401
    assert _deliver(client, api, own, new_secret) == 202
    deactivated = client.put(path, json={"active": False}, headers=member)
    assert deactivated.status_code == 200, deactivated.text
    assert deactivated.json()["body"]["active"] is False

    # An admin may act on the member's webhook, and on her own.
    by_admin = client.put(path + "/secret", json={}, headers=admin)
    assert by_admin.status_code == 200, by_admin.text
    assert client.put(path, json={"active": True}, headers=admin).status_code == 200
    assert _deliver(client, api, own, by_admin.json()["secret"]) == 202
    assert client.delete(path, headers=admin).status_code == 200
    admins, _ = _webhook(client, api, admin, project)
    assert client.delete(api(f"webhooks/{admins['id']}"), headers=admin).status_code == 200
