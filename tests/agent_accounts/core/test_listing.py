"""Each list's document names the sorts it takes, and the list takes exactly those."""

from __future__ import annotations

import httpx

LISTS = (
    "/api/v1/accounts",
    "/api/v1/api-keys",
    "/api/v1/devices",
    "/api/v1/sessions",
    "/api/v1/tasks",
    "/api/v1/workers",
)


async def test_documented_sorts_are_the_sorts_each_list_takes(
    client: httpx.AsyncClient, admin: dict[str, str]
) -> None:
    document = (await client.get("/openapi.json")).json()
    for path in LISTS:
        parameters = document["paths"][path]["get"]["parameters"]
        [sort] = [p["schema"] for p in parameters if p["name"] == "sort"]
        assert sort["default"] in sort["enum"], path
        keys = sorted({value.split(":")[0] for value in sort["enum"]})
        assert sort["enum"] == [f"{k}:{d}" for k in keys for d in ("asc", "desc")], path
        for value in sort["enum"]:
            response = await client.get(path, params={"sort": value}, headers=admin)
            assert response.status_code != 422, (path, value, response.text)
        refused = await client.get(path, params={"sort": "zzz:asc"}, headers=admin)
        assert refused.status_code == 422, (path, refused.text)
        assert f"use one of {keys}" in refused.text, (path, refused.text)
