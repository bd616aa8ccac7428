"""Artifact stores do not reach the server's own disk, network or credentials: the attacks
of a logged-in non-admin, against the real stack (one launcher for the module).

- local stores: a store at ``/``, or at a link inside the allowed root that leads to
  ``/``, is registered, but reading, downloading or deleting ``/proc/self/environ`` or the
  launcher's ``secrets.json`` through it is 403 with the reference's sentence, and the
  files stay;
- s3 stores: endpoints at identity's own port, a closed loopback port, a non-HTTP port and
  the cloud metadata address all fail with the same generic sentence, and a loopback
  listener of the test's sees no connection; an endpoint ending in ``?`` (which would turn
  bucket and key into a query string) is refused at registration and update.
"""

from __future__ import annotations

import secrets
import socket
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.security.support import ADMIN_PASSWORD, bearer, login
from tests.support.processes import LaunchedStack
from tests.support.redis_server import free_port
from tests.tracking.artifact_version.support import DATA_TYPE, MATERIALIZER, VERSIONS

pytestmark = pytest.mark.e2e

USER_PASSWORD = f"User-{secrets.token_urlsafe(12)}"
LOCAL_REFUSED = [
    "IllegalOperationError",
    "Files in a local artifact store cannot be accessed from the server.",
]
GENERIC = ["RuntimeError", "The server could not complete the request to the artifact store."]


class Api:
    """The platform API through the gateway, as one user."""

    def __init__(self, stack: LaunchedStack, client: httpx.Client, token: str) -> None:
        self.stack = stack
        self.client = client
        self.headers = bearer(token)

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        url = self.stack.url("platform", path)
        return self.client.request(method, url, headers=self.headers, **kwargs)

    def ok(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.call(method, path, **kwargs)
        assert response.status_code == 200, response.text
        return response.json()


@pytest.fixture(scope="module")
def mallory(stack: LaunchedStack, http: httpx.Client) -> Api:
    """A logged-in user who is not an admin."""
    admin = Api(stack, http, login(http, stack, "default", ADMIN_PASSWORD))
    admin.ok(
        "POST",
        "/api/v1/users",
        json={"name": "mallory", "is_admin": False, "password": USER_PASSWORD, "active": True},
    )
    return Api(stack, http, login(http, stack, "mallory", USER_PASSWORD))


def _store(api: Api, flavor: str, configuration: dict[str, Any]) -> str:
    created = api.ok(
        "POST",
        "/api/v1/components",
        json={
            "name": f"evil-{uuid.uuid4().hex[:8]}",
            "type": "artifact_store",
            "flavor": flavor,
            "configuration": configuration,
        },
    )
    store_id: str = created["id"]
    return store_id


def _version(api: Api, store_id: str, uri: str, visualization: str | None = None) -> str:
    project = api.ok("GET", "/api/v1/projects/default")
    body = {
        "project": project["id"],
        "artifact_name": f"loot-{uuid.uuid4().hex[:8]}",
        "type": "DataArtifact",
        "uri": uri,
        "materializer": MATERIALIZER,
        "data_type": DATA_TYPE,
        "save_type": "step_output",
        "artifact_store_id": store_id,
        "visualizations": [{"type": "html", "uri": visualization or uri}],
    }
    version_id: str = api.ok("POST", VERSIONS, json=body)["id"]
    return version_id


def _every_file_route(api: Api, version_id: str) -> dict[str, httpx.Response]:
    """Visualize, the download token (and the data, with a token if one came), delete."""
    answers = {
        "visualize": api.call("GET", f"{VERSIONS}/{version_id}/visualize", params={"index": 0}),
        "download-token": api.call("GET", f"{VERSIONS}/{version_id}/download-token"),
    }
    token = answers["download-token"].json() if answers["download-token"].is_success else "x"
    answers["data"] = api.call("GET", f"{VERSIONS}/{version_id}/data", params={"token": token})
    answers["delete"] = api.call(
        "DELETE", f"{VERSIONS}/{version_id}", params={"delete_from_artifact_store": "true"}
    )
    return answers


def _targets(stack: LaunchedStack) -> list[Path]:
    secrets_file = stack.data_dir / "secrets.json"
    assert secrets_file.is_file()
    return [Path("/proc/self/environ"), secrets_file]


def test_a_local_store_at_the_root_reads_and_deletes_nothing(
    stack: LaunchedStack, mallory: Api
) -> None:
    store_id = _store(mallory, "local", {"path": "/"})
    for target in _targets(stack):
        before = target.read_bytes()
        answers = _every_file_route(mallory, _version(mallory, store_id, str(target)))
        for route, response in answers.items():
            if route == "data":
                # No token was handed out, so the data route refuses the made-up one.
                assert response.status_code in (401, 403), response.text
                continue
            assert response.status_code == 403, f"{route}: {response.text}"
            assert response.json() == {"detail": LOCAL_REFUSED}, route
        assert target.read_bytes() == before


def test_a_local_store_through_a_link_out_of_the_allowed_root_is_refused(
    stack: LaunchedStack, mallory: Api
) -> None:
    link = stack.data_dir / "artifacts" / f"escape-{uuid.uuid4().hex[:8]}"
    link.symlink_to("/")
    store_id = _store(mallory, "local", {"path": str(link)})
    for target in _targets(stack):
        before = target.read_bytes()
        uri = str(link / target.relative_to("/"))
        answers = _every_file_route(mallory, _version(mallory, store_id, uri))
        for route in ("visualize", "download-token", "delete"):
            assert answers[route].status_code == 403, f"{route}: {answers[route].text}"
            assert answers[route].json() == {"detail": LOCAL_REFUSED}, route
        assert target.read_bytes() == before


@dataclass
class Listener:
    """A loopback port of the test's own and every connection made to it."""

    port: int
    accepted: list[socket.socket] = field(default_factory=list)


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    found = Listener(server.getsockname()[1])
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                found.accepted.append(server.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield found
    stop.set()
    thread.join()
    server.close()
    for connection in found.accepted:
        connection.close()


def test_s3_endpoints_inside_the_server_fail_alike_and_connect_nowhere(
    stack: LaunchedStack, mallory: Api, listener: Listener
) -> None:
    identity = stack.replica_ports["identity"][0]
    endpoints = {
        # GET /.well-known/jwks.json on identity's own port, as bucket and key.
        "identity": (f"http://127.0.0.1:{identity}", "s3://.well-known", "jwks.json"),
        "closed": (f"http://127.0.0.1:{free_port()}", "s3://bucket", "key"),
        "listener": (f"http://127.0.0.1:{listener.port}", "s3://bucket", "key"),
        "listener-https": (f"https://localhost:{listener.port}", "s3://bucket", "key"),
        "metadata": ("http://169.254.169.254", "s3://latest", "meta-data/iam/info"),
    }
    for name, (endpoint, path, key) in endpoints.items():
        store_id = _store(
            mallory, "s3", {"path": path, "client_kwargs": {"endpoint_url": endpoint}}
        )
        version_id = _version(mallory, store_id, f"{path}/{key}")
        for route in ("visualize", "download-token"):
            response = _every_file_route(mallory, version_id)[route]
            assert response.status_code == 502, f"{name} {route}: {response.text}"
            assert response.json() == {"detail": GENERIC}, f"{name} {route}"
    assert listener.accepted == []


@pytest.mark.parametrize(
    "endpoint",
    [
        "http://127.0.0.1:8237/.well-known/jwks.json?",
        "http://127.0.0.1:8237/metrics#",
        "http://user:password@127.0.0.1:8237",
    ],
)
def test_s3_endpoints_that_bend_the_object_url_are_refused(mallory: Api, endpoint: str) -> None:
    body = {
        "name": f"bent-{uuid.uuid4().hex[:8]}",
        "type": "artifact_store",
        "flavor": "s3",
        "configuration": {"path": "s3://bucket", "client_kwargs": {"endpoint_url": endpoint}},
    }
    response = mallory.call("POST", "/api/v1/components", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["detail"][0] == "ValueError"
    plain = {**body, "configuration": {"path": "s3://bucket"}}
    store_id = mallory.ok("POST", "/api/v1/components", json=plain)["id"]
    response = mallory.call(
        "PUT", f"/api/v1/components/{store_id}", json={"configuration": body["configuration"]}
    )
    assert response.status_code == 400, response.text
