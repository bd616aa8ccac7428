"""Resource pools, subject policies and resource requests: read as the reference reads
them (422 for what its models refuse), then refused as its open-source server refuses
them (501 ``NotImplementedError``)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.tracking.artifact.support import Headers

SOME_ID = "5b1c2c34-1f6e-4c2e-9a55-3f4b1c0d2e7a"
REFUSED = ["NotImplementedError", "Resource pool functionality is not enabled"]
POLICY = {"component_id": SOME_ID, "pool_id": SOME_ID, "priority": 1}


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/api/v1/resource_pools", {"name": "gpus", "capacity": {"gpu": 2}}),
        ("GET", "/api/v1/resource_pools?page=2&size=5", None),
        ("GET", f"/api/v1/resource_pools/{SOME_ID}", None),
        ("PUT", f"/api/v1/resource_pools/{SOME_ID}", {"capacity": {"gpu": 0}}),
        ("DELETE", f"/api/v1/resource_pools/{SOME_ID}", None),
        ("POST", "/api/v1/resource_pool_subject_policies", POLICY),
        ("GET", "/api/v1/resource_pool_subject_policies", None),
        ("PUT", f"/api/v1/resource_pool_subject_policies/{SOME_ID}", {"priority": 0}),
        ("DELETE", f"/api/v1/resource_pool_subject_policies/{SOME_ID}", None),
        ("GET", "/api/v1/resource_requests", None),
        ("GET", f"/api/v1/resource_requests/{SOME_ID}", None),
        ("DELETE", f"/api/v1/resource_requests/{SOME_ID}", None),
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
        ("PUT", f"/api/v1/resource_pool_subject_policies/{SOME_ID}", {}),
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
