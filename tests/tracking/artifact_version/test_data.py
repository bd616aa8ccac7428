"""An artifact version's data: visualizations loaded from its store, download tokens, and
the streamed ``.tar.gz``."""

from __future__ import annotations

import base64
import datetime as dt
import io
import tarfile
import uuid
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from tests.support.asgi import LifespanApp
from tests.support.tokens import padded
from tests.tracking.artifact.support import Headers
from tests.tracking.artifact_version.support import (
    VERSIONS,
    Json,
    create_version,
    default_store,
)


async def stored_version(
    tracking: httpx.AsyncClient, auth: Headers, project: Json, uri: Path, **extra: Any
) -> Json:
    store_id, _ = await default_store(tracking, auth)
    return await create_version(
        tracking, auth, project, uri=str(uri), artifact_store_id=store_id, **extra
    )


async def download(tracking: httpx.AsyncClient, auth: Headers, version: Json) -> httpx.Response:
    token = await tracking.get(f"{VERSIONS}/{version['id']}/download-token", headers=auth)
    assert token.status_code == 200, token.text
    return await tracking.get(f"{VERSIONS}/{version['id']}/data", params={"token": token.json()})


def members(response: httpx.Response) -> dict[str, tuple[bool, int, bytes | None]]:
    """name -> (is a directory, mode, content)."""
    found: dict[str, tuple[bool, int, bytes | None]] = {}
    with tarfile.open(fileobj=io.BytesIO(response.content), mode="r:gz") as archive:
        for member in archive.getmembers():
            extracted = archive.extractfile(member) if member.isfile() else None
            content = extracted.read() if extracted is not None else None
            assert member.mtime == 0
            found[member.name] = (member.isdir(), member.mode, content)
    return found


# --- visualizations -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "content"),
    [
        ("html", b"<h1>hi</h1>"),
        ("markdown", b"# title"),
        ("csv", b"a,b\n1,2\n"),
        ("json", b'{"a": 1}'),
    ],
)
async def test_visualize_returns_text_types_as_text(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, kind: str, content: bytes
) -> None:
    _, root = await default_store(tracking, auth)
    (root / f"v.{kind}").write_bytes(content)
    version = await stored_version(
        tracking,
        auth,
        default_project,
        root,
        visualizations=[{"type": kind, "uri": str(root / f"v.{kind}")}],
    )
    response = await tracking.get(f"{VERSIONS}/{version['id']}/visualize?index=0", headers=auth)
    assert response.status_code == 200, response.text
    assert response.json() == {"type": kind, "value": content.decode()}


async def test_visualize_returns_images_in_base64(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    _, root = await default_store(tracking, auth)
    png = b"\x89PNG\r\n\x1a\n\x00\x01binary"
    (root / "plot.png").write_bytes(png)
    version = await stored_version(
        tracking,
        auth,
        default_project,
        root,
        visualizations=[
            {"type": "html", "uri": str(root / "missing.html")},
            {"type": "image", "uri": str(root / "plot.png")},
        ],
    )
    response = await tracking.get(f"{VERSIONS}/{version['id']}/visualize?index=1", headers=auth)
    assert response.json() == {"type": "image", "value": base64.b64encode(png).decode()}


async def test_visualize_without_visualizations_is_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    _, root = await default_store(tracking, auth)
    version = await stored_version(tracking, auth, default_project, root)
    response = await tracking.get(f"{VERSIONS}/{version['id']}/visualize", headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"] == [
        "DoesNotExistException",
        f"Artifact '{version['id']}' has no visualizations.",
    ]


async def test_visualize_index_out_of_range_is_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    _, root = await default_store(tracking, auth)
    version = await stored_version(
        tracking, auth, default_project, root, visualizations=[{"type": "csv", "uri": "x"}]
    )
    response = await tracking.get(f"{VERSIONS}/{version['id']}/visualize?index=3", headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"][1] == (
        f"Artifact '{version['id']}' only has 1 visualizations, but index 3 was requested."
    )


async def test_visualize_a_missing_file_is_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    _, root = await default_store(tracking, auth)
    missing = str(root / "gone.html")
    version = await stored_version(
        tracking, auth, default_project, root, visualizations=[{"type": "html", "uri": missing}]
    )
    response = await tracking.get(f"{VERSIONS}/{version['id']}/visualize", headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"] == [
        "DoesNotExistException",
        f"File '{missing}' does not exist in artifact store 'default'.",
    ]


@pytest.mark.parametrize("escape", ["dotdot", "absolute", "link"])
async def test_visualize_refuses_files_outside_the_store(
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    tmp_path: Path,
    escape: str,
) -> None:
    _, root = await default_store(tracking, auth)
    secret = tmp_path / "secret.html"
    secret.write_text("secret")
    uris = {
        "dotdot": str(root / ".." / "secret.html"),
        "absolute": str(secret),
        "link": str(root / "innocent.html"),
    }
    (root / "innocent.html").symlink_to(secret)
    version = await stored_version(
        tracking,
        auth,
        default_project,
        root,
        visualizations=[{"type": "html", "uri": uris[escape]}],
    )
    response = await tracking.get(f"{VERSIONS}/{version['id']}/visualize", headers=auth)
    assert response.status_code == 404
    assert "secret" not in response.text.replace("secret.html", "")


async def test_visualize_without_a_store_is_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await create_version(
        tracking, auth, default_project, visualizations=[{"type": "html", "uri": "/x"}]
    )
    response = await tracking.get(f"{VERSIONS}/{version['id']}/visualize", headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"] == [
        "KeyError",
        f"Artifact version {version['id']} has no artifact store",
    ]


# --- download -----------------------------------------------------------------------------


async def test_download_of_a_directory_artifact(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    _, root = await default_store(tracking, auth)
    data = root / "model" / "1"
    (data / "sub").mkdir(parents=True)
    (data / "a.txt").write_text("alpha")
    (data / "sub" / "b.txt").write_text("beta!")
    version = await stored_version(tracking, auth, default_project, data)
    response = await download(tracking, auth, version)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/gzip"
    assert response.headers["content-disposition"] == 'attachment; filename="model-1.tar.gz"'
    assert members(response) == {
        ".": (True, 0o755, None),
        "a.txt": (False, 0o644, b"alpha"),
        "sub": (True, 0o755, None),
        "sub/b.txt": (False, 0o644, b"beta!"),
    }


async def test_download_of_a_single_file_is_one_member_named_dot(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    _, root = await default_store(tracking, auth)
    (root / "weights.bin").write_bytes(b"\x00\x01\x02")
    version = await stored_version(tracking, auth, default_project, root / "weights.bin")
    assert members(await download(tracking, auth, version)) == {
        ".": (False, 0o644, b"\x00\x01\x02"),
    }


async def test_download_leaves_out_links_that_leave_the_store(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json, tmp_path: Path
) -> None:
    _, root = await default_store(tracking, auth)
    data = root / "linked"
    data.mkdir()
    (data / "ok.txt").write_text("ok")
    (tmp_path / "secret.txt").write_text("secret")
    (data / "leak.txt").symlink_to(tmp_path / "secret.txt")
    version = await stored_version(tracking, auth, default_project, data)
    assert set(members(await download(tracking, auth, version))) == {".", "ok.txt"}


async def test_download_token_is_bound_to_one_version(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    _, root = await default_store(tracking, auth)
    (root / "f").write_text("x")
    first = await stored_version(tracking, auth, default_project, root / "f")
    second = await stored_version(tracking, auth, default_project, root / "f")
    token = (await tracking.get(f"{VERSIONS}/{first['id']}/download-token", headers=auth)).json()
    response = await tracking.get(f"{VERSIONS}/{second['id']}/data", params={"token": token})
    assert response.status_code == 401
    assert response.json()["detail"] == ["CredentialsNotValid", "Invalid resource ID"]


async def version_and_download_token(
    tracking: httpx.AsyncClient, auth: Headers, project: Json
) -> tuple[Json, str]:
    """A version whose data is one small file, and a download token for it."""
    _, root = await default_store(tracking, auth)
    (root / "f").write_text("x")
    version = await stored_version(tracking, auth, project, root / "f")
    token = await tracking.get(f"{VERSIONS}/{version['id']}/download-token", headers=auth)
    assert token.status_code == 200, token.text
    return version, token.json()


async def test_download_token_claims_and_lifetime(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version, token = await version_and_download_token(tracking, auth, default_project)
    claims = jwt.decode(token, options={"verify_signature": False})
    assert set(claims) == {"exp", "download_type", "resource_id"}
    assert claims["resource_id"] == version["id"]
    assert claims["download_type"] == "artifact_version"
    lifetime = claims["exp"] - dt.datetime.now(dt.UTC).timestamp()
    assert 0 < lifetime <= 30


async def test_expired_or_forged_tokens_are_401(
    tracking: httpx.AsyncClient,
    auth: Headers,
    default_project: Json,
    tracking_app: LifespanApp,
) -> None:
    _, root = await default_store(tracking, auth)
    (root / "f").write_text("x")
    version = await stored_version(tracking, auth, default_project, root / "f")
    secret = tracking_app.state["downloads"].secret
    claims = {"download_type": "artifact_version", "resource_id": version["id"]}
    expired = jwt.encode({**claims, "exp": 1}, secret, algorithm="HS256")
    forged = jwt.encode(
        {**claims, "exp": 4102444800}, "not-the-secret-but-long-enough-for-hs256", algorithm="HS256"
    )
    for token in (expired, forged, "garbage"):
        response = await tracking.get(f"{VERSIONS}/{version['id']}/data", params={"token": token})
        assert response.status_code == 401
        assert response.json()["detail"][1].startswith("Invalid JWT token")


async def test_padded_download_token_is_401(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version, token = await version_and_download_token(tracking, auth, default_project)
    data = f"{VERSIONS}/{version['id']}/data"
    response = await tracking.get(data, params={"token": padded(token)})
    assert response.status_code == 401
    assert response.json()["detail"] == [
        "CredentialsNotValid",
        "Invalid JWT token: token signature is not valid base64url",
    ]
    assert (await tracking.get(data, params={"token": token})).status_code == 200


async def test_data_without_a_token_is_422(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await create_version(tracking, auth, default_project)
    response = await tracking.get(f"{VERSIONS}/{version['id']}/data")
    assert response.status_code == 422


async def test_download_token_needs_a_login(tracking: httpx.AsyncClient) -> None:
    response = await tracking.get(f"{VERSIONS}/{uuid.uuid4()}/download-token")
    assert response.status_code == 401


async def test_download_token_without_a_store_is_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await create_version(tracking, auth, default_project)
    response = await tracking.get(f"{VERSIONS}/{version['id']}/download-token", headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"] == [
        "KeyError",
        f"Artifact version {version['id']} has no artifact store",
    ]


async def test_download_token_for_missing_data_is_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    _, root = await default_store(tracking, auth)
    version = await stored_version(tracking, auth, default_project, root / "never-written")
    response = await tracking.get(f"{VERSIONS}/{version['id']}/download-token", headers=auth)
    assert response.status_code == 404
    assert response.json()["detail"][1] == (
        f"The artifact URI '{root / 'never-written'}' does not exist."
    )


async def test_download_token_outside_the_store_is_403(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    version = await stored_version(tracking, auth, default_project, Path("/etc"))
    response = await tracking.get(f"{VERSIONS}/{version['id']}/download-token", headers=auth)
    assert response.status_code == 403
    assert "outside of artifact store bounds" in response.json()["detail"][1]


async def test_data_vanished_after_the_token_is_404(
    tracking: httpx.AsyncClient, auth: Headers, default_project: Json
) -> None:
    _, root = await default_store(tracking, auth)
    (root / "brief").write_text("x")
    version = await stored_version(tracking, auth, default_project, root / "brief")
    token = (await tracking.get(f"{VERSIONS}/{version['id']}/download-token", headers=auth)).json()
    (root / "brief").unlink()
    response = await tracking.get(f"{VERSIONS}/{version['id']}/data", params={"token": token})
    assert response.status_code == 404
