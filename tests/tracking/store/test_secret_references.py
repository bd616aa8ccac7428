"""An s3 store whose credentials are secret references (``{{name.key}}``): the server
resolves them for its own reads (a visualization here) with the secrets the component's
owner may read, and a missing secret or key is a 404 that names no value."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.support.asgi import LifespanApp
from tests.support.s3_server import ACCESS_KEY, SECRET_KEY, S3Server
from tests.tracking.artifact.support import Headers, new_user
from tests.tracking.artifact_version.support import VERSIONS, create_version
from tests.tracking.component.support import COMPONENTS
from tests.tracking.secret.support import SECRETS, create_secret
from tracking.models import StackComponent

Json = dict[str, Any]
User = tuple[str, Headers]
CREDENTIALS = {"access": ACCESS_KEY, "secret": SECRET_KEY}


@pytest.fixture
async def ann(identity_app: LifespanApp, auth: Headers) -> User:
    return await new_user(identity_app, auth, "ann")


@pytest.fixture
def bucket(s3: S3Server) -> str:
    name = s3.new_bucket()
    s3.put(name, {"root/report.md": b"# from the bucket"})
    return name


async def referencing_store(
    tracking: httpx.AsyncClient, auth: Headers, s3: S3Server, bucket: str, secret: str
) -> Json:
    configuration = {
        "path": f"s3://{bucket}/root",
        "key": f"{{{{{secret}.access}}}}",
        "secret": f"{{{{ {secret}.secret }}}}",
        "client_kwargs": {"endpoint_url": s3.endpoint, "region_name": "us-east-1"},
    }
    body = {"name": "s3", "type": "artifact_store", "flavor": "s3"}
    response = await tracking.post(
        COMPONENTS, json={**body, "configuration": configuration}, headers=auth
    )
    assert response.status_code == 200, response.text
    store: Json = response.json()
    return store


async def visualize(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, store: Json, bucket: str
) -> httpx.Response:
    uri = f"s3://{bucket}/root/report.md"
    version = await create_version(
        tracking,
        auth,
        project,
        uri=uri,
        artifact_store_id=store["id"],
        visualizations=[{"type": "markdown", "uri": uri}],
    )
    url = f"{VERSIONS}/{version['id']}/visualize"
    return await tracking.get(url, params={"index": 0}, headers=auth)


async def test_references_resolve_with_the_secret_for_the_servers_reads(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, s3: S3Server, bucket: str
) -> None:
    await create_secret(tracking, auth, "creds", CREDENTIALS)
    store = await referencing_store(tracking, auth, s3, bucket, "creds")
    answer = await visualize(tracking, auth, default_project, store, bucket)
    assert answer.json() == {"type": "markdown", "value": "# from the bucket"}


async def test_a_missing_secret_or_key_is_404_naming_no_value(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, s3: S3Server, bucket: str
) -> None:
    store = await referencing_store(tracking, auth, s3, bucket, "creds")
    missing = await visualize(tracking, auth, default_project, store, bucket)
    assert missing.status_code == 404, missing.text
    assert missing.json()["detail"] == [
        "KeyError",
        "Failed to resolve secret reference for attribute key: The secret creds does not exist.",
    ]
    created = await create_secret(tracking, auth, "creds", {"access": ACCESS_KEY})
    no_key = await visualize(tracking, auth, default_project, store, bucket)
    assert no_key.status_code == 404, no_key.text
    assert no_key.json()["detail"][1] == (
        "Failed to resolve secret reference for attribute secret: The secret creds does not "
        "contain a value for key secret."
    )
    assert ACCESS_KEY not in no_key.text
    # Completing the secret is seen at once: the store's client follows the secret.
    url = f"{SECRETS}/{created['id']}"
    await tracking.put(url, json={"values": CREDENTIALS}, headers=auth)
    read = await visualize(tracking, auth, default_project, store, bucket)
    assert read.status_code == 200, read.text


async def test_only_secrets_the_components_owner_may_read_resolve(
    tracking: httpx.AsyncClient,
    auth: Headers,
    ann: User,
    default_project: Json,
    s3: S3Server,
    bucket: str,
) -> None:
    # Ann's private secret: the admin's store cannot use it ...
    await create_secret(tracking, ann[1], "anns", CREDENTIALS, private=True)
    admins = await referencing_store(tracking, auth, s3, bucket, "anns")
    refused = await visualize(tracking, auth, default_project, admins, bucket)
    assert refused.status_code == 404
    assert "The secret anns does not exist." in refused.json()["detail"][1]
    assert (await tracking.delete(f"{COMPONENTS}/{admins['id']}", headers=auth)).status_code == 200
    # ... while Ann's own store does, whoever reads its data.
    anns = await referencing_store(tracking, ann[1], s3, bucket, "anns")
    for headers in (ann[1], auth):
        read = await visualize(tracking, headers, default_project, anns, bucket)
        assert read.json() == {"type": "markdown", "value": "# from the bucket"}


async def signing_key(tracking_app: LifespanApp, store: Json) -> str:
    """The access key id the server's client of ``store`` signs with."""
    async with tracking_app.state["sessionmaker"]() as session:
        component = await session.get(StackComponent, uuid.UUID(store["id"]))
        opened = await tracking_app.state["artifact_stores"].open(component, session)
    provider = opened.client.credential_provider
    assert provider is not None
    key: str = provider()["access_key_id"]
    return key


async def test_the_servers_client_signs_with_the_secrets_current_value(
    tracking: httpx.AsyncClient,
    tracking_app: LifespanApp,
    auth: Headers,
    s3: S3Server,
    bucket: str,
) -> None:
    created = await create_secret(tracking, auth, "creds", CREDENTIALS)
    store = await referencing_store(tracking, auth, s3, bucket, "creds")
    assert await signing_key(tracking_app, store) == ACCESS_KEY
    changed = {"values": {"access": "AKIACHANGED000000001"}}
    url = f"{SECRETS}/{created['id']}?patch_values=true"
    assert (await tracking.put(url, json=changed, headers=auth)).status_code == 200
    assert await signing_key(tracking_app, store) == "AKIACHANGED000000001"
