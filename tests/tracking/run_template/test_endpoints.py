"""``/run_templates``: made only from a snapshot built remotely for a stack without local
components (the reference's 400s), the snapshot named after a visible template, the
envelope with the snapshot's pipeline, build and latest run, filters through the snapshot,
updates with tags, deletes that release the snapshots, and no ``/runs`` (404)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import delete
from sqlmodel import col

from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers, names
from tests.tracking.component.support import create_component
from tests.tracking.component.test_s3_flavor import post_s3, s3_configuration
from tests.tracking.pipeline_build.support import create_build
from tests.tracking.pipeline_run.support import create_pipeline, create_snapshot
from tracking.models import StackComposition

TEMPLATES = "/api/v1/run_templates"
Json = dict[str, Any]


async def remote_stack(tracking: httpx.AsyncClient, auth: Headers, app: LifespanApp) -> str:
    """A stack of one S3 artifact store: nothing local in it. This server's only
    orchestrator flavor is local (so no stack made through the API can back a template,
    as on the reference with local orchestrators); the stack is made with one, which is
    then taken out of it in the database."""
    store = await post_s3(tracking, auth, s3_configuration(), name=f"s3-{uuid.uuid4().hex[:6]}")
    assert store.status_code == 200, store.text
    runner = await create_component(
        tracking, auth, f"runner-{uuid.uuid4().hex[:6]}", "orchestrator"
    )
    body = {
        "name": f"remote-{uuid.uuid4().hex[:6]}",
        "components": {"artifact_store": [store.json()["id"]], "orchestrator": [runner["id"]]},
    }
    response = await tracking.post("/api/v1/stacks", json=body, headers=auth)
    assert response.status_code == 200, response.text
    stack_id: str = response.json()["id"]
    async with app.state["sessionmaker"]() as session:
        await session.exec(
            delete(StackComposition).where(
                col(StackComposition.component_id) == uuid.UUID(runner["id"])
            )
        )
        await session.commit()
    return stack_id


async def templatable(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, stack_id: str
) -> Json:
    """A snapshot built remotely (``is_local`` false) for ``stack_id``."""
    pipeline = await create_pipeline(tracking, auth, project, uuid.uuid4().hex[:8])
    build = await create_build(
        tracking, auth, project, pipeline=pipeline["id"], stack=stack_id, is_local=False
    )
    spec = {"version": "0.4", "steps": [], "parameters": {}}
    return await create_snapshot(
        tracking, auth, project, pipeline, build=build["id"], pipeline_spec=spec
    )


@pytest.fixture
async def source(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_app: LifespanApp
) -> Json:
    """A snapshot that can back a template."""
    stack_id = await remote_stack(tracking, auth, tracking_app)
    return await templatable(tracking, auth, default_project, stack_id)


async def post_template(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, snapshot: Json, **extra: Any
) -> httpx.Response:
    body = {
        "project": project["id"],
        "name": f"template-{uuid.uuid4().hex[:6]}",
        "source_snapshot_id": snapshot["id"],
        **extra,
    }
    return await tracking.post(TEMPLATES, json=body, headers=auth)


async def test_create_renders_the_reference_envelope_and_names_the_snapshot(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_app: LifespanApp
) -> None:
    stack_id = await remote_stack(tracking, auth, tracking_app)
    snapshot = await templatable(tracking, auth, default_project, stack_id)
    response = await post_template(
        tracking,
        auth,
        default_project,
        snapshot,
        name="nightly",
        description="every night",
        tags=["prod"],
    )
    assert response.status_code == 200, response.text
    template = response.json()
    assert list(template) == ["body", "metadata", "resources", "id", "permission_denied", "name"]
    assert template["name"] == "nightly"
    body = template["body"]
    assert (body["runnable"], body["hidden"], body["project_id"]) == (
        True,
        False,
        default_project["id"],
    )
    metadata = template["metadata"]
    assert metadata["description"] == "every night"
    assert metadata["pipeline_spec"]["version"] == "0.4"
    resources = template["resources"]
    assert resources["source_snapshot"]["id"] == snapshot["id"]
    assert resources["source_snapshot"]["metadata"] is None
    assert resources["pipeline"]["id"] == snapshot["body"]["pipeline_id"]
    assert resources["build"]["body"]["project_id"] == default_project["id"]
    assert [t["name"] for t in resources["tags"]] == ["prod"]
    assert (resources["latest_run_id"], resources["latest_run_status"]) == (None, None)
    named = await tracking.get(f"/api/v1/pipeline_snapshots/{snapshot['id']}", headers=auth)
    assert named.json()["name"] == "nightly"
    assert named.json()["metadata"]["description"] == "every night"
    got = await tracking.get(f"{TEMPLATES}/{template['id']}", headers=auth)
    assert got.json() == template
    bare = await tracking.get(f"{TEMPLATES}/{template['id']}?hydrate=false", headers=auth)
    assert bare.json()["metadata"] is None


async def test_hidden_template_leaves_the_snapshot_unnamed(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, source: Json
) -> None:
    response = await post_template(tracking, auth, default_project, source, hidden=True)
    assert response.status_code == 200, response.text
    assert response.json()["body"]["hidden"] is True
    named = await tracking.get(f"/api/v1/pipeline_snapshots/{source['id']}", headers=auth)
    assert named.json()["name"] is None


async def test_create_refuses_snapshots_that_cannot_back_a_template(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_app: LifespanApp
) -> None:
    unbuilt = await create_snapshot(tracking, auth, default_project)
    response = await post_template(tracking, auth, default_project, unbuilt)
    assert response.status_code == 400
    assert response.json()["detail"][0] == "ValueError"
    assert "there is no associated build" in response.json()["detail"][1]
    # The default stack's orchestrator and artifact store are local.
    local = await create_build(tracking, auth, default_project, is_local=False)
    stacked = await tracking.get("/api/v1/stacks", params={"name": "default"}, headers=auth)
    default_stack = stacked.json()["items"][0]["id"]
    no_stack = await create_snapshot(tracking, auth, default_project, build=local["id"])
    response = await post_template(tracking, auth, default_project, no_stack)
    assert "the associated build has no stack reference" in response.json()["detail"][1]
    built = await create_build(tracking, auth, default_project, stack=default_stack)
    on_local = await create_snapshot(tracking, auth, default_project, build=built["id"])
    response = await post_template(tracking, auth, default_project, on_local)
    assert response.status_code == 400
    assert "contains local components" in response.json()["detail"][1]
    missing = await post_template(tracking, auth, default_project, {"id": str(uuid.uuid4())})
    assert missing.status_code == 404
    assert missing.json()["detail"][0] == "KeyError"


async def test_names_are_unique_in_a_project(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, source: Json
) -> None:
    first = await post_template(tracking, auth, default_project, source, name="same")
    assert first.status_code == 200, first.text
    again = await post_template(tracking, auth, default_project, source, name="same")
    assert again.status_code == 409
    assert again.json()["detail"][0] == "EntityExistsError"
    other = await post_template(tracking, auth, default_project, source, name="other")
    renamed = await tracking.put(
        f"{TEMPLATES}/{other.json()['id']}", json={"name": "same"}, headers=auth
    )
    assert renamed.status_code == 409


async def test_list_filters_through_the_source_snapshot(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_app: LifespanApp
) -> None:
    stack_id = await remote_stack(tracking, auth, tracking_app)
    first = await templatable(tracking, auth, default_project, stack_id)
    second = await templatable(tracking, auth, default_project, stack_id)
    await post_template(tracking, auth, default_project, first, name="a-first")
    await post_template(tracking, auth, default_project, second, name="b-second", hidden=True)
    listed = await tracking.get(TEMPLATES, params={"sort_by": "asc:name"}, headers=auth)
    assert names(listed) == ["a-first", "b-second"]
    assert listed.json()["items"][0]["metadata"] is None
    pipeline_id = first["body"]["pipeline_id"]
    by_pipeline = await tracking.get(TEMPLATES, params={"pipeline_id": pipeline_id}, headers=auth)
    assert names(by_pipeline) == ["a-first"]
    pipeline = await tracking.get(f"/api/v1/pipelines/{pipeline_id}", headers=auth)
    by_name = await tracking.get(
        TEMPLATES, params={"pipeline": pipeline.json()["name"]}, headers=auth
    )
    assert names(by_name) == ["a-first"]
    assert names(await tracking.get(TEMPLATES, params={"hidden": "true"}, headers=auth)) == [
        "b-second"
    ]
    # The snapshot's stack (not its build's), as the reference.
    snapshot_stack = first["resources"]["stack"]["id"]
    by_stack = await tracking.get(TEMPLATES, params={"stack_id": snapshot_stack}, headers=auth)
    assert len(names(by_stack)) == 2
    other_stack = await tracking.get(TEMPLATES, params={"stack_id": stack_id}, headers=auth)
    assert names(other_stack) == []
    none = await tracking.get(
        TEMPLATES, params={"code_repository_id": str(uuid.uuid4())}, headers=auth
    )
    assert names(none) == []
    scoped = await tracking.get(
        f"/api/v1/workspaces/{default_project['name']}/run_templates", headers=auth
    )
    assert len(names(scoped)) == 2


async def test_latest_run_is_of_a_snapshot_made_from_the_template(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, source: Json
) -> None:
    template = (await post_template(tracking, auth, default_project, source)).json()
    made = await create_snapshot(tracking, auth, default_project, template=template["id"])
    body = {
        "project": default_project["id"],
        "name": f"run-{uuid.uuid4().hex[:6]}",
        "snapshot": made["id"],
        "status": "completed",
    }
    response = await tracking.post("/api/v1/runs", json=body, headers=auth)
    assert response.status_code == 200, response.text
    run = response.json()[0]
    got = (await tracking.get(f"{TEMPLATES}/{template['id']}", headers=auth)).json()
    assert got["resources"]["latest_run_id"] == run["id"]
    assert got["resources"]["latest_run_status"] == "completed"
    listed = await tracking.get(TEMPLATES, params={"id": template["id"]}, headers=auth)
    assert listed.json()["items"][0]["resources"]["latest_run_id"] == run["id"]


async def test_update_changes_fields_and_tags(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, source: Json
) -> None:
    created = (await post_template(tracking, auth, default_project, source, tags=["a"])).json()
    response = await tracking.put(
        f"{TEMPLATES}/{created['id']}",
        json={"description": "new", "hidden": True, "add_tags": ["b"], "remove_tags": ["a"]},
        headers=auth,
    )
    assert response.status_code == 200, response.text
    updated = response.json()
    assert (updated["metadata"]["description"], updated["body"]["hidden"]) == ("new", True)
    assert [t["name"] for t in updated["resources"]["tags"]] == ["b"]
    assert updated["body"]["updated"] >= created["body"]["updated"]
    tagged = await tracking.get(TEMPLATES, params={"tags": "b"}, headers=auth)
    assert names(tagged) == [created["name"]]


async def test_delete_releases_the_snapshots_made_from_it(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, source: Json
) -> None:
    template = (await post_template(tracking, auth, default_project, source)).json()
    made = await create_snapshot(tracking, auth, default_project, template=template["id"])
    deleted = await tracking.delete(f"{TEMPLATES}/{template['id']}", headers=auth)
    assert deleted.status_code == 200, deleted.text
    gone = await tracking.get(f"{TEMPLATES}/{template['id']}", headers=auth)
    assert gone.status_code == 404
    assert gone.json()["detail"][1].startswith("Unable to get run template with ID")
    kept = await tracking.get(f"/api/v1/pipeline_snapshots/{made['id']}", headers=auth)
    assert kept.json()["metadata"]["template_id"] is None


async def test_templates_are_not_run_here(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, source: Json
) -> None:
    """As the reference's server without a workload manager: no such route."""
    template = (await post_template(tracking, auth, default_project, source)).json()
    response = await tracking.post(f"{TEMPLATES}/{template['id']}/runs", json={}, headers=auth)
    assert response.status_code == 404


async def test_bad_input_is_a_422(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_app: LifespanApp
) -> None:
    response = await tracking.post(
        TEMPLATES, json={"project": default_project["id"], "name": "x"}, headers=auth
    )
    assert response.status_code == 422
    response = await tracking.get(f"{TEMPLATES}/not-an-id", headers=auth)
    assert response.status_code == 422
