"""Webhook triggers: create, list, get, update, archive, delete, executions."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

TRIGGERS = "/api/v1/webhook_triggers"


@pytest.fixture
def trigger_body(project):
    def _body(hook: dict[str, Any], **fields: Any) -> dict[str, Any]:
        return {
            "project": project["id"],
            "name": "on-push",
            "webhook_id": hook["id"],
            "snapshot_id": str(uuid.uuid4()),
            "configuration": {"target_events": [{"type": "push", "branch": "main"}]},
            **fields,
        }

    return _body


async def test_create_stores_the_normalized_configuration(
    client, auth, create_webhook, trigger_body
):
    hook = await create_webhook("codehost")
    body = trigger_body(hook, run_configuration={"parameters": {"x": 1}})
    response = await client.post(TRIGGERS, json=body, headers=auth)
    assert response.status_code == 200, response.text
    created = response.json()["body"]
    assert created["webhook_id"] == hook["id"]
    assert created["snapshot_id"] == body["snapshot_id"]
    assert created["type"] == created["flavor"] == "webhook"
    assert created["concurrency"] == "skip"
    assert created["is_archived"] is False
    assert created["configuration"]["target_events"][0] == {
        "type": "push",
        "repo": None,
        "branch": "main",
        "actor": None,
    }
    assert created["run_configuration"] == {"parameters": {"x": 1}}


async def test_a_misspelled_filter_field_is_refused_with_422(
    client, auth, create_webhook, trigger_body
):
    hook = await create_webhook("codehost")
    body = trigger_body(hook, configuration={"target_events": [{"type": "push", "brnch": "x"}]})
    response = await client.post(TRIGGERS, json=body, headers=auth)
    assert response.status_code == 422
    assert "brnch" in str(response.json())
    assert (await client.get(TRIGGERS, headers=auth)).json()["total"] == 0


async def test_a_webhook_of_another_project_or_none_answers_404(client, auth, trigger_body):
    body = trigger_body({"id": str(uuid.uuid4())})
    assert (await client.post(TRIGGERS, json=body, headers=auth)).status_code == 404


async def test_the_webhook_may_be_named(client, auth, create_webhook, trigger_body):
    hook = await create_webhook("codehost", name="gh")
    response = await client.post(
        TRIGGERS, json={**trigger_body(hook), "webhook_id": "gh"}, headers=auth
    )
    assert response.status_code == 200
    assert response.json()["body"]["webhook_id"] == hook["id"]


async def test_a_taken_trigger_name_is_a_conflict(client, auth, create_webhook, trigger_body):
    hook = await create_webhook("codehost")
    assert (await client.post(TRIGGERS, json=trigger_body(hook), headers=auth)).status_code == 200
    assert (await client.post(TRIGGERS, json=trigger_body(hook), headers=auth)).status_code == 409


async def test_list_filters_by_webhook_and_archive_state(
    client, auth, create_webhook, trigger_body
):
    first = await create_webhook("codehost", name="one")
    second = await create_webhook("codehost", name="two")
    a = (await client.post(TRIGGERS, json=trigger_body(first, name="a"), headers=auth)).json()
    await client.post(TRIGGERS, json=trigger_body(second, name="b"), headers=auth)
    await client.delete(f"{TRIGGERS}/{a['id']}", headers=auth)

    async def names(**params: str) -> list[str]:
        response = await client.get(TRIGGERS, params=params, headers=auth)
        assert response.status_code == 200, response.text
        return sorted(item["body"]["name"] for item in response.json()["items"])

    assert await names() == ["a", "b"]
    assert await names(webhook_id=second["id"]) == ["b"]
    assert await names(is_archived="true") == ["a"]


async def test_update_changes_configuration_and_flags(client, auth, create_webhook, trigger_body):
    hook = await create_webhook("codehost")
    trigger = (await client.post(TRIGGERS, json=trigger_body(hook), headers=auth)).json()
    update = {
        "active": False,
        "concurrency": "submit",
        "configuration": {"target_events": [{"type": "release_published", "tag": "startswith:v"}]},
    }
    response = await client.put(f"{TRIGGERS}/{trigger['id']}", json=update, headers=auth)
    assert response.status_code == 200, response.text
    body = response.json()["body"]
    assert body["active"] is False
    assert body["concurrency"] == "submit"
    assert body["configuration"]["target_events"][0]["type"] == "release_published"


async def test_update_may_not_move_a_trigger_to_another_webhook(
    client, auth, create_webhook, trigger_body
):
    hook = await create_webhook("codehost")
    trigger = (await client.post(TRIGGERS, json=trigger_body(hook), headers=auth)).json()
    response = await client.put(
        f"{TRIGGERS}/{trigger['id']}", json={"webhook_id": str(uuid.uuid4())}, headers=auth
    )
    assert response.status_code == 422


async def test_archive_then_delete(client, auth, create_webhook, trigger_body):
    hook = await create_webhook("codehost")
    trigger = (await client.post(TRIGGERS, json=trigger_body(hook), headers=auth)).json()
    path = f"{TRIGGERS}/{trigger['id']}"
    assert (await client.delete(path, headers=auth)).status_code == 200
    archived = (await client.get(path, headers=auth)).json()["body"]
    assert archived["is_archived"] is True
    assert archived["active"] is False
    assert (await client.put(path, json={"active": True}, headers=auth)).status_code == 409
    assert (await client.delete(path, params={"soft": "false"}, headers=auth)).status_code == 200
    assert (await client.get(path, headers=auth)).status_code == 404


async def test_executions_of_an_unknown_trigger_answer_404(client, auth):
    response = await client.get(f"{TRIGGERS}/{uuid.uuid4()}/executions", headers=auth)
    assert response.status_code == 404
