"""The dashboard's onboarding checklist on the real stack: ``GET /api/v1/onboarding_state``
through the gateway names the steps tracking's data shows, identity asking tracking's
internal route with its service token; the gateway does not route that internal route."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.processes import LaunchedStack, stack_for_tests

pytestmark = pytest.mark.e2e

ADMIN_PASSWORD = f"Onb-{secrets.token_urlsafe(12)}"
Json = dict[str, Any]


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, databases_of_stack: dict[str, str]
) -> Iterator[LaunchedStack]:
    with stack_for_tests(
        tmp_path_factory, "onboarding", admin_password=ADMIN_PASSWORD, databases=databases_of_stack
    ) as up:
        yield up


class Platform:
    """The platform entrypoint, as the stack's first admin."""

    def __init__(self, stack: LaunchedStack, http: httpx.Client) -> None:
        self.stack = stack
        self.http = http
        response = http.post(
            stack.url("platform", "/api/v1/login"),
            data={"username": "default", "password": ADMIN_PASSWORD},
        )
        assert response.status_code == 200, response.text
        http.cookies.clear()
        self.headers = {"Authorization": f"Bearer {response.json()['access_token']}"}

    def get(self, path: str) -> httpx.Response:
        return self.http.get(self.stack.url("platform", path), headers=self.headers)

    def send(self, method: str, path: str, body: Json) -> Any:
        url = self.stack.url("platform", path)
        response = self.http.request(method, url, json=body, headers=self.headers)
        assert response.status_code == 200, response.text
        return response.json()

    def onboarding_state(self) -> list[str]:
        response = self.get("/api/v1/onboarding_state")
        assert response.status_code == 200, response.text
        steps: list[str] = response.json()
        return steps


@pytest.fixture(scope="module")
def platform(stack: LaunchedStack) -> Iterator[Platform]:
    with httpx.Client(timeout=30.0, trust_env=False) as http:
        yield Platform(stack, http)


def test_onboarding_state_names_the_steps_as_their_data_appears(platform: Platform) -> None:
    # The default project is made at the first start, as the reference's is.
    assert platform.onboarding_state() == ["project_created"]
    project = platform.send(
        "POST", "/api/v1/projects", {"name": f"onboarding-{uuid.uuid4().hex[:6]}"}
    )
    assert platform.onboarding_state() == ["project_created"]

    store = platform.send(
        "POST",
        "/api/v1/components",
        {
            "name": "bucket",
            "type": "artifact_store",
            "flavor": "s3",
            "configuration": {
                "path": "s3://onboarding/store",
                "key": "AKIAONBOARDING",
                "secret": "s",
            },
        },
    )
    runner = platform.send(
        "POST",
        "/api/v1/components",
        {"name": "runner", "type": "orchestrator", "flavor": "local", "configuration": {}},
    )
    components = {"artifact_store": [store["id"]], "orchestrator": [runner["id"]]}
    remote = platform.send("POST", "/api/v1/stacks", {"name": "remote", "components": components})
    assert platform.onboarding_state() == [
        "project_created",
        "stack_with_remote_artifact_store_created",
    ]

    pipeline = platform.send("POST", "/api/v1/pipelines", {"project": project["id"], "name": "p"})
    snapshot = platform.send(
        "POST",
        "/api/v1/pipeline_snapshots",
        {
            "project": project["id"],
            "run_name_template": "run-{date}",
            "pipeline_configuration": {"name": "p"},
            "stack": remote["id"],
            "pipeline": pipeline["id"],
        },
    )
    run = {"project": project["id"], "name": "r", "snapshot": snapshot["id"], "status": "running"}
    created, _ = platform.send("POST", "/api/v1/runs", run)
    platform.send("PUT", f"/api/v1/runs/{created['id']}", {"status": "completed"})
    assert platform.onboarding_state() == [
        "project_created",
        "pipeline_run",
        "stack_with_remote_artifact_store_created",
        "pipeline_run_with_remote_artifact_store",
    ]


def test_the_gateway_does_not_route_trackings_onboarding_question(platform: Platform) -> None:
    # Tracking would answer a user's token 401 in JSON; the gateway has no route there, so
    # the path is the dashboard's (its index.html, as for any path that is not the API's).
    response = platform.get("/internal/v1/onboarding_state")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/html")
    assert '<div id="root"></div>' in response.text
