from __future__ import annotations

import httpx


async def test_info_reports_the_kitaru_version_and_local_scheme(client: httpx.AsyncClient):
    response = await client.get("/api/v1/info")
    assert response.status_code == 200
    body = response.json()
    assert body["version"] == "0.27.2"
    assert body["auth_scheme"] == "local"
    assert body["analytics_enabled"] is False
    assert body["server_url"] == "http://testserver"


async def test_health_ready_and_openapi_are_served(client: httpx.AsyncClient):
    assert (await client.get("/health")).status_code == 200
    assert (await client.get("/ready")).status_code == 200
    document = (await client.get("/openapi.json")).json()
    assert document["info"]["version"] == "0.27.2"
    assert "/api/v1/api-keys/{api_key_id}/rotate" in document["paths"]


async def test_an_unknown_route_answers_detail_not_found(client: httpx.AsyncClient):
    response = await client.get("/api/v1/nothing-here")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not Found"}


async def test_liveness_answers_as_kitaru_doctor_expects(client: httpx.AsyncClient):
    response = await client.get("/health/live")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_kitaru_session_routes_not_served_here_answer_501_with_a_sentence(
    client: httpx.AsyncClient,
):
    session = "/api/v1/sessions/0190a3c2-0000-7000-8000-000000000000"
    calls = [
        ("GET", f"{session}/nodes", "/api/v1/sessions/{session_id}/nodes"),
        ("POST", f"{session}/nodes", "/api/v1/sessions/{session_id}/nodes"),
        ("POST", f"{session}/evaluations", "/api/v1/sessions/{session_id}/evaluations"),
    ]
    for method, path, route in calls:
        response = await client.request(method, path)
        assert response.status_code == 501, (method, path)
        assert response.json() == {"detail": f"{route} is not implemented by this server."}


async def test_deletes_are_documented_as_204_without_a_body(client: httpx.AsyncClient):
    paths = (await client.get("/openapi.json")).json()["paths"]
    deletes = {path: item["delete"] for path, item in paths.items() if "delete" in item}
    assert {"/api/v1/api-keys/{api_key_id}", "/api/v1/devices/{device_id}"} <= set(deletes)
    for path, operation in deletes.items():
        assert operation["responses"]["204"] == {"description": "No Content"}, path


async def test_json_bodies_read_as_their_defaults_when_left_out_are_documented_optional(
    client: httpx.AsyncClient,
):
    paths = (await client.get("/openapi.json")).json()["paths"]
    optional = {"/api/v1/api-keys/{api_key_id}/rotate", "/api/v1/tasks/claim"}
    for path, item in paths.items():
        for method, operation in item.items():
            body = operation.get("requestBody", {})
            if "application/json" in body.get("content", {}):
                required = body["required"]
                assert required is (path not in optional), (method, path)
