"""Schedules: created with their references checked, read, listed, deleted."""

from __future__ import annotations

import uuid

import httpx

from tests.tracking.artifact.support import Headers, new_project
from tests.tracking.artifact_version.support import Json
from tests.tracking.pipeline_run.support import create_pipeline

SCHEDULES = "/api/v1/schedules"


def schedule_body(project: Json, name: str = "nightly", **extra: object) -> Json:
    body: Json = {
        "project": project["id"],
        "name": name,
        "active": True,
        "cron_expression": "0 3 * * *",
        "orchestrator_id": None,
        "pipeline_id": None,
    }
    body.update(extra)
    return body


async def test_create_and_get_a_schedule(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    pipeline = await create_pipeline(tracking, auth, default_project)
    orchestrators = await tracking.get("/api/v1/components?type=orchestrator", headers=auth)
    orchestrator = orchestrators.json()["items"][0]["id"]
    body = schedule_body(
        default_project,
        pipeline_id=pipeline["id"],
        orchestrator_id=orchestrator,
        interval_second="PT1H",  # as the zenml client sends a timedelta
        start_time="2026-11-22T10:00:00",
    )
    response = await tracking.post(SCHEDULES, json=body, headers=auth)
    assert response.status_code == 200, response.text
    made = response.json()
    assert made["body"]["active"] is True
    assert made["body"]["cron_expression"] == "0 3 * * *"
    assert made["body"]["interval_second"] == "PT1H"
    assert made["body"]["start_time"] == "2026-11-22T10:00:00"
    assert made["body"]["is_archived"] is False
    assert made["metadata"] == {
        "orchestrator_id": orchestrator,
        "pipeline_id": pipeline["id"],
        "run_metadata": {},
    }
    got = await tracking.get(f"{SCHEDULES}/{made['id']}", headers=auth)
    assert got.json() == made


async def test_schedule_without_a_way_to_run_is_400(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    body = schedule_body(default_project, cron_expression=None)
    assert (await tracking.post(SCHEDULES, json=body, headers=auth)).status_code == 400


async def test_orchestrator_must_be_an_orchestrator(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    stores = await tracking.get("/api/v1/components?type=artifact_store", headers=auth)
    body = schedule_body(default_project, orchestrator_id=stores.json()["items"][0]["id"])
    response = await tracking.post(SCHEDULES, json=body, headers=auth)
    assert response.status_code == 400
    missing = schedule_body(default_project, orchestrator_id=str(uuid.uuid4()))
    assert (await tracking.post(SCHEDULES, json=missing, headers=auth)).status_code == 404


async def test_pipeline_must_be_in_the_project(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    other = await new_project(tracking, auth, "other")
    pipeline = await create_pipeline(tracking, auth, other)
    body = schedule_body(default_project, pipeline_id=pipeline["id"])
    assert (await tracking.post(SCHEDULES, json=body, headers=auth)).status_code == 404


async def test_list_filters_and_delete(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    first = (
        await tracking.post(SCHEDULES, json=schedule_body(default_project, "a"), headers=auth)
    ).json()
    await tracking.post(
        SCHEDULES, json=schedule_body(default_project, "b", active=False), headers=auth
    )
    listed = await tracking.get(SCHEDULES, params={"active": "false"}, headers=auth)
    assert [s["name"] for s in listed.json()["items"]] == ["b"]
    clash = await tracking.post(SCHEDULES, json=schedule_body(default_project, "a"), headers=auth)
    assert clash.status_code == 409
    assert (await tracking.delete(f"{SCHEDULES}/{first['id']}", headers=auth)).status_code == 200
    assert (await tracking.get(f"{SCHEDULES}/{first['id']}", headers=auth)).status_code == 404


async def test_list_filters_on_the_interval_in_seconds(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    for name, interval in (("hourly", "PT1H"), ("brisk", "PT1.5S"), ("cron", None)):
        body = schedule_body(default_project, name, interval_second=interval)
        assert (await tracking.post(SCHEDULES, json=body, headers=auth)).status_code == 200

    async def names(interval_second: str) -> list[str]:
        params = {"interval_second": interval_second, "sort_by": "name"}
        response = await tracking.get(SCHEDULES, params=params, headers=auth)
        assert response.status_code == 200, response.text
        return [s["name"] for s in response.json()["items"]]

    assert await names("3600") == ["hourly"]
    assert await names("equals:1.5") == ["brisk"]
    assert await names("gt:1.5") == ["hourly"]
    assert await names("lte:3.6e3") == ["brisk", "hourly"]
    assert await names("notequals:3600") == ["brisk", "cron"]
    assert await names("isnull:") == ["cron"]
    assert await names("") == ["brisk", "cron", "hourly"]


async def test_a_malformed_interval_filter_is_422(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    for value in ("hourly", "nan", "gt:", "contains:1", "oneof:[1]", "isnull:1"):
        response = await tracking.get(SCHEDULES, params={"interval_second": value}, headers=auth)
        assert response.status_code == 422, value
        assert response.json()["detail"][0]["loc"] == ["query", "interval_second"], value


async def test_update_deactivates_and_renames_a_schedule(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    created = await tracking.post(SCHEDULES, json=schedule_body(default_project), headers=auth)
    path = f"{SCHEDULES}/{created.json()['id']}"
    body = {"active": False, "name": "weekly", "cron_expression": "0 3 * * 1"}
    updated = await tracking.put(path, json=body, headers=auth)
    assert updated.status_code == 200, updated.text
    assert updated.json()["name"] == "weekly"
    assert updated.json()["body"]["active"] is False
    assert updated.json()["body"]["cron_expression"] == "0 3 * * 1"
    assert (await tracking.get(path, headers=auth)).json() == updated.json()
    # Fields left out (or null) keep their value.
    again = await tracking.put(path, json={"active": None}, headers=auth)
    assert again.json()["body"]["active"] is False


async def test_an_empty_name_is_taken_as_the_reference_takes_it(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    created = await tracking.post(SCHEDULES, json=schedule_body(default_project, ""), headers=auth)
    assert created.status_code == 200, created.text
    assert created.json()["name"] == ""
    other = await tracking.post(SCHEDULES, json=schedule_body(default_project), headers=auth)
    renamed = await tracking.put(
        f"{SCHEDULES}/{other.json()['id']}", json={"name": ""}, headers=auth
    )
    assert renamed.status_code == 409  # the empty name is taken


async def test_update_to_a_taken_name_is_409_and_of_an_unknown_schedule_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    await tracking.post(SCHEDULES, json=schedule_body(default_project, "a"), headers=auth)
    other = await tracking.post(SCHEDULES, json=schedule_body(default_project, "b"), headers=auth)
    taken = await tracking.put(
        f"{SCHEDULES}/{other.json()['id']}", json={"name": "a"}, headers=auth
    )
    assert taken.status_code == 409
    assert taken.json()["detail"][0] == "EntityExistsError"
    missing = await tracking.put(f"{SCHEDULES}/{uuid.uuid4()}", json={"active": True}, headers=auth)
    assert missing.status_code == 404


async def test_metadata_logged_on_a_schedule_shows_in_its_run_metadata(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    made = await tracking.post(SCHEDULES, json=schedule_body(default_project), headers=auth)
    schedule_id = made.json()["id"]
    logged = {
        "project": default_project["id"],
        "resources": [{"id": schedule_id, "type": "schedule"}],
        "values": {"owner": "ops", "retries": 3},
        "types": {"owner": "str", "retries": "int"},
    }
    assert (await tracking.post("/api/v1/run-metadata", json=logged, headers=auth)).is_success
    expected = {"owner": "ops", "retries": 3}
    got = await tracking.get(f"{SCHEDULES}/{schedule_id}", headers=auth)
    assert got.json()["metadata"]["run_metadata"] == expected
    renamed = await tracking.put(f"{SCHEDULES}/{schedule_id}", json={"name": "b"}, headers=auth)
    assert renamed.json()["metadata"]["run_metadata"] == expected
    page = await tracking.get(SCHEDULES, params={"hydrate": "true"}, headers=auth)
    assert [s["metadata"]["run_metadata"] for s in page.json()["items"]] == [expected]
    plain = await tracking.get(SCHEDULES, headers=auth)
    assert [s["metadata"] for s in plain.json()["items"]] == [None]
