"""Artifact versions: create (one and batch), numbering, get, update, delete, prune."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import httpx
import pytest

from tests.tracking.artifact.support import Headers
from tests.tracking.artifact_version.support import (
    DATA_TYPE,
    MATERIALIZER,
    VERSIONS,
    Json,
    create_version,
    default_store,
    list_versions,
    version_body,
    versions_of,
)
from tests.tracking.conftest import tracking_settings_for
from tests.tracking.pipeline_run.support import create_run, create_step
from tracking.settings import Settings


async def _run_with_step(
    tracking: httpx.AsyncClient,
    auth: Headers,
    project: Json,
    inputs: Json | None = None,
    outputs: Json | None = None,
) -> Json:
    """A pipeline run with one step linking artifact versions."""
    run = await create_run(tracking, auth, project)
    return await create_step(tracking, auth, project, run, inputs=inputs, outputs=outputs)


# --- create -------------------------------------------------------------------------------


async def test_create_returns_the_reference_shape_fully_hydrated(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await create_version(
        tracking,
        auth,
        default_project,
        tags=["b", "a"],
        metadata={"accuracy": 0.9, "note": "ok"},
        visualizations=[{"type": "html", "uri": "/x/v.html"}],
        content_hash="abc",
        item_count=3,
    )
    assert list(version) == ["body", "metadata", "resources", "id", "permission_denied"]
    body = version["body"]
    assert list(body) == [
        "created",
        "updated",
        "user_id",
        "project_id",
        "artifact",
        "version",
        "uri",
        "type",
        "materializer",
        "data_type",
        "save_type",
        "artifact_store_id",
        "content_hash",
        "item_count",
    ]
    assert body["version"] == "1"
    assert (body["materializer"], body["data_type"]) == (MATERIALIZER, DATA_TYPE)
    assert (body["content_hash"], body["item_count"]) == ("abc", 3)
    assert body["artifact"]["name"] == "model"
    assert (body["artifact"]["metadata"], body["artifact"]["resources"]) == (None, None)
    metadata = version["metadata"]
    assert metadata["run_metadata"] == {"accuracy": 0.9, "note": "ok"}
    (visualization,) = metadata["visualizations"]
    assert visualization["body"]["type"] == "html"
    assert visualization["body"]["uri"] == "/x/v.html"
    resources = version["resources"]
    assert [t["name"] for t in resources["tags"]] == ["a", "b"]
    assert resources["user"]["name"] == "default"
    assert (resources["producer_step_run_id"], resources["producer_pipeline_run_id"]) == (
        None,
        None,
    )


async def test_versions_are_numbered_per_artifact_from_one(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    made = [await create_version(tracking, auth, default_project, name) for name in "aab"]
    assert [v["body"]["version"] for v in made] == ["1", "2", "1"]


async def test_numbering_skips_string_versions_and_follows_the_highest_number(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    await create_version(tracking, auth, default_project, version=7)
    await create_version(tracking, auth, default_project, version="best")
    next_one = await create_version(tracking, auth, default_project)
    assert next_one["body"]["version"] == "8"


async def test_concurrent_creates_get_distinct_numbers(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    await create_version(tracking, auth, default_project)
    responses = await asyncio.gather(
        *(
            tracking.post(VERSIONS, json=version_body(default_project), headers=auth)
            for _ in range(8)
        )
    )
    assert [r.status_code for r in responses] == [200] * 8
    numbers = sorted(int(r.json()["body"]["version"]) for r in responses)
    assert numbers == list(range(2, 10))


async def test_concurrent_first_versions_of_a_new_artifact_share_it(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    responses = await asyncio.gather(
        *(
            tracking.post(VERSIONS, json=version_body(default_project, "fresh"), headers=auth)
            for _ in range(5)
        )
    )
    assert [r.status_code for r in responses] == [200] * 5
    assert len({r.json()["body"]["artifact"]["id"] for r in responses}) == 1
    assert sorted(r.json()["body"]["version"] for r in responses) == ["1", "2", "3", "4", "5"]


async def test_duplicate_version_is_409(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    await create_version(tracking, auth, default_project, version="v1")
    response = await tracking.post(
        VERSIONS, json=version_body(default_project, version="v1"), headers=auth
    )
    assert response.status_code == 409
    assert response.json()["detail"] == [
        "EntityExistsError",
        "Unable to create artifact version model (version v1): An artifact with the same "
        "name and version already exists.",
    ]


async def test_create_by_artifact_id(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    first = await create_version(tracking, auth, default_project)
    artifact_id = first["body"]["artifact"]["id"]
    body = version_body(default_project)
    del body["artifact_name"]
    response = await tracking.post(
        VERSIONS, json={**body, "artifact_id": artifact_id}, headers=auth
    )
    assert response.status_code == 200, response.text
    assert response.json()["body"]["version"] == "2"


async def test_unknown_artifact_id_is_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    body = version_body(default_project)
    del body["artifact_name"]
    response = await tracking.post(
        VERSIONS, json={**body, "artifact_id": str(uuid.uuid4())}, headers=auth
    )
    assert response.status_code == 404


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"artifact_name": None}, "Either artifact_name or artifact_id must be set."),
        (
            {"artifact_id": str(uuid.uuid4())},
            "Only one of artifact_name and artifact_id can be set.",
        ),
    ],
)
async def test_artifact_name_xor_id_is_422(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, change: Json, message: str
) -> None:
    response = await tracking.post(
        VERSIONS, json={**version_body(default_project), **change}, headers=auth
    )
    assert response.status_code == 422
    assert message in response.text


async def test_unknown_artifact_store_is_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    store_id = str(uuid.uuid4())
    response = await tracking.post(
        VERSIONS, json=version_body(default_project, artifact_store_id=store_id), headers=auth
    )
    assert response.status_code == 404
    assert response.json()["detail"][1] == (
        f"The artifact store with ID {store_id} referenced by the artifact version being "
        "created was not found"
    )


async def test_a_component_that_is_not_an_artifact_store_is_400(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    page = await tracking.get("/api/v1/components?type=orchestrator", headers=auth)
    orchestrator = page.json()["items"][0]["id"]
    response = await tracking.post(
        VERSIONS, json=version_body(default_project, artifact_store_id=orchestrator), headers=auth
    )
    assert response.status_code == 400
    assert "not an artifact store" in response.json()["detail"][1]


async def test_failed_create_leaves_no_new_artifact(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    body = version_body(default_project, "ghost", artifact_store_id=str(uuid.uuid4()))
    assert (await tracking.post(VERSIONS, json=body, headers=auth)).status_code == 404
    artifacts = await tracking.get("/api/v1/artifacts", params={"name": "ghost"}, headers=auth)
    assert artifacts.json()["total"] == 0


async def test_batch_creates_all_in_order(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    bodies = [version_body(default_project, name) for name in ("a", "a", "b")]
    response = await tracking.post(f"{VERSIONS}/batch", json=bodies, headers=auth)
    assert response.status_code == 200, response.text
    made = response.json()
    assert [(v["body"]["artifact"]["name"], v["body"]["version"]) for v in made] == [
        ("a", "1"),
        ("a", "2"),
        ("b", "1"),
    ]
    assert all(v["metadata"] is not None for v in made)


async def test_batch_spans_projects_and_existing_artifacts(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    from tests.tracking.artifact.support import new_project

    other = await new_project(tracking, auth, "other")
    await create_version(tracking, auth, default_project, "a", version=5)
    bodies = [
        version_body(default_project, "a", has_custom_name=True),
        version_body(other, "a"),
        version_body(default_project, "a", metadata={"k": "v"}),
    ]
    response = await tracking.post(f"{VERSIONS}/batch", json=bodies, headers=auth)
    assert response.status_code == 200, response.text
    made = response.json()
    assert [(v["body"]["project_id"], v["body"]["version"]) for v in made] == [
        (default_project["id"], "6"),
        (other["id"], "1"),
        (default_project["id"], "7"),
    ]
    assert made[2]["metadata"]["run_metadata"] == {"k": "v"}
    artifact = await tracking.get(
        f"/api/v1/artifacts/{made[0]['body']['artifact']['id']}", headers=auth
    )
    assert artifact.json()["metadata"]["has_custom_name"] is True


async def test_empty_batch_returns_an_empty_list(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    response = await tracking.post(f"{VERSIONS}/batch", json=[], headers=auth)
    assert (response.status_code, response.json()) == (200, [])


async def test_batch_with_a_duplicate_creates_nothing(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    bodies = [
        version_body(default_project, "fresh", version="1"),
        version_body(default_project, "other"),
        version_body(default_project, "fresh", version="1"),
    ]
    response = await tracking.post(f"{VERSIONS}/batch", json=bodies, headers=auth)
    assert response.status_code == 409
    assert (await list_versions(tracking, auth))["total"] == 0
    artifacts = await tracking.get("/api/v1/artifacts", headers=auth)
    assert artifacts.json()["total"] == 0


# --- get ----------------------------------------------------------------------------------


async def test_get_returns_the_version_hydrated(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await create_version(tracking, auth, default_project, metadata={"k": [1, 2]})
    response = await tracking.get(f"{VERSIONS}/{version['id']}", headers=auth)
    assert response.status_code == 200
    assert response.json() == version


async def test_get_without_hydrate_has_no_metadata(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await create_version(tracking, auth, default_project)
    response = await tracking.get(f"{VERSIONS}/{version['id']}?hydrate=false", headers=auth)
    assert response.json()["metadata"] is None


async def test_unknown_version_is_404(tracking: httpx.AsyncClient, auth: Headers) -> None:
    missing = uuid.uuid4()
    response = await tracking.get(f"{VERSIONS}/{missing}", headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"] == [
        "KeyError",
        f"Unable to get artifact version with ID '{missing}': No artifact version with this "
        "ID found",
    ]


async def test_versions_need_a_token(tracking: httpx.AsyncClient) -> None:
    assert (await tracking.get(VERSIONS)).status_code == 401


async def test_artifact_shows_its_latest_version(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    await create_version(tracking, auth, default_project)
    latest = await create_version(tracking, auth, default_project, version="newest")
    artifact_id = latest["body"]["artifact"]["id"]
    artifact = (await tracking.get(f"/api/v1/artifacts/{artifact_id}", headers=auth)).json()
    resources = artifact["resources"]
    assert (resources["latest_version_name"], resources["latest_version_id"]) == (
        "newest",
        latest["id"],
    )
    listed = (await tracking.get("/api/v1/artifacts", headers=auth)).json()["items"][0]
    assert listed["resources"]["latest_version_id"] == latest["id"]


async def test_artifacts_sort_by_their_latest_version(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    await create_version(tracking, auth, default_project, "old")
    await create_version(tracking, auth, default_project, "new")
    await create_version(tracking, auth, default_project, "old")
    response = await tracking.get(
        "/api/v1/artifacts", params={"sort_by": "desc:latest_version"}, headers=auth
    )
    assert [a["name"] for a in response.json()["items"]] == ["old", "new"]


# --- update -------------------------------------------------------------------------------


async def test_update_changes_tags(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await create_version(tracking, auth, default_project, tags=["a", "b"])
    response = await tracking.put(
        f"{VERSIONS}/{version['id']}",
        json={"add_tags": ["c"], "remove_tags": ["a"]},
        headers=auth,
    )
    assert response.status_code == 200
    assert [t["name"] for t in response.json()["resources"]["tags"]] == ["b", "c"]


async def test_update_name_renames_the_version(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await create_version(tracking, auth, default_project)
    response = await tracking.put(f"{VERSIONS}/{version['id']}", json={"name": "42"}, headers=auth)
    assert response.status_code == 200
    assert response.json()["body"]["version"] == "42"
    page = await list_versions(tracking, auth, ("version_number", "42"))
    assert versions_of(page) == ["42"]


async def test_update_with_an_empty_name_renames_nothing(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await create_version(tracking, auth, default_project)
    response = await tracking.put(f"{VERSIONS}/{version['id']}", json={"name": ""}, headers=auth)
    assert response.status_code == 200
    assert response.json()["body"]["version"] == version["body"]["version"]


async def test_update_name_onto_another_version_is_409(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    await create_version(tracking, auth, default_project, version="taken")
    version = await create_version(tracking, auth, default_project)
    response = await tracking.put(
        f"{VERSIONS}/{version['id']}", json={"name": "taken"}, headers=auth
    )
    assert response.status_code == 409
    unchanged = await tracking.get(f"{VERSIONS}/{version['id']}", headers=auth)
    assert unchanged.json()["body"]["version"] == "1"  # "taken" has no number


# --- delete -------------------------------------------------------------------------------


async def test_delete_removes_the_version_and_its_metadata(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await create_version(tracking, auth, default_project, tags=["t"], metadata={"k": 1})
    response = await tracking.delete(f"{VERSIONS}/{version['id']}", headers=auth)
    assert (response.status_code, response.json()) == (200, None)
    assert (await tracking.get(f"{VERSIONS}/{version['id']}", headers=auth)).status_code == 404


async def test_delete_of_a_used_version_is_400(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await create_version(tracking, auth, default_project)
    await _run_with_step(tracking, auth, default_project, inputs={"x": [version["id"]]})
    response = await tracking.delete(f"{VERSIONS}/{version['id']}", headers=auth)
    assert response.status_code == 400
    assert response.json()["detail"][1] == (
        "The metadata of artifact versions that are used in runs cannot be deleted. Please "
        "delete all runs that use this artifact version first."
    )
    assert (await tracking.get(f"{VERSIONS}/{version['id']}", headers=auth)).status_code == 200


async def test_delete_from_store_without_a_store_is_400(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await create_version(tracking, auth, default_project)
    response = await tracking.delete(
        f"{VERSIONS}/{version['id']}?delete_from_artifact_store=true", headers=auth
    )
    assert response.status_code == 400
    assert response.json()["detail"][1] == (
        "Artifact version has no artifact store, cannot delete data."
    )
    assert (await tracking.get(f"{VERSIONS}/{version['id']}", headers=auth)).status_code == 200


async def test_delete_from_store_removes_the_data_and_the_version(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    store_id, root = await default_store(tracking, auth)
    data = root / "model" / "1"
    data.mkdir(parents=True)
    (data / "a.txt").write_text("a")
    version = await create_version(
        tracking, auth, default_project, uri=str(data), artifact_store_id=store_id
    )
    response = await tracking.delete(
        f"{VERSIONS}/{version['id']}?delete_from_artifact_store=true", headers=auth
    )
    assert response.status_code == 200
    assert not data.exists()
    assert (await tracking.get(f"{VERSIONS}/{version['id']}", headers=auth)).status_code == 404


async def test_delete_only_the_data_keeps_the_version(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    store_id, root = await default_store(tracking, auth)
    data = root / "file.bin"
    data.write_bytes(b"x")
    version = await create_version(
        tracking, auth, default_project, uri=str(data), artifact_store_id=store_id
    )
    response = await tracking.delete(
        f"{VERSIONS}/{version['id']}?delete_from_artifact_store=true&delete_metadata=false",
        headers=auth,
    )
    assert response.status_code == 200
    assert not data.exists()
    assert (await tracking.get(f"{VERSIONS}/{version['id']}", headers=auth)).status_code == 200


async def test_delete_from_store_outside_its_root_is_refused_and_keeps_everything(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tmp_path: Path
) -> None:
    store_id, _root = await default_store(tracking, auth)
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    version = await create_version(
        tracking, auth, default_project, uri=str(outside), artifact_store_id=store_id
    )
    response = await tracking.delete(
        f"{VERSIONS}/{version['id']}?delete_from_artifact_store=true", headers=auth
    )
    assert response.status_code == 403
    assert outside.read_text() == "keep me"
    assert (await tracking.get(f"{VERSIONS}/{version['id']}", headers=auth)).status_code == 200


class TestWithProcAnAllowedRoot:
    """/proc cannot be deleted from, not even by root: a real filesystem refusal, once the
    operator lets local stores there."""

    @pytest.fixture
    def tracking_settings(
        self, database_url: str, redis_url: str, redis_namespace: str, tmp_path: Path
    ) -> Settings:
        artifacts = tmp_path / "artifacts"
        return tracking_settings_for(
            database_url,
            redis_url,
            redis_namespace,
            artifacts,
            local_artifact_store_roots=[artifacts, Path("/proc")],
        )

    async def test_data_the_store_cannot_delete_is_500_and_keeps_the_version(
        self, tracking: httpx.AsyncClient, auth: Headers, default_project: Json
    ) -> None:
        store = await tracking.post(
            "/api/v1/components",
            json={
                "name": "procfs",
                "type": "artifact_store",
                "flavor": "local",
                "configuration": {"path": "/proc/self"},
            },
            headers=auth,
        )
        assert store.status_code == 200, store.text
        uri = "/proc/self/fdinfo"
        version = await create_version(
            tracking, auth, default_project, uri=uri, artifact_store_id=store.json()["id"]
        )
        response = await tracking.delete(
            f"{VERSIONS}/{version['id']}?delete_from_artifact_store=true", headers=auth
        )
        assert response.status_code == 500
        assert response.json()["detail"][0] == "RuntimeError"
        assert f"Artifact data at '{uri}' could not be deleted." in response.json()["detail"][1]
        assert (await tracking.get(f"{VERSIONS}/{version['id']}", headers=auth)).status_code == 200


async def test_deleting_the_artifact_deletes_its_versions(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await create_version(tracking, auth, default_project)
    artifact_id = version["body"]["artifact"]["id"]
    assert (
        await tracking.delete(f"/api/v1/artifacts/{artifact_id}", headers=auth)
    ).status_code == 200
    assert (await tracking.get(f"{VERSIONS}/{version['id']}", headers=auth)).status_code == 404


# --- prune --------------------------------------------------------------------------------


async def test_prune_deletes_unused_versions_and_keeps_used_ones(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    used = await create_version(tracking, auth, default_project, "kept")
    await create_version(tracking, auth, default_project, "kept")
    await create_version(tracking, auth, default_project, "gone")
    await _run_with_step(tracking, auth, default_project, outputs={"out": [used["id"]]})
    response = await tracking.delete(
        VERSIONS, params={"project_name_or_id": "default", "only_versions": "true"}, headers=auth
    )
    assert (response.status_code, response.json()) == (200, None)
    page = await list_versions(tracking, auth)
    assert [v["id"] for v in page["items"]] == [used["id"]]
    artifacts = await tracking.get("/api/v1/artifacts", headers=auth)
    assert sorted(a["name"] for a in artifacts.json()["items"]) == ["gone", "kept"]


async def test_prune_without_only_versions_deletes_emptied_artifacts(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    used = await create_version(tracking, auth, default_project, "kept")
    await create_version(tracking, auth, default_project, "gone")
    await _run_with_step(tracking, auth, default_project, outputs={"out": [used["id"]]})
    response = await tracking.delete(
        VERSIONS, params={"project_name_or_id": "default", "only_versions": "false"}, headers=auth
    )
    assert response.status_code == 200
    artifacts = await tracking.get("/api/v1/artifacts", headers=auth)
    assert [a["name"] for a in artifacts.json()["items"]] == ["kept"]


async def test_prune_never_touches_the_artifact_store(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    store_id, root = await default_store(tracking, auth)
    data = root / "pruned.txt"
    data.write_text("still here")
    await create_version(tracking, auth, default_project, uri=str(data), artifact_store_id=store_id)
    await tracking.delete(VERSIONS, params={"project_name_or_id": "default"}, headers=auth)
    assert (await list_versions(tracking, auth))["total"] == 0
    assert data.read_text() == "still here"


async def test_prune_stays_in_its_project(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    from tests.tracking.artifact.support import new_project

    other = await new_project(tracking, auth, "other")
    await create_version(tracking, auth, other, "theirs")
    await tracking.delete(
        VERSIONS, params={"project_name_or_id": "default", "only_versions": "false"}, headers=auth
    )
    page = await list_versions(tracking, auth, ("project", "other"))
    assert page["total"] == 1


async def test_prune_of_an_unknown_project_is_404(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    response = await tracking.delete(VERSIONS, params={"project_name_or_id": "nope"}, headers=auth)
    assert response.status_code == 404


async def test_prune_without_a_project_is_422(tracking: httpx.AsyncClient, auth: Headers) -> None:
    assert (await tracking.delete(VERSIONS, headers=auth)).status_code == 422
