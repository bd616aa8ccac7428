"""``POST /runs/statistics``: a project's runs, filtered as the runs list filters them,
grouped and aggregated as the reference answers."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.tracking.artifact.support import Headers
from tests.tracking.artifact_version.support import create_version
from tests.tracking.pipeline_run.support import create_run
from tests.tracking.run_metadata.test_endpoints import METADATA, request
from tests.tracking.step_run.support import post_run, post_step, two_step_snapshot

Json = dict[str, Any]
STATISTICS = "/api/v1/runs/statistics"


async def statistics(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, **body: Any
) -> Json:
    body["filter"] = {"project": project["id"], **body.get("filter", {})}
    response = await tracking.post(STATISTICS, json=body, headers=auth)
    assert response.status_code == 200, response.text
    answer: Json = response.json()
    return answer


async def timed_run(
    tracking: httpx.AsyncClient, auth: Headers, snapshot: Json, start: str, end: str | None
) -> Json:
    status = "running" if end is None else "failed"
    run, _ = await post_run(tracking, auth, snapshot, status=status, start_time=start, end_time=end)
    return run


async def test_runs_are_counted_per_status_and_pipeline_with_their_durations(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    first = await two_step_snapshot(tracking, auth, default_project)
    second = await two_step_snapshot(tracking, auth, default_project)
    await timed_run(tracking, auth, first, "2026-11-20T10:00:00", "2026-11-20T10:00:30")
    await timed_run(tracking, auth, first, "2026-11-20T11:00:00", "2026-11-20T11:00:10")
    await timed_run(tracking, auth, second, "2026-11-24T09:00:00", None)
    duration = {"name": "took", "aggregation": "avg", "source": "duration"}
    longest = {"name": "longest", "aggregation": "max", "source": "duration"}
    total = await statistics(tracking, auth, default_project, metrics=[duration, longest])
    assert total == {
        "groups": [{"group_keys": {}, "metrics": {"took": 20.0, "longest": 30.0}, "run_count": 3}],
        "truncated": False,
    }
    by = [{"name": "state", "type": "status"}, {"name": "p", "type": "pipeline"}]
    grouped = await statistics(tracking, auth, default_project, groupings=by, metrics=[duration])
    assert grouped["groups"] == [
        {
            "group_keys": {"state": "failed", "p": first["body"]["pipeline_id"]},
            "metrics": {"took": 20.0},
            "run_count": 2,
        },
        {
            "group_keys": {"state": "running", "p": second["body"]["pipeline_id"]},
            "metrics": {"took": None},
            "run_count": 1,
        },
    ]
    # The runs list's filters apply first.
    running = await statistics(
        tracking, auth, default_project, filter={"status": "running"}, groupings=by[:1]
    )
    assert running["groups"] == [
        {"group_keys": {"state": "running"}, "metrics": {}, "run_count": 1}
    ]


async def test_time_buckets_ascend_and_a_limit_keeps_the_latest(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await two_step_snapshot(tracking, auth, default_project)
    for start in ("2026-11-02T10:15:00", "2026-11-04T23:59:00", "2026-11-10T00:00:00"):
        await timed_run(tracking, auth, snapshot, start, None)
    weeks = [{"name": "week", "type": "time", "granularity": "week"}]
    answer = await statistics(tracking, auth, default_project, groupings=weeks)
    assert [(g["group_keys"]["week"], g["run_count"]) for g in answer["groups"]] == [
        ("2026-11-02", 2),
        ("2026-11-09", 1),
    ]
    hours = [{"name": "hour", "type": "time", "granularity": "hour"}]
    latest = await statistics(tracking, auth, default_project, groupings=hours, max_groups=2)
    assert latest["truncated"] is True
    assert [g["group_keys"]["hour"] for g in latest["groups"]] == [
        "2026-11-04 23:00:00",
        "2026-11-10 00:00:00",
    ]
    months = [{"name": "m", "type": "time", "granularity": "month"}]
    answer = await statistics(tracking, auth, default_project, groupings=months)
    assert answer["groups"] == [{"group_keys": {"m": "2026-11-01"}, "metrics": {}, "run_count": 3}]


async def test_steps_and_their_outputs_are_counted_per_run(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    snapshot = await two_step_snapshot(tracking, auth, default_project)
    run = await timed_run(tracking, auth, snapshot, "2026-11-20T10:00:00", None)
    idle = await timed_run(tracking, auth, snapshot, "2026-11-20T10:00:00", None)
    made = await create_version(tracking, auth, default_project, f"n-{uuid.uuid4().hex[:6]}")
    outputs = {"output": [made["id"]]}
    await post_step(tracking, auth, run, "make_number", status="completed", outputs=outputs)
    await post_step(tracking, auth, run, "double", status="cached")
    metrics = [
        {"name": source, "aggregation": "sum", "source": source}
        for source in ("step_count", "cached_step_count", "output_artifact_count")
    ]
    runs = [{"name": "run", "type": "snapshot"}]
    answer = await statistics(
        tracking,
        auth,
        default_project,
        groupings=runs,
        metrics=metrics,
        filter={"id": [run["id"], idle["id"]], "logical_operator": "or"},
    )
    assert answer["groups"] == [
        {
            "group_keys": {"run": snapshot["id"]},
            "metrics": {"step_count": 2.0, "cached_step_count": 1.0, "output_artifact_count": 1.0},
            "run_count": 2,
        }
    ]


async def test_runs_are_grouped_by_tag_and_by_metadata(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    both = await create_run(tracking, auth, default_project, tags=["nightly", "gpu"])
    nightly = await create_run(tracking, auth, default_project, tags=["nightly"])
    await create_run(tracking, auth, default_project)
    for run, loss, stage in ((both, 0.5, "dev"), (nightly, 1.5, "dev")):
        body = request(default_project, "pipeline_run", run["id"], loss=loss, stage=stage)
        assert (await tracking.post(METADATA, json=body, headers=auth)).status_code == 200
    tags = [{"name": "tag", "type": "tag"}]
    answer = await statistics(tracking, auth, default_project, groupings=tags)
    assert [(g["group_keys"]["tag"], g["run_count"]) for g in answer["groups"]] == [
        ("nightly", 2),
        ("gpu", 1),
        (None, 1),
    ]
    stages = [{"name": "stage", "type": "metadata", "metadata_key": "stage"}]
    losses = [
        {"name": "loss", "aggregation": "avg", "source": "metadata", "metadata_key": "loss"},
        {"name": "text", "aggregation": "max", "source": "metadata", "metadata_key": "stage"},
    ]
    answer = await statistics(tracking, auth, default_project, groupings=stages, metrics=losses)
    assert answer["groups"] == [
        {"group_keys": {"stage": "dev"}, "metrics": {"loss": 1.0, "text": None}, "run_count": 2},
        {"group_keys": {"stage": None}, "metrics": {"loss": None, "text": None}, "run_count": 1},
    ]


async def test_bad_requests_get_a_422_and_an_unknown_project_a_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    project = default_project["id"]
    status = {"name": "same", "type": "status"}
    bodies = [
        {"groupings": []},
        {"filter": {"project": project}, "groupings": [status, {**status, "type": "user"}]},
        {"filter": {"project": project}, "groupings": [{"name": "x", "type": "colour"}]},
        {"filter": {"project": project}, "max_groups": 0},
        {"filter": {"project": project, "status": None, "start_time_of_day": "noon"}},
        {"filter": {"project": project, "created": "gt:yesterday"}},
        {"filter": {"project": project, "size": 0}},
        {"filter": {"project": project, "scope_user": "nobody"}},
        {"filter": {"project": 7}},
        {"filter": {"project": project, "": "x"}},
        # JSON values other than text only where the filter's kind is theirs.
        {"filter": {"project": project, "status": 1}},
        {"filter": {"project": project, "name": ["a", True]}},
        {"filter": {"project": project, "in_progress": 1}},
        {"filter": {"project": project, "index": False}},
        {"filter": {"project": project, "index": [[1]]}},
        {"filter": {"project": project, "index": 1.5}},
        {"filter": {"project": project, "hydrate": "true"}},
        {"filter": {"project": project, "page": "2"}},
    ]
    for body in bodies:
        response = await tracking.post(STATISTICS, json=body, headers=auth)
        assert response.status_code == 422, (body, response.text)
    unknown = {"filter": {"project": str(uuid.uuid4())}}
    assert (await tracking.post(STATISTICS, json=unknown, headers=auth)).status_code == 404
    assert (await tracking.post(STATISTICS, json={"filter": {}})).status_code == 401


async def test_the_clients_whole_filter_is_read_as_the_runs_list_reads_it(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    """The zenml client sends every ``PipelineRunFilter`` field, unset ones as null, and
    the list's own parameters with their defaults."""
    await create_run(tracking, auth, default_project, status="completed")
    await create_run(tracking, auth, default_project, status="running")
    unset = ("id", "created", "name", "stack_id", "in_progress", "start_time", "end_time")
    sent = {
        "sort_by": "created",
        "logical_operator": "and",
        "page": 1,
        "size": 20.0,  # an integer to JSON Schema, as a body reads it
        "scope_user": None,
        "status": "completed",
        "root_runs_only": True,  # every run here is a root run
        "parent_run_id": "isnull:",
        "in_progress": False,
        "index": [1, "gte:1"],
        **dict.fromkeys(unset),
    }
    answer = await statistics(tracking, auth, default_project, filter=sent, max_groups=1000)
    assert answer == {
        "groups": [{"group_keys": {}, "metrics": {}, "run_count": 1}],
        "truncated": False,
    }


async def test_a_metadata_number_too_large_for_a_float_aggregates_to_null(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    run = await create_run(tracking, auth, default_project)
    body = request(default_project, "pipeline_run", run["id"], huge=10**400)
    assert (await tracking.post(METADATA, json=body, headers=auth)).status_code == 200
    metric = {"name": "m", "aggregation": "max", "source": "metadata", "metadata_key": "huge"}
    answer = await statistics(tracking, auth, default_project, metrics=[metric])
    assert answer["groups"] == [{"group_keys": {}, "metrics": {"m": None}, "run_count": 1}]


async def test_the_documented_filter_names_every_key_it_takes_and_no_other(
    tracking: httpx.AsyncClient,
) -> None:
    document = (await tracking.get("/openapi.json")).json()
    schema = document["components"]["schemas"]["RunStatisticsRequest"]["properties"]["filter"]
    assert schema["additionalProperties"] is False
    taken = set(schema["properties"])
    assert {"project", "scope_user", "page", "sort_by", "stack", "in_progress"} <= taken
    page = {"minimum": 1, "type": "integer"}
    assert schema["properties"]["page"] == {"anyOf": [page, {"type": "null"}]}
    assert {"type": "boolean"} in schema["properties"]["in_progress"]["anyOf"]
    assert {"type": "integer"} in schema["properties"]["index"]["anyOf"]
