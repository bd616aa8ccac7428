"""``GET /api/v1/onboarding_state``: the steps identity records itself, and the ones tracking's
data shows, recorded once seen."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
import pytest

from identity.app import create_app
from identity.settings import Settings
from tests.identity.conftest import ADMIN, ADMIN_PASSWORD, Clock, Login, bearer
from tests.identity.device.support import authorize, verify
from tests.identity.server_settings.support import assert_reference_shape, member
from tests.support.asgi import client_for

ONBOARDING = "/api/v1/onboarding_state"


@dataclass
class Tracking:
    """Tracking's internal onboarding route, as identity reaches it over HTTP."""

    steps: object = field(default_factory=list)
    status: int = 200
    calls: list[httpx.Request] = field(default_factory=list)

    def handle(self, request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/internal/v1/onboarding_state"
        self.calls.append(request)
        return httpx.Response(self.status, json=self.steps)


@pytest.fixture
def tracking() -> Tracking:
    return Tracking()


@pytest.fixture
async def client(
    identity_settings: Settings, clock: Clock, tracking: Tracking
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(
        identity_settings, clock=clock, http_transport=httpx.MockTransport(tracking.handle)
    )
    async with client_for(app) as client:
        yield client


def logging_in(client: httpx.AsyncClient) -> Login:
    async def login(name: str = ADMIN, password: str = ADMIN_PASSWORD) -> str:
        response = await client.post("/api/v1/login", data={"username": name, "password": password})
        assert response.status_code == 200, response.text
        client.cookies.clear()
        token: str = response.json()["access_token"]
        return token

    return login


async def _token(client: httpx.AsyncClient) -> str:
    return await logging_in(client)()


async def _state(client: httpx.AsyncClient, token: str) -> list[str]:
    response = await client.get(ONBOARDING, headers=bearer(token))
    assert response.status_code == 200, response.text
    assert_reference_shape("OnboardingState", response.json())
    steps: list[str] = response.json()
    return steps


async def test_a_new_server_has_completed_no_step(client: httpx.AsyncClient):
    assert await _state(client, await _token(client)) == []


async def test_a_verified_device_completes_device_verified(client: httpx.AsyncClient):
    token = await _token(client)
    response = await verify(client, token, await authorize(client))
    assert response.status_code == 200
    assert await _state(client, token) == ["device_verified"]


async def test_a_refused_verification_completes_nothing(client: httpx.AsyncClient):
    token = await _token(client)
    response = await verify(client, token, await authorize(client), user_code="0" * 32)
    assert response.status_code == 400
    assert await _state(client, token) == []


async def test_tracking_is_asked_as_identitys_service(
    client: httpx.AsyncClient, tracking: Tracking
):
    await _state(client, await _token(client))
    scheme, token = tracking.calls[0].headers["Authorization"].split()
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert (scheme, claims["sub"]) == ("Bearer", "service:identity")


async def test_steps_tracking_shows_are_recorded_and_kept(
    client: httpx.AsyncClient, tracking: Tracking
):
    token = await _token(client)
    tracking.steps = ["pipeline_run", "project_created"]
    assert await _state(client, token) == ["project_created", "pipeline_run"]
    # Tracking's data no longer shows them (the run was deleted): completed all the same.
    tracking.steps = []
    assert await _state(client, token) == ["project_created", "pipeline_run"]


async def test_tracking_is_not_asked_once_its_steps_are_all_recorded(
    client: httpx.AsyncClient, tracking: Tracking
):
    token = await _token(client)
    tracking.steps = [
        "project_created",
        "pipeline_run",
        "stack_with_remote_orchestrator_created",
        "stack_with_remote_artifact_store_created",
        "pipeline_run_with_remote_orchestrator",
        "pipeline_run_with_remote_artifact_store",
        "pipeline_deployed",
        "oss_onboarding_completed",
        "pro_onboarding_completed",
    ]
    assert len(await _state(client, token)) == 9
    asked = len(tracking.calls)
    assert len(await _state(client, token)) == 9
    assert len(tracking.calls) == asked


async def test_steps_that_are_not_trackings_are_ignored(
    client: httpx.AsyncClient, tracking: Tracking
):
    tracking.steps = ["device_verified", "a_step_of_a_newer_tracking", "pipeline_deployed"]
    assert await _state(client, await _token(client)) == ["pipeline_deployed"]


@pytest.mark.parametrize(("status", "steps"), [(503, {"detail": "down"}), (200, {"not": "a list"})])
async def test_the_recorded_steps_answer_while_tracking_cannot(
    client: httpx.AsyncClient, tracking: Tracking, status: int, steps: object
):
    token = await _token(client)
    await verify(client, token, await authorize(client))
    tracking.status, tracking.steps = status, steps
    assert await _state(client, token) == ["device_verified"]


async def test_any_user_reads_the_onboarding_state(client: httpx.AsyncClient, tracking: Tracking):
    tracking.steps = ["project_created"]
    token = await member(client, logging_in(client))
    assert await _state(client, token) == ["project_created"]


async def test_the_onboarding_state_needs_a_login(client: httpx.AsyncClient):
    response = await client.get(ONBOARDING)
    assert response.status_code == 401
