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
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.security.support import ADMIN_PASSWORD, bearer, login
from tests.support.processes import LaunchedStack

pytestmark = pytest.mark.e2e

MEMBER_PASSWORD = f"Member-{secrets.token_urlsafe(12)}"


@pytest.fixture(scope="module")
def api(stack: LaunchedStack) -> Callable[[str], str]:
    def _api(path: str) -> str:
        url: str = stack.url("platform", f"/api/v1/{path}")
        return url

    return _api


@pytest.fixture(scope="module")
def admin(http: httpx.Client, stack: LaunchedStack) -> dict[str, str]:
    return bearer(login(http, stack, "default", ADMIN_PASSWORD))


@pytest.fixture(scope="module")
def member(
    http: httpx.Client, stack: LaunchedStack, api: Callable[[str], str], admin: dict[str, str]
) -> dict[str, str]:
    """A user who is not an admin."""
    body = {"name": "mallory", "password": MEMBER_PASSWORD, "active": True, "is_admin": False}
    created = http.post(api("users"), json=body, headers=admin)
    assert created.status_code == 200, created.text
    return bearer(login(http, stack, "mallory", MEMBER_PASSWORD))


@pytest.fixture(scope="module")
def project(http: httpx.Client, api: Callable[[str], str], admin: dict[str, str]) -> str:
    found = http.get(api("projects/default"), headers=admin)
    assert found.status_code == 200, found.text
    project_id: str = found.json()["id"]
    return project_id


def _post(http: httpx.Client, url: str, headers: dict[str, str], body: dict[str, Any]) -> Any:
    response = http.post(url, json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def _webhook(
    http: httpx.Client, api: Callable[[str], str], headers: dict[str, str], project: str
) -> tuple[dict[str, Any], str]:
    """A new custom webhook of the user ``headers`` names, and its secret."""
    secret = secrets.token_urlsafe(24)
    name = f"owned-{secrets.token_hex(4)}"
    body = {"project": project, "name": name, "webhook_type": "custom", "secret": secret}
    return _post(http, api("webhooks"), headers, body), secret


def _deliver(
    http: httpx.Client, api: Callable[[str], str], hook: dict[str, Any], secret: str
) -> int:
    """The intake's status for a fresh delivery signed with ``secret``."""
    body = json.dumps({"build": secrets.token_hex(8)}).encode()
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/json",
        "X-ZenML-Event": "build.finished",
        "X-ZenML-Signature-256": signature,
    }
    response = http.post(api(f"webhooks/custom/{hook['id']}/events"), content=body, headers=headers)
    return response.status_code


def _refused(response: httpx.Response, thing: str, action: str) -> None:
    assert response.status_code == 403, response.text
    assert response.json()["detail"] == [
        "IllegalOperationError",
        f"Only the {thing}'s creator or an admin may {action}.",
    ]


def test_a_member_cannot_rotate_deactivate_rename_or_delete_the_admins_webhook(
    http, api, admin, member, project
):
    hook, secret = _webhook(http, api, admin, project)
    path = api(f"webhooks/{hook['id']}")
    before = http.get(path, headers=admin).json()

    rotated = http.put(path + "/secret", json={}, headers=member)
    _refused(rotated, "webhook", "rotate its secret")
    assert "secret" not in rotated.json()
    chosen = http.put(path + "/secret", json={"secret": "mallory-knows-this"}, headers=member)
    _refused(chosen, "webhook", "rotate its secret")
    _refused(http.put(path, json={"active": False}, headers=member), "webhook", "change it")
    _refused(http.put(path, json={"name": "renamed"}, headers=member), "webhook", "change it")
    _refused(http.delete(path, headers=member), "webhook", "delete it")

    after = http.get(path, headers=admin).json()
    assert (after["name"], after["body"]) == (before["name"], before["body"])
    # The secret is the admin's still: her choice does not sign, the old one does.
    assert _deliver(http, api, hook, "mallory-knows-this") == 401
    assert _deliver(http, api, hook, secret) == 202


def test_a_member_cannot_change_archive_or_delete_the_admins_trigger(
    http, api, admin, member, project
):
    hook, _ = _webhook(http, api, admin, project)
    body = {
        "project": project,
        "name": f"owned-{secrets.token_hex(4)}",
        "webhook_id": hook["id"],
        "snapshot_id": str(uuid.uuid4()),
        "configuration": {"target_events": []},
    }
    trigger = _post(http, api("webhook_triggers"), admin, body)
    path = api(f"webhook_triggers/{trigger['id']}")
    change = {"snapshot_id": str(uuid.uuid4()), "active": False}

    _refused(http.put(path, json=change, headers=member), "webhook trigger", "change it")
    _refused(http.delete(path, headers=member), "webhook trigger", "archive it")
    hard = http.delete(path, params={"soft": "false"}, headers=member)
    _refused(hard, "webhook trigger", "delete it")

    after = http.get(path, headers=admin).json()["body"]
    assert after == trigger["body"]


def test_the_creator_and_an_admin_may_change_rotate_and_delete(http, api, admin, member, project):
    own, secret = _webhook(http, api, member, project)
    path = api(f"webhooks/{own['id']}")
    rotated = http.put(path + "/secret", json={}, headers=member)
    assert rotated.status_code == 200, rotated.text
    new_secret = rotated.json()["secret"]
    assert _deliver(http, api, own, secret) == 401
    assert _deliver(http, api, own, new_secret) == 202
    deactivated = http.put(path, json={"active": False}, headers=member)
    assert deactivated.status_code == 200, deactivated.text
    assert deactivated.json()["body"]["active"] is False

    # An admin may act on the member's webhook, and on her own.
    by_admin = http.put(path + "/secret", json={}, headers=admin)
    assert by_admin.status_code == 200, by_admin.text
    assert http.put(path, json={"active": True}, headers=admin).status_code == 200
    assert _deliver(http, api, own, by_admin.json()["secret"]) == 202
    assert http.delete(path, headers=admin).status_code == 200
    admins, _ = _webhook(http, api, admin, project)
    assert http.delete(api(f"webhooks/{admins['id']}"), headers=admin).status_code == 200
