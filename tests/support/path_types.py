"""Our own documents against our handlers: a path parameter a handler parses as a UUID
(a segment that is not one is its 422 ``uuid_parsing`` naming the parameter) is
documented ``format: uuid``, and one documented so is never taken as a name."""

from __future__ import annotations

import re
from functools import partial
from typing import Any

import httpx

SAMPLE_ID = "3f2a9c1e-0b7d-4e52-9a61-7c8d2e4f5a10"
NOT_A_UUID = "not-a-uuid"
PARAMETER = re.compile(r"\{([^}/]+)\}")
WRITES = {"post", "put", "patch"}


def _blames_as_uuid(response: httpx.Response, name: str) -> bool:
    if response.status_code != 422:
        return False
    errors = response.json()["detail"]
    return isinstance(errors, list) and any(
        isinstance(e, dict) and e["loc"][:2] == ["path", name] and e["type"] == "uuid_parsing"
        for e in errors
    )


def _fill(match: re.Match[str], bad: str) -> str:
    """A path parameter's value: not a UUID for ``bad``, a UUID for the others."""
    return NOT_A_UUID if match[1] == bad else SAMPLE_ID


async def misdocumented_path_parameters(
    client: httpx.AsyncClient, headers: dict[str, str]
) -> tuple[int, list[str]]:
    """How many path parameters the service's own ``/openapi.json`` has, and each one
    whose type there disagrees with what its handler does with a segment that is not a
    UUID (the others hold a well-formed id)."""
    document: dict[str, Any] = (await client.get("/openapi.json")).json()
    checked = 0
    wrong: list[str] = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for parameter in operation.get("parameters", []):
                if parameter["in"] != "path":
                    continue
                name = parameter["name"]
                url = PARAMETER.sub(partial(_fill, bad=name), path)
                response = await client.request(
                    method, url, headers=headers, json={} if method in WRITES else None
                )
                checked += 1
                documented = parameter["schema"].get("format") == "uuid"
                blamed = _blames_as_uuid(response, name)
                # Documented as a UUID but answered before the path is read (a worker's
                # route refusing the admin, a body checked first) is fine; taken is not.
                if blamed != documented and (blamed or response.status_code < 400):
                    wrong.append(
                        f"{method.upper()} {path} ({name}, documented "
                        f"{parameter['schema']}): {response.status_code} {response.text[:200]}"
                    )
    return checked, wrong
