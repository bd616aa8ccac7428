"""Path parameters typed as the reference types them, on every reference operation the
platform serves (tracking's and identity's): a ``format: uuid`` segment that is not a UUID
is the reference's 422 naming the path parameter (not a 404 or a 500), and a segment the
reference types as a string (a name or an id) takes a name (whatever the answer, it does
not blame the path)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from deploy.config import DEFAULT_STACK_FILE, load_stack
from deploy.coverage import REFERENCE, load_reasons, measure, platform_routes, reference_operations
from tests.support.asgi import LifespanApp
from tests.support.path_types import misdocumented_path_parameters

SAMPLE_ID = "3f2a9c1e-0b7d-4e52-9a61-7c8d2e4f5a10"
NOT_A_UUID = "not-a-uuid"
A_NAME = "no-such-name"
PARAMETER = re.compile(r"\{([^}/]+)\}")

Case = tuple[str, str, str, str, str]  # owner, method, reference path, parameter, value


def _takes_a_string(schema: dict[str, Any]) -> bool:
    """Whether the schema admits a string that is not a UUID."""
    options = schema.get("anyOf", [schema])
    return any(o.get("type") == "string" and "format" not in o for o in options)


def _is_uuid(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "string" and schema.get("format") == "uuid"


def _cases() -> Iterator[Case]:
    stack = load_stack(DEFAULT_STACK_FILE)
    coverage = measure(stack, reference_operations(), load_reasons(), platform_routes(stack))
    document = json.loads(REFERENCE.read_text(encoding="utf-8"))
    for (method, path), owner in coverage.served.items():
        parameters = document["paths"][path][method.lower()].get("parameters", [])
        for parameter in parameters:
            if parameter["in"] != "path":
                continue
            if _is_uuid(parameter["schema"]):
                yield owner, method, path, parameter["name"], NOT_A_UUID
            elif _takes_a_string(parameter["schema"]):
                yield owner, method, path, parameter["name"], A_NAME


CASES = list(_cases())


def _url(path: str, name: str, value: str) -> str:
    return PARAMETER.sub(lambda m: value if m.group(1) == name else SAMPLE_ID, path)


def _path_errors(response: httpx.Response) -> list[Any]:
    """The 422's errors that blame the path. Not by the reference's parameter name: the
    deprecated ``/pipeline_deployments/{deployment_id}`` is its new path's handler, whose
    parameter is ``snapshot_id``."""
    if response.status_code != 422:
        return []
    errors = response.json()["detail"]
    assert isinstance(errors, list), response.text
    return [e for e in errors if isinstance(e, dict) and e["loc"][0] == "path"]


def test_the_cases_cover_both_kinds_of_parameter():
    values = [case[4] for case in CASES]
    assert values.count(NOT_A_UUID) > 100
    assert values.count(A_NAME) > 30
    assert {case[0] for case in CASES} == {"tracking", "identity"}


@pytest.fixture
async def clients(
    tracking: httpx.AsyncClient, identity_app: LifespanApp
) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    transport = httpx.ASGITransport(app=identity_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as identity:
        yield {"tracking": tracking, "identity": identity}


async def test_path_parameters_are_typed_as_the_reference(
    clients: dict[str, httpx.AsyncClient], auth: dict[str, str]
) -> None:
    wrong = []
    for owner, method, path, name, value in CASES:
        response = await clients[owner].request(method, _url(path, name, value), headers=auth)
        blamed = _path_errors(response)
        if value == NOT_A_UUID:
            fine = response.status_code == 422 and [e["type"] for e in blamed] == ["uuid_parsing"]
        else:
            fine = response.status_code < 500 and not blamed
        if not fine:
            wrong.append(
                f"{method} {path} ({name}={value}): {response.status_code} {response.text}"
            )
    assert wrong == [], "\n".join(wrong)


async def test_our_documents_type_path_parameters_as_the_handlers_parse_them(
    clients: dict[str, httpx.AsyncClient], auth: dict[str, str]
) -> None:
    for owner, client in clients.items():
        checked, wrong = await misdocumented_path_parameters(client, auth)
        assert checked > 10, owner
        assert wrong == [], "\n".join(wrong)
