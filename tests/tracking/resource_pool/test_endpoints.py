"""Resource pools, subject policies and resource requests: read as the reference reads
them (422 for what its models refuse), then refused as its open-source server refuses
them (501 ``NotImplementedError``)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.tracking.artifact.support import Headers

REFUSED = ["NotImplementedError", "Resource pool functionality is not enabled"]
POLICY = {"component_id": str(uuid.uuid4()), "pool_id": str(uuid.uuid4()), "priority": 1}


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/api/v1/resource_pools", {"name": "gpus", "capacity": {"gpu": 2}}),
        ("GET", "/api/v1/resource_pools?page=2&size=5", None),
        ("GET", f"/api/v1/resource_pools/{uuid.uuid4()}", None),
        ("PUT", f"/api/v1/resource_pools/{uuid.uuid4()}", {"capacity": {"gpu": 0}}),
        ("DELETE", f"/api/v1/resource_pools/{uuid.uuid4()}", None),
        ("POST", "/api/v1/resource_pool_subject_policies", POLICY),
        ("GET", "/api/v1/resource_pool_subject_policies", None),
        ("PUT", f"/api/v1/resource_pool_subject_policies/{uuid.uuid4()}", {"priority": 0}),
        ("DELETE", f"/api/v1/resource_pool_subject_policies/{uuid.uuid4()}", None),
        ("GET", "/api/v1/resource_requests", None),
        ("GET", f"/api/v1/resource_requests/{uuid.uuid4()}", None),
        ("DELETE", f"/api/v1/resource_requests/{uuid.uuid4()}", None),
    ],
)
async def test_valid_requests_are_refused_with_501(
    tracking: httpx.AsyncClient, auth: Headers, method: str, path: str, body: Any
) -> None:
    response = await tracking.request(method, path, json=body, headers=auth)
    assert response.status_code == 501, response.text
    assert response.json()["detail"] == REFUSED


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/api/v1/resource_pools", {"name": "empty", "capacity": {}}),
        ("POST", "/api/v1/resource_pools", {"name": "zero", "capacity": {"gpu": 0}}),
        ("PUT", "/api/v1/resource_pools/not-an-id", {}),
        (
            "POST",
            "/api/v1/resource_pool_subject_policies",
            {**POLICY, "reserved": {"gpu": 3}, "limit": {"gpu": 2}},
        ),
        ("PUT", f"/api/v1/resource_pool_subject_policies/{uuid.uuid4()}", {}),
        ("GET", "/api/v1/resource_requests?page=0", None),
    ],
)
async def test_bad_input_is_a_422_first(
    tracking: httpx.AsyncClient, auth: Headers, method: str, path: str, body: Any
) -> None:
    response = await tracking.request(method, path, json=body, headers=auth)
    assert response.status_code == 422, response.text


async def test_anonymous_callers_are_refused(tracking: httpx.AsyncClient) -> None:
    response = await tracking.get("/api/v1/resource_pools")
    assert response.status_code == 401
