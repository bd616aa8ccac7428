"""``/tags`` and ``/tag_resources``: the tag's envelope, its filters, its rules (names,
exclusive tags) and the tags shown on the resources they are on."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.identity.conftest import ADMIN
from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import ARTIFACT, Headers
from tests.tracking.artifact_version.support import VERSIONS, create_version
from tests.tracking.deployment.test_endpoints import create_deployer, create_deployment
from tests.tracking.pipeline_run.support import (
    create_pipeline,
    create_run,
    create_snapshot,
    run_of_snapshot,
)
from tests.tracking.tag.support import LINKS, TAGS, create_tag, link
from tracking.tag.service import TagService

Json = dict[str, Any]


async def tag_names(tracking: httpx.AsyncClient, auth: Headers, path: str) -> list[str]:
    response = await tracking.get(path, headers=auth)
    assert response.status_code == 200, response.text
    return [t["name"] for t in response.json()["resources"]["tags"]]


async def test_create_answers_the_reference_envelope(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    tag = await create_tag(tracking, auth, "prod", color="red")
    assert list(tag) == ["body", "metadata", "resources", "id", "permission_denied", "name"]
    assert list(tag["body"]) == ["created", "updated", "user_id", "color", "exclusive"]
    assert (tag["name"], tag["body"]["color"], tag["body"]["exclusive"]) == ("prod", "red", False)
    assert tag["metadata"] == {"tagged_count": 0}
    assert tag["resources"]["user"]["name"] == ADMIN


async def test_a_tag_without_colour_gets_the_same_one_every_time(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    first = await create_tag(tracking, auth, "stable")
    await tracking.delete(f"{TAGS}/{first['id']}", headers=auth)
    second = await create_tag(tracking, auth, "stable")
    assert first["body"]["color"] == second["body"]["color"]


async def test_duplicate_name_is_409(tracking: httpx.AsyncClient, auth: Headers) -> None:
    await create_tag(tracking, auth, "dup")
    response = await tracking.post(TAGS, json={"name": "dup"}, headers=auth)
    assert response.status_code == 409
    assert response.json()["detail"] == ["EntityExistsError", "Tag with name `dup` already exists."]


async def test_bad_names_are_refused(tracking: httpx.AsyncClient, auth: Headers) -> None:
    as_uuid = await tracking.post(TAGS, json={"name": str(uuid.uuid4())}, headers=auth)
    assert as_uuid.status_code == 422
    tabbed = await tracking.post(TAGS, json={"name": "a\tb"}, headers=auth)
    assert tabbed.status_code == 400
    assert tabbed.json()["detail"][0] == "ValueError"
    bad_colour = await tracking.post(TAGS, json={"name": "x", "color": "pink"}, headers=auth)
    assert bad_colour.status_code == 422


async def test_get_update_delete(tracking: httpx.AsyncClient, auth: Headers) -> None:
    tag = await create_tag(tracking, auth, "old")
    one = f"{TAGS}/{tag['id']}"
    updated = await tracking.put(one, json={"name": "new", "color": "blue"}, headers=auth)
    assert updated.status_code == 200, updated.text
    assert (updated.json()["name"], updated.json()["body"]["color"]) == ("new", "blue")
    got = await tracking.get(one, params={"hydrate": "false"}, headers=auth)
    assert (got.json()["name"], got.json()["metadata"]) == ("new", None)
    assert (await tracking.delete(one, headers=auth)).json() is None
    missing = await tracking.get(one, headers=auth)
    assert missing.status_code == 404
    assert missing.json()["detail"][0] == "KeyError"
    assert (await tracking.get(f"{TAGS}/not-a-uuid", headers=auth)).status_code == 422


async def test_rename_onto_another_tag_is_409(tracking: httpx.AsyncClient, auth: Headers) -> None:
    await create_tag(tracking, auth, "taken")
    tag = await create_tag(tracking, auth, "free")
    response = await tracking.put(f"{TAGS}/{tag['id']}", json={"name": "taken"}, headers=auth)
    assert response.status_code == 409


async def test_list_filters(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    tagged = await create_tag(tracking, auth, "on-artifact", exclusive=False)
    await create_tag(tracking, auth, "lonely", exclusive=True, color="green")
    artifact = await ARTIFACT.create(tracking, auth, default_project, "a")
    assert (await link(tracking, auth, tagged, "artifact", artifact)).status_code == 200

    async def names(*params: tuple[str, str]) -> list[str]:
        response = await tracking.get(TAGS, params=list(params), headers=auth)
        assert response.status_code == 200, response.text
        return [t["name"] for t in response.json()["items"]]

    assert await names(("sort_by", "name")) == ["lonely", "on-artifact"]
    assert await names(("exclusive", "true")) == ["lonely"]
    assert await names(("color", "green")) == ["lonely"]
    assert await names(("resource_type", "artifact")) == ["on-artifact"]
    assert await names(("name", "startswith:on")) == ["on-artifact"]
    response = await tracking.get(
        TAGS, params={"hydrate": "true", "name": "on-artifact"}, headers=auth
    )
    assert response.json()["items"][0]["metadata"] == {"tagged_count": 1}
    assert await names(("resource_type", "spaceship")) == []  # no such type, as the reference


async def test_links_show_on_the_resources_and_go_again(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    tag = await create_tag(tracking, auth, "gold")
    artifact = await ARTIFACT.create(tracking, auth, default_project, "weights")
    response = await tracking.post(
        LINKS,
        json={"tag_id": tag["id"], "resource_id": artifact["id"], "resource_type": "artifact"},
        headers=auth,
    )
    assert response.status_code == 200, response.text
    created = response.json()
    assert list(created["body"]) == ["created", "updated", "tag_id", "resource_id", "resource_type"]
    assert created["body"]["resource_type"] == "artifact"
    # Linking again keeps the one link (and its id).
    again = await link(tracking, auth, tag, "artifact", artifact)
    assert [item["id"] for item in again.json()] == [created["id"]]
    assert await tag_names(tracking, auth, ARTIFACT.one(artifact["id"])) == ["gold"]
    body = [{"tag_id": tag["id"], "resource_id": artifact["id"], "resource_type": "artifact"}]
    removed = await tracking.request("DELETE", f"{LINKS}/batch", json=body, headers=auth)
    assert (removed.status_code, removed.json()) == (200, None)
    assert await tag_names(tracking, auth, ARTIFACT.one(artifact["id"])) == []
    # Removing a link that is not there is no error.
    gone = await tracking.request("DELETE", LINKS, json=body[0], headers=auth)
    assert gone.status_code == 200


async def test_links_to_missing_tags_or_resources_are_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    tag = await create_tag(tracking, auth, "t")
    artifact = await ARTIFACT.create(tracking, auth, default_project, "a")
    missing_resource = await link(tracking, auth, tag, "artifact", {"id": str(uuid.uuid4())})
    assert missing_resource.status_code == 404
    assert missing_resource.json()["detail"][0] == "KeyError"
    model = await link(tracking, auth, tag, "model", artifact)
    assert model.status_code == 404
    missing_tag = await link(tracking, auth, {"id": str(uuid.uuid4())}, "artifact", artifact)
    assert missing_tag.status_code == 404
    bad_type = await link(tracking, auth, tag, "spaceship", artifact)
    assert bad_type.status_code == 422


async def test_an_exclusive_tag_moves_to_the_newest_version_of_an_artifact(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    tag = await create_tag(tracking, auth, "latest", exclusive=True)
    first = await create_version(tracking, auth, default_project, "model", version="1")
    second = await create_version(tracking, auth, default_project, "model", version="2")
    other = await create_version(tracking, auth, default_project, "other", version="1")
    assert (await link(tracking, auth, tag, "artifact_version", first, other)).status_code == 200
    assert (await link(tracking, auth, tag, "artifact_version", second)).status_code == 200
    assert await tag_names(tracking, auth, f"{VERSIONS}/{first['id']}") == []
    assert await tag_names(tracking, auth, f"{VERSIONS}/{second['id']}") == ["latest"]
    assert await tag_names(tracking, auth, f"{VERSIONS}/{other['id']}") == ["latest"]
    # Two versions of one artifact at once: refused, nothing changes.
    both = await link(tracking, auth, tag, "artifact_version", first, second)
    assert both.status_code == 400
    assert await tag_names(tracking, auth, f"{VERSIONS}/{second['id']}") == ["latest"]
    # By name, as a version update adds tags, the rule holds too.
    update = await tracking.put(
        f"{VERSIONS}/{first['id']}", json={"add_tags": ["latest"]}, headers=auth
    )
    assert update.status_code == 200, update.text
    assert await tag_names(tracking, auth, f"{VERSIONS}/{second['id']}") == []


async def test_exclusive_tags_are_refused_on_artifacts(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    tag = await create_tag(tracking, auth, "only", exclusive=True)
    artifact = await ARTIFACT.create(tracking, auth, default_project, "a")
    response = await link(tracking, auth, tag, "artifact", artifact)
    assert response.status_code == 400
    assert "Exclusive tag functionality only works" in response.json()["detail"][1]


async def test_a_tag_becomes_exclusive_only_without_conflicts(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    tag = await create_tag(tracking, auth, "shared")
    first = await create_version(tracking, auth, default_project, "model", version="1")
    second = await create_version(tracking, auth, default_project, "model", version="2")
    assert (await link(tracking, auth, tag, "artifact_version", first, second)).status_code == 200
    one = f"{TAGS}/{tag['id']}"
    refused = await tracking.put(one, json={"exclusive": True}, headers=auth)
    assert refused.status_code == 400
    assert "artifact_version" in refused.json()["detail"][1]
    body = [{"tag_id": tag["id"], "resource_id": first["id"], "resource_type": "artifact_version"}]
    await tracking.request("DELETE", f"{LINKS}/batch", json=body, headers=auth)
    accepted = await tracking.put(one, json={"exclusive": True}, headers=auth)
    assert (accepted.status_code, accepted.json()["body"]["exclusive"]) == (200, True)
    artifact = await ARTIFACT.create(tracking, auth, default_project, "a")
    plain = await create_tag(tracking, auth, "plain")
    assert (await link(tracking, auth, plain, "artifact", artifact)).status_code == 200
    on_artifact = await tracking.put(
        f"{TAGS}/{plain['id']}", json={"exclusive": True}, headers=auth
    )
    assert on_artifact.status_code == 400
    assert "non-allowed resource types: artifact" in on_artifact.json()["detail"][1]


async def test_deleting_a_tag_takes_it_off_its_resources(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    tag = await create_tag(tracking, auth, "temp")
    artifact = await ARTIFACT.create(tracking, auth, default_project, "a")
    await link(tracking, auth, tag, "artifact", artifact)
    await tracking.delete(f"{TAGS}/{tag['id']}", headers=auth)
    assert await tag_names(tracking, auth, ARTIFACT.one(artifact["id"])) == []


async def test_an_exclusive_tag_is_on_one_run_snapshot_and_deployment_per_pipeline(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tracking_app: LifespanApp
) -> None:
    tag = await create_tag(tracking, auth, "current", exclusive=True)
    pipeline = await create_pipeline(tracking, auth, default_project, "serving")
    first = await create_snapshot(tracking, auth, default_project, pipeline)
    second = await create_snapshot(tracking, auth, default_project, pipeline)
    deployer = await create_deployer(tracking, auth)
    deployments = [
        await create_deployment(tracking, auth, default_project, name, snapshot, deployer)
        for name, snapshot in (("blue", first), ("green", second))
    ]
    runs = [
        (await run_of_snapshot(tracking, auth, default_project, first)).json()[0] for _ in range(2)
    ]
    elsewhere = await create_run(tracking, auth, default_project)
    for kind, items in (
        ("pipeline_snapshot", [first, second]),
        ("deployment", deployments),
        ("pipeline_run", [*runs, elsewhere]),
    ):
        for item in items:
            assert (await link(tracking, auth, tag, kind, item)).status_code == 200, kind
    async with tracking_app.state["sessionmaker"]() as session:
        tagged = await TagService(session).for_resources(
            "pipeline_snapshot", [uuid.UUID(first["id"]), uuid.UUID(second["id"])]
        )
        on_deployments = await TagService(session).for_resources(
            "deployment", [uuid.UUID(d["id"]) for d in deployments]
        )
        on_runs = await TagService(session).for_resources(
            "pipeline_run", [uuid.UUID(r["id"]) for r in [*runs, elsewhere]]
        )
    # The last one linked in each pipeline keeps it (the last run is another pipeline's).
    assert set(tagged) == {uuid.UUID(second["id"])}
    assert set(on_deployments) == {uuid.UUID(deployments[1]["id"])}
    assert set(on_runs) == {uuid.UUID(runs[1]["id"]), uuid.UUID(elsewhere["id"])}
