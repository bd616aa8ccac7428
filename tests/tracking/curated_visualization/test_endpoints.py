"""``/curated_visualizations``: an artifact version's visualization shown on a resource,
the reference's envelope (no name, no creator, the visualization only when hydrated), its
checks (the resource and visualization exist, one project, one link per resource, one
display order per resource), updates and deletes."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.tracking.artifact.support import Headers, new_project
from tests.tracking.artifact_version.support import create_version
from tests.tracking.pipeline_run.support import create_pipeline

CURATED = "/api/v1/curated_visualizations"
Json = dict[str, Any]


async def visualization(tracking: httpx.AsyncClient, auth: Headers, project: Json) -> Json:
    version = await create_version(
        tracking,
        auth,
        project,
        f"a-{uuid.uuid4().hex[:6]}",
        visualizations=[{"type": "html", "uri": "/nowhere/v.html"}],
    )
    got = await tracking.get(f"/api/v1/artifact_versions/{version['id']}", headers=auth)
    found: Json = got.json()["metadata"]["visualizations"][0]
    return {**found, "artifact_version_id": version["id"]}


async def post_curated(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, shown: Json, **extra: Any
) -> httpx.Response:
    body = {
        "project": project["id"],
        "artifact_visualization_id": shown["id"],
        "resource_id": project["id"],
        "resource_type": "project",
        **extra,
    }
    return await tracking.post(CURATED, json=body, headers=auth)


async def test_create_renders_the_reference_envelope(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    shown = await visualization(tracking, auth, default_project)
    pipeline = await create_pipeline(tracking, auth, default_project, "curated")
    response = await post_curated(
        tracking,
        auth,
        default_project,
        shown,
        resource_id=pipeline["id"],
        resource_type="pipeline",
        display_name="Loss",
        display_order=1,
        layout_size="half_width",
    )
    assert response.status_code == 200, response.text
    curated = response.json()
    assert list(curated) == ["body", "metadata", "resources", "id", "permission_denied"]
    body = curated["body"]
    assert body["user_id"] is None
    assert (body["artifact_visualization_id"], body["artifact_version_id"]) == (
        shown["id"],
        shown["artifact_version_id"],
    )
    assert (body["display_name"], body["display_order"], body["layout_size"]) == (
        "Loss",
        1,
        "half_width",
    )
    assert (body["resource_id"], body["resource_type"]) == (pipeline["id"], "pipeline")
    assert curated["metadata"] == {}
    assert curated["resources"]["artifact_visualization"]["body"]["type"] == "html"
    got = await tracking.get(f"{CURATED}/{curated['id']}", headers=auth)
    assert got.json() == curated
    bare = (await tracking.get(f"{CURATED}/{curated['id']}?hydrate=false", headers=auth)).json()
    assert (bare["metadata"], bare["resources"]) == (None, None)


async def test_create_checks_resources_projects_and_clashes(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    shown = await visualization(tracking, auth, default_project)
    missing = str(uuid.uuid4())
    no_run = await post_curated(
        tracking, auth, default_project, shown, resource_id=missing, resource_type="pipeline_run"
    )
    assert no_run.status_code == 404
    assert no_run.json()["detail"][1] == (
        f"Unable to get pipeline run with ID '{missing}': No pipeline run with this ID found"
    )
    no_model = await post_curated(
        tracking, auth, default_project, shown, resource_id=missing, resource_type="model"
    )
    assert no_model.status_code == 404
    gone = await post_curated(tracking, auth, default_project, {"id": missing})
    assert gone.status_code == 404
    other = await new_project(tracking, auth, f"p-{uuid.uuid4().hex[:6]}")
    elsewhere = await post_curated(tracking, auth, other, shown, resource_id=other["id"])
    assert elsewhere.status_code == 403
    assert elsewhere.json()["detail"][1] == (
        "Curated visualizations must target the same project as the artifact visualization."
    )
    mixed = await post_curated(tracking, auth, default_project, shown, resource_id=other["id"])
    assert mixed.status_code == 403
    assert mixed.json()["detail"][1].startswith(f"Resource project with ID {other['id']}")
    first = await post_curated(tracking, auth, default_project, shown, display_order=3)
    assert first.status_code == 200, first.text
    twice = await post_curated(tracking, auth, default_project, shown)
    assert twice.status_code == 409
    second = await visualization(tracking, auth, default_project)
    same_order = await post_curated(tracking, auth, default_project, second, display_order=3)
    assert same_order.status_code == 409
    assert "already uses the display order '3'" in same_order.json()["detail"][1]
    negative = await post_curated(tracking, auth, default_project, second, display_order=-1)
    assert negative.status_code == 422


async def test_update_and_delete(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    first = (
        await post_curated(
            tracking,
            auth,
            default_project,
            await visualization(tracking, auth, default_project),
            display_order=1,
            display_name="first",
        )
    ).json()
    second = (
        await post_curated(
            tracking,
            auth,
            default_project,
            await visualization(tracking, auth, default_project),
            display_order=2,
        )
    ).json()
    clash = await tracking.put(f"{CURATED}/{second['id']}", json={"display_order": 1}, headers=auth)
    assert clash.status_code == 409
    keep_own = await tracking.put(
        f"{CURATED}/{first['id']}", json={"display_order": 1, "layout_size": None}, headers=auth
    )
    assert keep_own.status_code == 200, keep_own.text
    assert keep_own.json()["body"]["layout_size"] == "full_width"
    cleared = await tracking.put(
        f"{CURATED}/{first['id']}", json={"display_order": None, "display_name": None}, headers=auth
    )
    body = cleared.json()["body"]
    assert (body["display_order"], body["display_name"]) == (None, None)
    deleted = await tracking.delete(f"{CURATED}/{first['id']}", headers=auth)
    assert deleted.status_code == 200, deleted.text
    gone = await tracking.get(f"{CURATED}/{first['id']}", headers=auth)
    assert gone.status_code == 404
    assert gone.json()["detail"][1].startswith("Unable to get curated visualization with ID")
