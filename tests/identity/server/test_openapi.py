"""Identity's OpenAPI document describes the device flow and API token routes."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest


@pytest.fixture
async def document(identity: httpx.AsyncClient) -> dict[str, Any]:
    response = await identity.get("/openapi.json")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/api/v1/device_authorization", "post"),
        ("/api/v1/api_token", "get"),
        ("/api/v1/devices", "get"),
        ("/api/v1/devices/{device_id}", "get"),
        ("/api/v1/devices/{device_id}", "put"),
        ("/api/v1/devices/{device_id}", "delete"),
        ("/api/v1/devices/{device_id}/verify", "put"),
    ],
)
async def test_device_and_api_token_operations_are_documented(
    document: dict[str, Any], path: str, method: str
):
    assert method in document["paths"][path]


async def test_device_authorization_takes_a_form(document: dict[str, Any]):
    operation = document["paths"]["/api/v1/device_authorization"]["post"]
    assert "application/x-www-form-urlencoded" in operation["requestBody"]["content"]


async def test_device_list_documents_the_reference_filters(document: dict[str, Any]):
    operation = document["paths"]["/api/v1/devices"]["get"]
    names = {p["name"] for p in operation["parameters"]}
    assert names >= {
        "user",
        "expires",
        "client_id",
        "status",
        "trusted_device",
        "failed_auth_attempts",
        "last_login",
        "page",
        "size",
    }


async def test_api_token_documents_its_refusals(document: dict[str, Any]):
    responses = document["paths"]["/api/v1/api_token"]["get"]["responses"]
    assert {"200", "400", "401", "422", "503"} <= set(responses)


async def test_no_secret_travels_in_a_query_parameter(document: dict[str, Any]):
    # A name that is a credential (`token`, `api_key`), not one that qualifies (`token_type`).
    secretive = re.compile(r"(^|_)(token|key|secret|password)$", re.IGNORECASE)
    for path, operations in document["paths"].items():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query":
                    assert not secretive.search(parameter["name"]), (path, parameter["name"])
