"""``/triggers``: this server runs no triggers, so it creates none (501); the list and get
answer what another writer put in the table, in the reference's shapes and filters."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import httpx

from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers
from tests.tracking.pipeline_run.support import create_snapshot
from tracking.models import Trigger, TriggerSnapshot

Json = dict[str, Any]
TRIGGERS = "/api/v1/triggers"


async def stored(app: LifespanApp, project: Json, name: str, **columns: Any) -> uuid.UUID:
    """A trigger written straight into tracking's table (no route creates one)."""
    values: dict[str, Any] = {
        "project_id": uuid.UUID(project["id"]),
        "name": name,
        "type": "schedule",
        "flavor": "native schedule",
        "concurrency": "skip",
        "configuration": {"cron_expression": "0 * * * *", "max_runs": 3},
        **columns,
    }
    trigger = Trigger(**values)
    async with app.state["sessionmaker"]() as session, session.begin():
        session.add(trigger)
    return trigger.id


async def listed(tracking: httpx.AsyncClient, auth: Headers, *params: tuple[str, str]) -> Json:
    response = await tracking.get(TRIGGERS, params=list(params), headers=auth)
    assert response.status_code == 200, response.text
    page: Json = response.json()
    return page


async def test_an_empty_table_is_an_empty_page(tracking: httpx.AsyncClient, auth: Headers) -> None:
    page = await listed(tracking, auth)
    assert (page["total"], page["items"], page["total_pages"]) == (0, [], 1)


async def test_writes_are_not_implemented(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    body = {"project": default_project["id"], "name": "hourly", "type": "schedule"}
    created = await tracking.post(TRIGGERS, json=body, headers=auth)
    assert created.status_code == 501
    assert created.json()["detail"][0] == "NotImplementedError"
    one = f"{TRIGGERS}/{uuid.uuid4()}"
    assert (await tracking.put(one, json=body, headers=auth)).status_code == 501
    assert (await tracking.delete(one, headers=auth)).status_code == 501
    assert (await listed(tracking, auth))["total"] == 0


async def test_schedules_and_platform_events_render_in_their_shapes(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_app: LifespanApp
) -> None:
    next_run = dt.datetime(2026, 12, 1, 10, 0, tzinfo=dt.UTC)
    schedule_id = await stored(tracking_app, default_project, "hourly", next_occurrence=next_run)
    source = f"pipeline_run:{uuid.uuid4()}"
    event_id = await stored(
        tracking_app,
        default_project,
        "on-success",
        type="platform_event",
        flavor="platform event",
        configuration={},
        source_entity=source,
        target_events="run_completed,run_failed",
    )
    snapshot = await create_snapshot(tracking, auth, default_project)
    async with tracking_app.state["sessionmaker"]() as session, session.begin():
        session.add(TriggerSnapshot(trigger_id=event_id, snapshot_id=uuid.UUID(snapshot["id"])))

    schedule = (await tracking.get(f"{TRIGGERS}/{schedule_id}", headers=auth)).json()
    assert list(schedule) == ["body", "metadata", "resources", "id", "permission_denied"]
    body = schedule["body"]
    assert (body["name"], body["type"], body["flavor"]) == ("hourly", "schedule", "native schedule")
    assert (body["cron_expression"], body["max_runs"], body["interval"]) == ("0 * * * *", 3, None)
    assert body["next_occurrence"] == "2026-12-01T10:00:00"
    assert schedule["metadata"] == {}
    event = (await tracking.get(f"{TRIGGERS}/{event_id}", headers=auth)).json()
    assert event["body"]["source_entity"] == dict(
        zip(("type", "id"), source.split(":"), strict=True)
    )
    assert event["body"]["target_events"] == ["run_completed", "run_failed"]
    assert [s["id"] for s in event["resources"]["executable_snapshots"]] == [snapshot["id"]]
    assert [s["id"] for s in event["resources"]["snapshots"]] == [snapshot["id"]]
    assert "cron_expression" not in event["body"]


async def test_list_filters_and_leaves_archived_triggers_out(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_app: LifespanApp
) -> None:
    hourly = await stored(tracking_app, default_project, "hourly")
    paused = await stored(tracking_app, default_project, "paused", active=False)
    archived = await stored(tracking_app, default_project, "old", is_archived=True)

    async def ids(*params: tuple[str, str]) -> list[str]:
        return [item["id"] for item in (await listed(tracking, auth, *params))["items"]]

    assert await ids() == [str(hourly), str(paused)]
    assert await ids(("active", "false")) == [str(paused)]
    assert await ids(("is_archived", "true")) == [str(archived)]
    assert await ids(("name", "contains:our")) == [str(hourly)]
    assert await ids(("type", "platform_event")) == []
    assert await ids(("snapshot_id", str(uuid.uuid4()))) == []
    assert await ids(("sort_by", "desc:name")) == [str(paused), str(hourly)]
    assert await ids(("concurrency", "sometimes")) == []  # no such value: nothing matches
    missing = await tracking.get(f"{TRIGGERS}/{uuid.uuid4()}", headers=auth)
    assert (missing.status_code, missing.json()["detail"][0]) == (404, "KeyError")
