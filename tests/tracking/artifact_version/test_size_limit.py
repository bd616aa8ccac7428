"""The download size limit, with a tracking app configured for a small one."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.support.asgi import LifespanApp, running
from tests.tracking.artifact.support import Headers
from tests.tracking.artifact_version.support import VERSIONS, Json, create_version, default_store
from tracking.app import create_app
from tracking.settings import Settings


@pytest.fixture
def tracking_settings(tracking_settings: Settings) -> Settings:
    return tracking_settings.model_copy(update={"download_size_limit": 10})


@pytest.fixture
async def small_tracking(
    tracking_settings: Settings, identity_app: LifespanApp
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(tracking_settings, http_transport=httpx.ASGITransport(app=identity_app))
    async with running(app) as started:
        transport = httpx.ASGITransport(app=started)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield client


async def test_a_directory_over_the_limit_gets_no_token(
    small_tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    store_id, root = await default_store(small_tracking, auth)
    data = root / "big"
    data.mkdir()
    (data / "a").write_bytes(b"x" * 6)
    (data / "b").write_bytes(b"y" * 6)
    version = await create_version(
        small_tracking, auth, default_project, uri=str(data), artifact_store_id=store_id
    )
    response = await small_tracking.get(f"{VERSIONS}/{version['id']}/download-token", headers=auth)
    assert response.status_code == 403
    assert response.json()["detail"][0] == "IllegalOperationError"
    assert "is too large to be downloaded" in response.json()["detail"][1]


async def test_data_that_grew_past_the_limit_is_refused(
    small_tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    store_id, root = await default_store(small_tracking, auth)
    (root / "grows").write_bytes(b"x" * 5)
    version = await create_version(
        small_tracking, auth, default_project, uri=str(root / "grows"), artifact_store_id=store_id
    )
    token = await small_tracking.get(f"{VERSIONS}/{version['id']}/download-token", headers=auth)
    (root / "grows").write_bytes(b"x" * 50)
    response = await small_tracking.get(
        f"{VERSIONS}/{version['id']}/data", params={"token": token.json()}
    )
    assert response.status_code == 403
