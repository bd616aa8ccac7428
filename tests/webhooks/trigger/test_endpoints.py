"""Webhook triggers: create, list, get, update, archive, delete, executions."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import timedelta
from typing import Any

import pytest
from redis.asyncio import Redis

from shared.state import STATE_KEY
from tests.support.redis_server import free_port
from tests.webhooks.event.support import MovableClock, deliver, executions
from tests.webhooks.support import push_body
from webhooks.event.queue import JobQueue

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


def retry_path(trigger: dict[str, Any], execution: dict[str, Any]) -> str:
    return f"{TRIGGERS}/{trigger['id']}/executions/{execution['id']}/retry"


@pytest.fixture
async def failed(client, auth, wired, drain, snapshot_runs):
    """An execution that failed past its retry horizon, tracking out of reach all along;
    tracking is back now."""
    hook, trigger = wired
    snapshot_runs.fail_next = 100
    await deliver(client, hook, push_body("main"), "d-failed")
    await drain(clock=MovableClock(timedelta(hours=25)))
    (execution,) = await executions(client, auth, trigger)
    assert execution["status"] == "failed"
    snapshot_runs.fail_next = 0
    return trigger, execution


async def test_an_admin_reruns_a_failed_execution_once(client, auth, failed, drain, snapshot_runs):
    trigger, execution = failed
    response = await client.post(retry_path(trigger, execution), headers=auth)
    assert response.status_code == 202, response.text
    retried = response.json()
    assert retried["status"] == "pending"
    assert retried["retried_at"] is not None
    assert retried["error"] == execution["error"]  # the last error, until the next outcome
    await drain()
    (done,) = await executions(client, auth, trigger)
    assert done["status"] == "dispatched"
    assert done["run_id"] == snapshot_runs.runs[execution["id"]]
    assert done["retried_at"] == retried["retried_at"]
    # Asked as the first try asked: the event as the trigger matched it, from the kept body.
    first, last = snapshot_runs.calls[0]["body"], snapshot_runs.calls[-1]["body"]
    assert last == first
    assert last["trigger_execution"]["webhook_upstream_event"]["codehost"]["event"]["branch"] == (
        "main"
    )
    again = await client.post(retry_path(trigger, execution), headers=auth)
    assert again.status_code == 409
    assert again.json()["detail"] == [
        "EntityExistsError",
        f"The webhook trigger execution '{execution['id']}' was retried once already.",
    ]
    assert len(snapshot_runs.runs) == 1


async def test_a_rerun_that_fails_again_cannot_be_rerun(client, auth, failed, drain, snapshot_runs):
    trigger, execution = failed
    snapshot_runs.refuse = True
    assert (await client.post(retry_path(trigger, execution), headers=auth)).status_code == 202
    await drain()
    (done,) = await executions(client, auth, trigger)
    assert done["status"] == "failed"
    assert "404" in done["error"]
    assert (await client.post(retry_path(trigger, execution), headers=auth)).status_code == 409


async def test_only_a_failed_execution_can_be_retried(client, auth, wired, drain, snapshot_runs):
    hook, trigger = wired
    await deliver(client, hook, push_body("main"), "d-fine")
    await drain()
    (execution,) = await executions(client, auth, trigger)
    response = await client.post(retry_path(trigger, execution), headers=auth)
    assert response.status_code == 409
    assert response.json()["detail"][1] == (
        f"The webhook trigger execution '{execution['id']}' is dispatched; only a failed "
        "execution can be retried."
    )


async def test_retrying_needs_an_admin(client, member_auth, auth, failed):
    trigger, execution = failed
    response = await client.post(retry_path(trigger, execution), headers=member_auth)
    assert response.status_code == 403
    assert response.json()["detail"][1] == "Only admins may retry a webhook trigger execution."
    (unchanged,) = await executions(client, auth, trigger)
    assert unchanged == execution


async def test_retrying_an_unknown_execution_or_one_of_another_trigger_is_404(
    client, auth, failed, create_webhook, trigger_body
):
    trigger, execution = failed
    unknown = await client.post(retry_path(trigger, {"id": uuid.uuid4()}), headers=auth)
    assert unknown.status_code == 404
    other_hook = await create_webhook("codehost", name="another-hook")
    other = (await client.post(TRIGGERS, json=trigger_body(other_hook), headers=auth)).json()
    assert (await client.post(retry_path(other, execution), headers=auth)).status_code == 404
    gone = await client.post(retry_path({"id": uuid.uuid4()}, execution), headers=auth)
    assert gone.status_code == 404
    bad = await client.post(f"{TRIGGERS}/{trigger['id']}/executions/nope/retry", headers=auth)
    assert bad.status_code == 422


async def test_a_retry_redis_cannot_take_changes_nothing(client, auth, failed, webhooks_app):
    trigger, execution = failed
    settings = webhooks_app.state["settings"]
    unreachable = Redis.from_url(f"redis://127.0.0.1:{free_port()}")
    # The typed state is built once when the lifespan starts: swap its queue.
    state = webhooks_app.state[STATE_KEY]
    queue = JobQueue(unreachable, settings.queue_name, expires_ms=60_000)
    webhooks_app.state[STATE_KEY] = dataclasses.replace(state, jobs=queue)
    try:
        response = await client.post(retry_path(trigger, execution), headers=auth)
    finally:
        await unreachable.aclose()
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    (unchanged,) = await executions(client, auth, trigger)
    assert unchanged == execution


async def test_only_the_creator_or_an_admin_changes_archives_or_deletes_a_trigger(
    client, auth, member_auth, create_webhook, trigger_body
):
    hook = await create_webhook("codehost")
    admins = (await client.post(TRIGGERS, json=trigger_body(hook), headers=auth)).json()
    path = f"{TRIGGERS}/{admins['id']}"
    change = {"snapshot_id": str(uuid.uuid4()), "active": False}
    for attempt, action in [
        (client.put(path, json=change, headers=member_auth), "change it"),
        (client.delete(path, headers=member_auth), "archive it"),
        (client.delete(path, params={"soft": "false"}, headers=member_auth), "delete it"),
    ]:
        response = await attempt
        assert response.status_code == 403, response.text
        assert response.json()["detail"] == [
            "IllegalOperationError",
            f"Only the webhook trigger's creator or an admin may {action}.",
        ]
    unchanged = (await client.get(path, headers=auth)).json()["body"]
    assert unchanged == admins["body"] | {"updated": unchanged["updated"]}
    assert unchanged["updated"] == admins["body"]["updated"]

    # The member's own trigger: the member may change it, and so may an admin.
    body = trigger_body(hook, name="members")
    members = (await client.post(TRIGGERS, json=body, headers=member_auth)).json()
    own = f"{TRIGGERS}/{members['id']}"
    changed = await client.put(own, json=change, headers=member_auth)
    assert changed.status_code == 200, changed.text
    assert changed.json()["body"]["snapshot_id"] == change["snapshot_id"]
    assert (await client.put(own, json={"active": True}, headers=auth)).status_code == 200
    assert (
        await client.delete(own, params={"soft": "false"}, headers=member_auth)
    ).status_code == 200
    assert (await client.delete(path, params={"soft": "false"}, headers=auth)).status_code == 200
