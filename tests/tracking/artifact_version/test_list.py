"""Listing artifact versions: every filter the reference has, ``only_unused``, sorting."""

from __future__ import annotations

import httpx
import pytest

from tests.support.asgi import LifespanApp
from tests.tracking.artifact.support import Headers, new_project, statements
from tests.tracking.artifact_version.support import (
    VERSIONS,
    Json,
    create_version,
    default_store,
    list_versions,
    version_body,
    versions_of,
)
from tests.tracking.pipeline_run.support import create_run, create_step
from tracking.artifact_version.schemas import ArtifactVersionResponse


@pytest.fixture
async def catalog(tracking: httpx.AsyncClient, auth: Headers, default_project: Json) -> list[Json]:
    """Four versions of two artifacts, different in every filtered column."""
    store_id, root = await default_store(tracking, auth)
    return [
        await create_version(
            tracking,
            auth,
            default_project,
            "model",
            uri=str(root / "model/1"),
            artifact_store_id=store_id,
            tags=["prod"],
            metadata={"accuracy": 0.9, "stage": "prod"},
        ),
        await create_version(
            tracking,
            auth,
            default_project,
            "model",
            version="candidate",
            type="ModelArtifact",
            uri="s3://bucket/model/candidate",
            data_type={"module": "sklearn.base", "attribute": "BaseEstimator", "type": "unknown"},
            metadata={"accuracy": 0.7},
        ),
        await create_version(
            tracking,
            auth,
            default_project,
            "dataset",
            has_custom_name=True,
            materializer={"module": "zenml.materializers.pandas", "type": "internal"},
            tags=["raw"],
        ),
        await create_version(tracking, auth, default_project, "dataset", version=10),
    ]


def label(version: Json) -> str:
    return f"{version['body']['artifact']['name']}:{version['body']['version']}"


async def labels(tracking: httpx.AsyncClient, auth: Headers, *params: tuple[str, str]) -> list[str]:
    return sorted(label(v) for v in (await list_versions(tracking, auth, *params))["items"])


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ((("artifact", "model"),), ["model:1", "model:candidate"]),
        ((("artifact", "startswith:data"),), ["dataset:1", "dataset:10"]),
        ((("version", "candidate"),), ["model:candidate"]),
        ((("version_number", "gt:1"),), ["dataset:10"]),
        ((("version_number", "isnull:"),), ["model:candidate"]),
        ((("uri", "startswith:s3://"),), ["model:candidate"]),
        ((("materializer", "contains:pandas"),), ["dataset:1"]),
        ((("type", "ModelArtifact"),), ["model:candidate"]),
        ((("data_type", "contains:sklearn"),), ["model:candidate"]),
        ((("artifact_store_id", "isnotnull:"),), ["model:1"]),
        ((("has_custom_name", "true"),), ["dataset:1", "dataset:10"]),
        ((("tags", "prod"),), ["model:1"]),
        ((("tags", "isnull:"),), ["dataset:10", "model:candidate"]),
        ((("run_metadata", "stage:prod"),), ["model:1"]),
        ((("run_metadata", "accuracy:gte:0.8"),), ["model:1"]),
        ((("model_version_id", "isnotnull:"),), []),
        ((("model", "isnull:"),), ["dataset:1", "dataset:10", "model:1", "model:candidate"]),
        (
            (("type", "ModelArtifact"), ("version", "10"), ("logical_operator", "or")),
            ["dataset:10", "model:candidate"],
        ),
    ],
)
async def test_filters(
    tracking: httpx.AsyncClient,
    auth: Headers,
    catalog: list[Json],
    params: tuple[tuple[str, str], ...],
    expected: list[str],
) -> None:
    assert await labels(tracking, auth, *params) == expected


async def test_artifact_id_filter(
    tracking: httpx.AsyncClient, auth: Headers, catalog: list[Json]
) -> None:
    artifact_id = catalog[2]["body"]["artifact"]["id"]
    assert await labels(tracking, auth, ("artifact_id", artifact_id)) == ["dataset:1", "dataset:10"]
    assert await labels(tracking, auth, ("artifact", artifact_id)) == ["dataset:1", "dataset:10"]


async def test_artifact_named_finds_the_projects_own_artifact(
    tracking: httpx.AsyncClient, auth: Headers, catalog: list[Json]
) -> None:
    """A name names one artifact per project: another project's artifact of that name
    (its versions, or none) changes nothing, in either project, whatever else is asked."""
    other = await new_project(tracking, auth, "other")
    await create_version(tracking, auth, other, "model", version="elsewhere")
    here = await labels(tracking, auth, ("artifact", "model"))
    assert here == ["model:1", "model:candidate"]
    there = await labels(tracking, auth, ("project", "other"), ("artifact", "model"))
    assert there == ["model:elsewhere"]
    either = await labels(
        tracking, auth, ("artifact", "model"), ("version", "1"), ("logical_operator", "or")
    )
    assert either == ["dataset:1", "model:1", "model:candidate"]
    assert await labels(tracking, auth, ("artifact", "nothing-of-that-name")) == []
    # A name written as a UUID is matched as an id or a name, as any other list does.
    named_like_an_id = "0" * 8 + "-0000-4000-8000-" + "0" * 12
    await create_version(tracking, auth, other, named_like_an_id)
    found = await labels(tracking, auth, ("project", "other"), ("artifact", named_like_an_id))
    assert found == [f"{named_like_an_id}:1"]


async def test_user_filter(tracking: httpx.AsyncClient, auth: Headers, catalog: list[Json]) -> None:
    assert len(await labels(tracking, auth, ("user", "default"))) == 4
    assert await labels(tracking, auth, ("user", "someone-else")) == []


async def nightly_run(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, catalog: list[Json]
) -> tuple[Json, Json]:
    """The run "nightly" and its step, which read ``dataset:1`` and produced ``model:1``."""
    run = await create_run(tracking, auth, project, "nightly")
    step = await create_step(
        tracking,
        auth,
        project,
        run,
        inputs={"data": [catalog[2]["id"]]},
        outputs={"model": [catalog[0]["id"]]},
    )
    return run, step


async def test_only_unused_and_pipeline_run_filters(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, catalog: list[Json]
) -> None:
    run, _ = await nightly_run(tracking, auth, default_project, catalog)
    assert await labels(tracking, auth, ("only_unused", "true")) == [
        "dataset:10",
        "model:candidate",
    ]
    expected = ["dataset:1", "model:1"]
    assert await labels(tracking, auth, ("pipeline_run", "nightly")) == expected
    assert await labels(tracking, auth, ("pipeline_run", run["id"])) == expected


async def test_only_unused_is_anded_whatever_the_operator(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, catalog: list[Json]
) -> None:
    run = await create_run(tracking, auth, default_project)
    await create_step(tracking, auth, default_project, run, outputs={"m": [catalog[0]["id"]]})
    found = await labels(
        tracking,
        auth,
        ("only_unused", "true"),
        ("logical_operator", "or"),
        ("version", "1"),
        ("version", "10"),
    )
    assert found == ["dataset:1", "dataset:10"]


async def test_run_metadata_without_a_key_is_422(
    tracking: httpx.AsyncClient, auth: Headers
) -> None:
    response = await tracking.get(VERSIONS, params={"run_metadata": "novalue"}, headers=auth)
    assert response.status_code == 422


async def test_bad_int_filter_is_422(tracking: httpx.AsyncClient, auth: Headers) -> None:
    response = await tracking.get(VERSIONS, params={"version_number": "one"}, headers=auth)
    assert response.status_code == 422


async def test_sort_by_artifact_is_422(tracking: httpx.AsyncClient, auth: Headers) -> None:
    response = await tracking.get(VERSIONS, params={"sort_by": "artifact"}, headers=auth)
    assert response.status_code == 422


async def test_sort_by_version_number_descending(
    tracking: httpx.AsyncClient, auth: Headers, catalog: list[Json]
) -> None:
    page = await list_versions(
        tracking, auth, ("sort_by", "desc:version_number"), ("version_number", "isnotnull:")
    )
    assert versions_of(page) == ["10", "1", "1"]


async def test_list_is_not_hydrated_unless_asked(
    tracking: httpx.AsyncClient, auth: Headers, catalog: list[Json]
) -> None:
    page = await list_versions(tracking, auth)
    assert all(item["metadata"] is None for item in page["items"])
    hydrated = await list_versions(tracking, auth, ("hydrate", "true"), ("version", "1"))
    metadata = {label(v): v["metadata"]["run_metadata"] for v in hydrated["items"]}
    assert metadata == {"model:1": {"accuracy": 0.9, "stage": "prod"}, "dataset:1": {}}


async def test_list_is_scoped_to_the_project(
    tracking: httpx.AsyncClient, auth: Headers, catalog: list[Json]
) -> None:
    other = await new_project(tracking, auth, "other")
    await create_version(tracking, auth, other, "elsewhere")
    assert await labels(tracking, auth, ("project", "other")) == ["elsewhere:1"]
    assert len(await labels(tracking, auth)) == 4


async def test_get_by_name_as_the_zenml_client_asks(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, catalog: list[Json]
) -> None:
    page = await list_versions(
        tracking,
        auth,
        ("hydrate", "True"),
        ("sort_by", "desc:created"),
        ("size", "1"),
        ("project", default_project["id"]),
        ("artifact", "model"),
        ("only_unused", "False"),
    )
    assert [v["id"] for v in page["items"]] == [catalog[1]["id"]]
    assert page["total"] == 2


async def test_list_and_get_show_each_versions_producer(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, catalog: list[Json]
) -> None:
    run, step = await nightly_run(tracking, auth, default_project, catalog)
    page = await list_versions(tracking, auth)
    producers = {
        label(v): (
            v["resources"]["producer_step_run_id"],
            v["resources"]["producer_pipeline_run_id"],
        )
        for v in page["items"]
    }
    # Read (an input) is not produced.
    assert producers == {
        "model:1": (step["id"], run["id"]),
        "model:candidate": (None, None),
        "dataset:1": (None, None),
        "dataset:10": (None, None),
    }
    got = await tracking.get(f"{VERSIONS}/{catalog[0]['id']}", headers=auth)
    assert got.json()["resources"]["producer_step_run_id"] == step["id"]


async def test_every_answer_is_exactly_what_its_response_model_sends(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, catalog: list[Json]
) -> None:
    """Versions are rendered from rows without validation, the parts a page's versions
    share rendered once (shared.shapes): each answer must validate as the declared model
    and serialize to the same JSON."""
    tagged = {"tags": ["prod", "raw"], "metadata": {"n": 1}}
    batch = await tracking.post(
        f"{VERSIONS}/batch",
        json=[version_body(default_project, "model", version=f"b{i}", **tagged) for i in range(3)],
        headers=auth,
    )
    assert batch.status_code == 200, batch.text
    answers: list[Json] = [*catalog, *batch.json()]
    for hydrate in ("false", "true"):
        answers.extend((await list_versions(tracking, auth, ("hydrate", hydrate)))["items"])
        for version in catalog:
            one = await tracking.get(
                f"{VERSIONS}/{version['id']}", params={"hydrate": hydrate}, headers=auth
            )
            answers.append(one.json())
    assert len(answers) == 4 + 3 + 2 * (7 + 4)
    for answer in answers:
        assert ArtifactVersionResponse.model_validate(answer).model_dump(mode="json") == answer


async def test_listing_costs_the_same_few_queries_for_5_or_50_versions(
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    tracking_app: LifespanApp,
) -> None:
    bodies = [
        version_body(default_project, f"a{i % 7}", version=i, tags=[f"t{i % 3}"]) for i in range(50)
    ]
    created = await tracking.post(f"{VERSIONS}/batch", json=bodies, headers=auth)
    assert created.status_code == 200, created.text
    counted = []
    for size in (5, 50):
        for hydrate in ("false", "true"):
            params = {"size": size, "hydrate": hydrate}
            with statements(tracking_app.state["engine"]) as seen:
                response = await tracking.get(VERSIONS, params=params, headers=auth)
            assert len(response.json()["items"]) == size
            counted.append(len([s for s in seen if s.lstrip().upper().startswith("SELECT")]))
    # The project, the count, the page's ids, its rows (with their producers), their
    # artifacts, their tags; hydrated, their visualizations and their metadata too.
    assert counted == [6, 8, 6, 8]
