"""A snapshot's code, downloaded as the dashboard does: a token asked with the user's
credentials, then the archive fetched with the token alone, from the snapshot's stack's
artifact store and nowhere else."""

from __future__ import annotations

import uuid

import httpx

from tests.tracking.artifact.support import Headers
from tests.tracking.artifact_version.support import Json, create_version, default_store
from tests.tracking.pipeline_run.support import create_snapshot

ARCHIVE = b"\x1f\x8b\x08\x00code archive bytes"


async def token_for(tracking: httpx.AsyncClient, auth: Headers, snapshot: Json) -> httpx.Response:
    return await tracking.get(
        f"/api/v1/pipeline_snapshots/{snapshot['id']}/download-token", headers=auth
    )


async def test_a_snapshots_code_is_downloaded_with_its_token_alone(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    _, root = await default_store(tracking, auth)
    path = root / "code_uploads" / f"{uuid.uuid4().hex}.tar.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(ARCHIVE)
    snapshot = await create_snapshot(tracking, auth, default_project, code_path=str(path))
    token = await token_for(tracking, auth, snapshot)
    assert token.status_code == 200, token.text
    url = f"/api/v1/pipeline_snapshots/{snapshot['id']}/code"
    got = await tracking.get(url, params={"token": token.json()})
    assert got.status_code == 200, got.text
    assert got.headers["content-type"] == "application/gzip"
    assert got.content == ARCHIVE
    # The token is for this snapshot's code only.
    other = await create_snapshot(tracking, auth, default_project, code_path=str(path))
    elsewhere = f"/api/v1/pipeline_snapshots/{other['id']}/code"
    assert (await tracking.get(elsewhere, params={"token": token.json()})).status_code == 401
    version = await create_version(tracking, auth, default_project)
    version_token = await tracking.get(
        f"/api/v1/artifact_versions/{version['id']}/download-token", headers=auth
    )
    assert (await tracking.get(url, params={"token": version_token.json()})).status_code == 401
    assert (await tracking.get(url, params={"token": "x.y.z"})).status_code == 401
    assert (await tracking.get(url)).status_code == 422


async def test_code_that_is_not_there_or_not_the_stores_is_refused(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    none = await create_snapshot(tracking, auth, default_project)
    no_code = await token_for(tracking, auth, none)
    assert no_code.status_code == 400
    assert no_code.json()["detail"] == ["ValueError", f"Snapshot {none['id']} has no code path."]
    _, root = await default_store(tracking, auth)
    gone = await create_snapshot(
        tracking, auth, default_project, code_path=str(root / "code_uploads" / "gone.tar.gz")
    )
    assert (await token_for(tracking, auth, gone)).status_code == 404
    outside = await create_snapshot(tracking, auth, default_project, code_path="/etc/passwd")
    assert (await token_for(tracking, auth, outside)).status_code == 403
    missing = await tracking.get(
        f"/api/v1/pipeline_snapshots/{uuid.uuid4()}/download-token", headers=auth
    )
    assert missing.status_code == 404
