"""Webhook management: create, get/describe, list, update, delete, rotate the secret."""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from typing import Any

import httpx
import pytest

from tests.webhooks.conftest import SERVER_API_URL
from tests.webhooks.support import deliver_custom

WEBHOOKS = "/api/v1/webhooks"
TRIGGERS = "/api/v1/webhook_triggers"


def no_secret_in(value: Any, secret: str) -> bool:
    return secret not in str(value)


async def test_create_returns_a_generated_secret_once(client, auth, create_webhook):
    hook = await create_webhook("codehost")
    secret = hook["secret"]
    assert isinstance(secret, str)
    assert len(secret) == 43
    assert hook["body"]["endpoint_url"] == (
        f"{SERVER_API_URL}/webhooks/codehost/{hook['id']}/events"
    )
    got = await client.get(f"{WEBHOOKS}/{hook['id']}", headers=auth)
    listed = await client.get(WEBHOOKS, params={"hydrate": "true"}, headers=auth)
    assert "secret" not in got.json()
    assert no_secret_in(got.json(), secret)
    assert no_secret_in(listed.json(), secret)


async def test_create_with_a_chosen_secret_does_not_echo_it(create_webhook):
    hook = await create_webhook("tasks", secret="clickup-owned-secret")
    assert hook["secret"] is None
    assert no_secret_in(hook, "clickup-owned-secret")


async def test_create_answers_the_reference_shape(create_webhook, project):
    hook = await create_webhook("chat", name="alerts")
    assert hook["name"] == "alerts"
    assert hook["body"]["project_id"] == project["id"]
    assert hook["body"]["webhook_type"] == "chat"
    assert hook["body"]["active"] is True
    assert hook["resources"]["user"]["name"] == "default"
    assert hook["metadata"]["stats"]["received_count"] == 0


async def test_unregistered_type_is_rejected_with_422(client, auth, project):
    body = {"project": project["id"], "name": "x", "webhook_type": "jira"}
    response = await client.post(WEBHOOKS, json=body, headers=auth)
    assert response.status_code == 422
    assert response.json() == {"detail": ["ValueError", "Unsupported webhook type: jira."]}


async def test_creating_an_inactive_webhook_is_a_conflict(client, auth, project):
    body = {"project": project["id"], "name": "x", "webhook_type": "custom", "active": False}
    response = await client.post(WEBHOOKS, json=body, headers=auth)
    assert response.status_code == 409
    listed = await client.get(WEBHOOKS, headers=auth)
    assert listed.json()["total"] == 0


async def test_a_name_taken_in_the_project_is_a_conflict(client, auth, create_webhook, project):
    await create_webhook("custom", name="dup")
    body = {"project": project["id"], "name": "dup", "webhook_type": "codehost"}
    response = await client.post(WEBHOOKS, json=body, headers=auth)
    assert response.status_code == 409
    assert response.json()["detail"][0] == "EntityExistsError"


async def test_an_empty_secret_is_rejected(client, auth, project):
    body = {"project": project["id"], "name": "x", "webhook_type": "custom", "secret": ""}
    assert (await client.post(WEBHOOKS, json=body, headers=auth)).status_code == 422


async def test_an_unknown_project_answers_404(client, auth):
    body = {"project": str(uuid.uuid4()), "name": "x", "webhook_type": "custom"}
    response = await client.post(WEBHOOKS, json=body, headers=auth)
    assert response.status_code == 404


async def test_management_needs_a_user_token(client, create_webhook):
    hook = await create_webhook("custom")
    assert (await client.get(WEBHOOKS)).status_code == 401
    assert (await client.get(f"{WEBHOOKS}/{hook['id']}")).status_code == 401
    assert (await client.delete(f"{WEBHOOKS}/{hook['id']}")).status_code == 401


@pytest.mark.parametrize("how", ["id", "name", "prefix"])
async def test_get_finds_a_webhook_by_name_id_or_id_prefix(client, auth, create_webhook, how):
    hook = await create_webhook("custom", name="by-reference")
    reference = {"id": hook["id"], "name": "by-reference", "prefix": hook["id"][:8]}[how]
    response = await client.get(f"{WEBHOOKS}/{reference}", headers=auth)
    assert response.status_code == 200, response.text
    found = response.json()
    assert found["id"] == hook["id"]
    assert found["metadata"]["stats"]["accepted_count"] == 0
    assert found["body"]["endpoint_url"].endswith(f"/custom/{hook['id']}/events")


async def test_an_id_prefix_shared_by_two_webhooks_is_ambiguous(client, auth, create_webhook):
    by_first: dict[str, list[str]] = defaultdict(list)
    for i in range(17):  # 17 ids over 16 hex digits: two share a first digit
        by_first[(await create_webhook("custom", name=f"h{i}"))["id"][0]].append("x")
    shared = next(digit for digit, ids in by_first.items() if len(ids) > 1)
    response = await client.get(f"{WEBHOOKS}/{shared}", headers=auth)
    assert response.status_code == 400


async def test_get_of_an_unknown_webhook_answers_404(client, auth):
    response = await client.get(f"{WEBHOOKS}/no-such-hook", headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"][0] == "KeyError"


async def test_list_filters_by_type_and_active(client, auth, create_webhook):
    await create_webhook("custom", name="a")
    await create_webhook("codehost", name="b")
    off = await create_webhook("codehost", name="c")
    await client.put(f"{WEBHOOKS}/{off['id']}", json={"active": False}, headers=auth)

    async def names(**params: str) -> list[str]:
        response = await client.get(WEBHOOKS, params=params, headers=auth)
        assert response.status_code == 200, response.text
        return sorted(item["name"] for item in response.json()["items"])

    assert await names() == ["a", "b", "c"]
    assert await names(webhook_type="codehost") == ["b", "c"]
    assert await names(active="false") == ["c"]
    assert await names(webhook_type="codehost", active="true") == ["b"]
    assert await names(name="startswith:b") == ["b"]


async def test_list_shows_stats_only_when_hydrated(client, auth, create_webhook):
    await create_webhook("custom")
    plain = (await client.get(WEBHOOKS, headers=auth)).json()["items"][0]
    hydrated = (await client.get(WEBHOOKS, params={"hydrate": "true"}, headers=auth)).json()
    assert plain["metadata"] is None
    assert hydrated["items"][0]["metadata"]["stats"]["received_count"] == 0


async def test_list_of_an_unknown_project_answers_404(client, auth):
    response = await client.get(WEBHOOKS, params={"project": "nope"}, headers=auth)
    assert response.status_code == 404


@pytest.mark.parametrize("project", ["", ".", ".."])
@pytest.mark.parametrize("path", [WEBHOOKS, "/api/v1/webhook_triggers"])
async def test_a_project_named_by_no_path_segment_answers_404(client, auth, path, project):
    """Found by fuzzing: `?project=` was asked of tracking as `/projects/`, its list, whose
    answer (a redirect) became a 503."""
    response = await client.get(path, params={"project": project}, headers=auth)
    assert response.status_code == 404, response.text


async def test_update_renames_and_deactivates(client, auth, create_webhook):
    hook = await create_webhook("custom")
    response = await client.put(
        f"{WEBHOOKS}/{hook['id']}", json={"name": "renamed", "active": False}, headers=auth
    )
    assert response.status_code == 200
    assert response.json()["name"] == "renamed"
    assert response.json()["body"]["active"] is False


@pytest.mark.parametrize("field", [{"webhook_type": "chat"}, {"secret": "s"}, {"project": "x"}])
async def test_update_refuses_every_other_field(client, auth, create_webhook, field):
    hook = await create_webhook("custom")
    response = await client.put(f"{WEBHOOKS}/{hook['id']}", json=field, headers=auth)
    assert response.status_code == 422
    got = await client.get(f"{WEBHOOKS}/{hook['id']}", headers=auth)
    assert got.json()["body"]["webhook_type"] == "custom"


async def test_renaming_onto_a_taken_name_is_a_conflict(client, auth, create_webhook):
    await create_webhook("custom", name="first")
    second = await create_webhook("custom", name="second")
    response = await client.put(f"{WEBHOOKS}/{second['id']}", json={"name": "first"}, headers=auth)
    assert response.status_code == 409


async def test_rotate_returns_a_new_generated_secret(client, auth, create_webhook):
    hook = await create_webhook("custom")
    response = await client.put(f"{WEBHOOKS}/{hook['id']}/secret", json={}, headers=auth)
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    secret = response.json()["secret"]
    assert len(secret) == 43
    assert secret != hook["secret"]


async def test_rotate_to_a_chosen_secret(client, auth, create_webhook):
    hook = await create_webhook("tasks")
    response = await client.put(
        f"{WEBHOOKS}/{hook['name']}/secret", json={"secret": "from-clickup"}, headers=auth
    )
    assert response.json() == {"secret": "from-clickup"}


async def test_delete_answers_null_and_the_webhook_is_gone(client, auth, create_webhook):
    hook = await create_webhook("custom")
    response = await client.delete(f"{WEBHOOKS}/{hook['id']}", headers=auth)
    assert response.status_code == 200
    assert response.json() is None
    assert (await client.get(f"{WEBHOOKS}/{hook['id']}", headers=auth)).status_code == 404


async def create_trigger(
    client: httpx.AsyncClient, auth: dict[str, str], project: dict[str, Any], hook: dict[str, Any]
) -> dict[str, Any]:
    body = {
        "project": project["id"],
        "name": f"t-{uuid.uuid4().hex[:6]}",
        "webhook_id": hook["id"],
        "snapshot_id": str(uuid.uuid4()),
        "configuration": {},
    }
    response = await client.post("/api/v1/webhook_triggers", json=body, headers=auth)
    assert response.status_code == 200, response.text
    created: dict[str, Any] = response.json()
    return created


async def test_delete_is_refused_while_a_live_trigger_references_it(
    client, auth, create_webhook, project
):
    hook = await create_webhook("custom")
    trigger = await create_trigger(client, auth, project, hook)
    response = await client.delete(f"{WEBHOOKS}/{hook['id']}", headers=auth)
    assert response.status_code == 409
    assert "non-archived triggers" in response.json()["detail"][1]
    assert (await client.get(f"{WEBHOOKS}/{hook['id']}", headers=auth)).status_code == 200
    archived = await client.delete(f"/api/v1/webhook_triggers/{trigger['id']}", headers=auth)
    assert archived.status_code == 200
    assert (await client.delete(f"{WEBHOOKS}/{hook['id']}", headers=auth)).status_code == 200
    left = await client.get(f"/api/v1/webhook_triggers/{trigger['id']}", headers=auth)
    assert left.json()["body"]["webhook_id"] is None
    assert left.json()["body"]["is_archived"] is True


async def test_raw_event_of_an_unknown_delivery_answers_404(client, auth, create_webhook):
    hook = await create_webhook("custom")
    response = await client.get(
        f"{WEBHOOKS}/{hook['id']}/events/raw", params={"delivery_id": "nope"}, headers=auth
    )
    assert response.status_code == 404


async def test_raw_event_of_a_repeated_delivery_id_is_the_latest_events_body(
    client, auth, create_webhook, project, drain, snapshot_runs
):
    """A `sha256=` sender's X-Webhook-Delivery is an unsigned label that two events (two
    bodies) may share: each keeps its body, and the raw event is the latest received."""
    hook = await create_webhook("custom")
    trigger = {
        "project": project["id"],
        "name": "every-event",
        "webhook_id": hook["id"],
        "snapshot_id": str(uuid.uuid4()),
        "configuration": {},
    }
    assert (await client.post(TRIGGERS, json=trigger, headers=auth)).status_code == 200
    for build in (1, 2):
        await deliver_custom(client, hook, json.dumps({"build": build}).encode(), "d-same")
        await drain()
    assert len(snapshot_runs.runs) == 2
    response = await client.get(
        f"{WEBHOOKS}/{hook['id']}/events/raw", params={"delivery_id": "d-same"}, headers=auth
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"body": {"build": 2}}


async def test_openapi_declares_every_webhook_route(client):
    paths = (await client.get("/openapi.json")).json()["paths"]
    assert {"post", "get"} <= set(paths["/api/v1/webhooks"])
    assert {"get", "put", "delete"} <= set(paths["/api/v1/webhooks/{webhook_name_or_id}"])
    assert "put" in paths["/api/v1/webhooks/{webhook_name_or_id}/secret"]
    assert "post" in paths["/api/v1/webhooks/{webhook_type}/{webhook_id}/events"]
    assert {"post", "get"} <= set(paths["/api/v1/webhook_triggers"])


async def test_health_and_ready(client):
    assert (await client.get("/health")).status_code == 200
    assert (await client.get("/ready")).status_code == 200


async def test_only_the_creator_or_an_admin_changes_rotates_or_deletes_a_webhook(
    client, auth, member_auth, create_webhook, project
):
    hook = await create_webhook("custom")
    path = f"{WEBHOOKS}/{hook['id']}"
    for attempt, action in [
        (client.put(path, json={"active": False}, headers=member_auth), "change it"),
        (client.put(path, json={"name": "taken"}, headers=member_auth), "change it"),
        (client.put(f"{path}/secret", json={}, headers=member_auth), "rotate its secret"),
        (client.delete(path, headers=member_auth), "delete it"),
    ]:
        response = await attempt
        assert response.status_code == 403, response.text
        assert response.json()["detail"] == [
            "IllegalOperationError",
            f"Only the webhook's creator or an admin may {action}.",
        ]
        assert hook["secret"] not in response.text
    unchanged = (await client.get(path, headers=auth)).json()
    assert (unchanged["name"], unchanged["body"]["active"]) == (hook["name"], True)
    await deliver_custom(client, hook, b'{"build": 1}', "d-old-secret")  # the secret still signs

    body = {"project": project["id"], "name": "members", "webhook_type": "custom"}
    members = (await client.post(WEBHOOKS, json=body, headers=member_auth)).json()
    own = f"{WEBHOOKS}/{members['id']}"
    assert (await client.put(own, json={"active": False}, headers=member_auth)).status_code == 200
    rotated = await client.put(f"{own}/secret", json={}, headers=member_auth)
    assert rotated.status_code == 200, rotated.text
    assert (await client.put(f"{own}/secret", json={}, headers=auth)).status_code == 200
    assert (await client.delete(own, headers=auth)).status_code == 200
    assert (await client.delete(path, headers=auth)).status_code == 200
