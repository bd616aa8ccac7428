"""An artifact version's data in an s3 artifact store (a real S3-compatible server):
visualizations, the streamed ``.tar.gz`` and its size limit, deletion from the store,
confinement to the store's bucket and prefix, an unreachable store, and two tracking
processes reading the same data."""

from __future__ import annotations

import base64
import io
import os
import tarfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from starlette.types import Message, Receive, Scope, Send

from tests.support.asgi import HostRouter, LifespanApp, running
from tests.support.redis_server import free_port
from tests.support.s3_server import ACCESS_KEY, SECRET_KEY, S3Server
from tests.tracking.artifact.support import Headers
from tests.tracking.artifact_version.support import VERSIONS, Json, create_version
from tests.tracking.component.support import COMPONENTS
from tracking.app import create_app
from tracking.settings import Settings

TREE = {"model/a.txt": b"alpha", "model/sub/b.bin": b"\x00\x01beta", "model/sub/c/d": b"d"}
SIBLINGS = {"model2/x": b"not mine", "modelx": b"not mine", "other/y": b"not mine"}


@dataclass(frozen=True)
class Bucket:
    name: str
    store_id: str

    def uri(self, key: str = "") -> str:
        return f"s3://{self.name}/root/{key}".rstrip("/")


async def s3_store(
    tracking: httpx.AsyncClient, auth: Headers, name: str, path: str, endpoint: str
) -> str:
    configuration = {
        "path": path,
        "key": ACCESS_KEY,
        "secret": SECRET_KEY,
        "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
    }
    response = await tracking.post(
        COMPONENTS,
        json={
            "name": name,
            "type": "artifact_store",
            "flavor": "s3",
            "configuration": configuration,
        },
        headers=auth,
    )
    assert response.status_code == 200, response.text
    store_id: str = response.json()["id"]
    return store_id


@pytest.fixture
async def bucket(s3: S3Server, tracking: httpx.AsyncClient, auth: Headers) -> Bucket:
    name = s3.new_bucket()
    s3.put(name, {f"root/{key}": body for key, body in {**TREE, **SIBLINGS}.items()})
    s3.put(name, {"root-sibling/model/a.txt": b"outside the store"})
    store_id = await s3_store(tracking, auth, "s3", f"s3://{name}/root", s3.endpoint)
    return Bucket(name, store_id)


async def version_at(
    tracking: httpx.AsyncClient,
    auth: Headers,
    project: Json,
    bucket: Bucket,
    uri: str,
    **extra: Any,
) -> Json:
    return await create_version(
        tracking, auth, project, uri=uri, artifact_store_id=bucket.store_id, **extra
    )


async def download(tracking: httpx.AsyncClient, auth: Headers, version: Json) -> httpx.Response:
    token = await tracking.get(f"{VERSIONS}/{version['id']}/download-token", headers=auth)
    assert token.status_code == 200, token.text
    return await tracking.get(f"{VERSIONS}/{version['id']}/data", params={"token": token.json()})


def members(response: httpx.Response) -> dict[str, bytes | None]:
    with tarfile.open(fileobj=io.BytesIO(response.content), mode="r:gz") as archive:
        found: dict[str, bytes | None] = {}
        for member in archive.getmembers():
            extracted = archive.extractfile(member) if member.isfile() else None
            found[member.name] = extracted.read() if extracted is not None else None
        return found


async def test_visualizations_load_from_the_bucket(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, bucket: Bucket
) -> None:
    visualizations = [
        {"type": "markdown", "uri": bucket.uri("model/a.txt")},
        {"type": "image", "uri": bucket.uri("model/sub/b.bin")},
        {"type": "html", "uri": bucket.uri("model/none.html")},
    ]
    version = await version_at(
        tracking, auth, default_project, bucket, bucket.uri("model"), visualizations=visualizations
    )
    url = f"{VERSIONS}/{version['id']}/visualize"
    text = await tracking.get(url, params={"index": 0}, headers=auth)
    assert text.json() == {"type": "markdown", "value": "alpha"}
    image = await tracking.get(url, params={"index": 1}, headers=auth)
    assert image.json() == {"type": "image", "value": base64.b64encode(b"\x00\x01beta").decode()}
    missing = await tracking.get(url, params={"index": 2}, headers=auth)
    assert missing.status_code == 404
    assert missing.json()["detail"] == [
        "DoesNotExistException",
        f"File '{bucket.uri('model/none.html')}' does not exist in artifact store 's3'.",
    ]


async def test_the_download_is_the_prefix_as_a_tar_gz(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, bucket: Bucket
) -> None:
    version = await version_at(tracking, auth, default_project, bucket, bucket.uri("model"))
    response = await download(tracking, auth, version)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/gzip"
    assert members(response) == {
        ".": None,
        "a.txt": b"alpha",
        "sub": None,
        "sub/b.bin": b"\x00\x01beta",
        "sub/c": None,
        "sub/c/d": b"d",
    }
    single = await version_at(
        tracking, auth, default_project, bucket, bucket.uri("model/a.txt"), version="file"
    )
    assert members(await download(tracking, auth, single)) == {".": b"alpha"}


async def test_a_large_object_is_streamed_in_bounded_pieces(
    tracking_app: LifespanApp,
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    bucket: Bucket,
    s3: S3Server,
) -> None:
    # Larger than what loopback's socket buffers hand the client at once on a loaded
    # machine (obstore yields what has arrived, at least 64 KiB): at 5 MiB a piece of over
    # an eighth of it was seen.
    payload = os.urandom(24 * 1024 * 1024)
    s3.put(bucket.name, {"root/big/blob": payload})
    version = await version_at(tracking, auth, default_project, bucket, bucket.uri("big"))
    token = await tracking.get(f"{VERSIONS}/{version['id']}/download-token", headers=auth)
    sent: list[int] = []

    async def recording(scope: Scope, receive: Receive, send: Send) -> None:
        async def send_and_record(message: Message) -> None:
            if message["type"] == "http.response.body":
                sent.append(len(message.get("body", b"")))
            await send(message)

        await tracking_app(scope, receive, send_and_record)

    transport = httpx.ASGITransport(app=recording)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        response = await client.get(
            f"{VERSIONS}/{version['id']}/data", params={"token": token.json()}
        )
    assert members(response)["blob"] == payload
    # The body left the server in many pieces, each a small part of the object: the
    # server never held it whole.
    assert len(sent) > 10
    assert max(sent) < len(payload) // 8


@asynccontextmanager
async def another_tracking(
    settings: Settings, router: HostRouter
) -> AsyncIterator[httpx.AsyncClient]:
    """Another tracking process on the same database (a replica, or one set otherwise)."""
    async with running(create_app(settings, http_transport=router)) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://replica") as client:
            yield client


async def test_a_replica_reads_the_same_data(
    tracking_settings: Settings,
    router: HostRouter,
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    bucket: Bucket,
) -> None:
    visualizations = [{"type": "markdown", "uri": bucket.uri("model/a.txt")}]
    version = await version_at(
        tracking, auth, default_project, bucket, bucket.uri("model"), visualizations=visualizations
    )
    async with another_tracking(tracking_settings, router) as replica:
        for client in (tracking, replica):
            shown = await client.get(f"{VERSIONS}/{version['id']}/visualize", headers=auth)
            assert shown.json() == {"type": "markdown", "value": "alpha"}
            assert members(await download(client, auth, version))["sub/c/d"] == b"d"


async def test_data_over_the_size_limit_is_refused(
    tracking_settings: Settings,
    router: HostRouter,
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    bucket: Bucket,
) -> None:
    version = await version_at(tracking, auth, default_project, bucket, bucket.uri("model"))
    small = tracking_settings.model_copy(update={"download_size_limit": 10})
    async with another_tracking(small, router) as client:
        response = await client.get(f"{VERSIONS}/{version['id']}/download-token", headers=auth)
    assert response.status_code == 403
    assert response.json()["detail"][0] == "IllegalOperationError"
    assert (
        "is too large to be downloaded (12 bytes; the limit is 10 bytes)"
        in (response.json()["detail"][1])
    )


async def test_delete_from_the_store_removes_the_prefix_and_nothing_else(
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    bucket: Bucket,
    s3: S3Server,
) -> None:
    version = await version_at(tracking, auth, default_project, bucket, bucket.uri("model"))
    response = await tracking.delete(
        f"{VERSIONS}/{version['id']}", params={"delete_from_artifact_store": "true"}, headers=auth
    )
    assert response.status_code == 200, response.text
    assert s3.keys(bucket.name) == sorted(
        [*(f"root/{key}" for key in SIBLINGS), "root-sibling/model/a.txt"]
    )


@pytest.mark.parametrize(
    "uri",
    [
        "s3://other-bucket/root/model",
        "s3://{bucket}/root-sibling/model",
        "s3://{bucket}/root/../root-sibling/model",
        "/etc",
    ],
)
async def test_uris_outside_the_store_are_refused_and_nothing_is_deleted(
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    bucket: Bucket,
    s3: S3Server,
    uri: str,
) -> None:
    before = s3.keys(bucket.name)
    version = await version_at(
        tracking, auth, default_project, bucket, uri.format(bucket=bucket.name)
    )
    token = await tracking.get(f"{VERSIONS}/{version['id']}/download-token", headers=auth)
    deleted = await tracking.delete(
        f"{VERSIONS}/{version['id']}", params={"delete_from_artifact_store": "true"}, headers=auth
    )
    for response in (token, deleted):
        assert response.status_code == 403
        assert response.json()["detail"][0] == "IllegalOperationError"
        assert "is outside of artifact store bounds" in response.json()["detail"][1]
    assert s3.keys(bucket.name) == before


async def test_an_unreachable_store_is_a_502_with_one_generic_sentence(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, s3: S3Server
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    store_id = await s3_store(tracking, auth, "gone", "s3://gone/root", closed)
    version = await create_version(
        tracking,
        auth,
        default_project,
        uri="s3://gone/root/model",
        artifact_store_id=store_id,
        visualizations=[{"type": "html", "uri": "s3://gone/root/model/v.html"}],
    )
    for path in ("download-token", "visualize"):
        response = await tracking.get(f"{VERSIONS}/{version['id']}/{path}", headers=auth)
        assert response.status_code == 502
        assert response.json() == {
            "detail": [
                "RuntimeError",
                "The server could not complete the request to the artifact store.",
            ]
        }
