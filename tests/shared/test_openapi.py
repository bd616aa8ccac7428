"""The OpenAPI document ``create_service_app`` serves at ``/openapi.json``.

``openapi-spec-validator`` is not installed here, so :func:`structural_problems` checks
what a validator would catch first: every ``$ref`` resolves, every operation has
responses, path parameters match their template, operation ids are unique.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from enum import StrEnum
from typing import Any

import pytest
from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount

from shared.openapi import build_openapi, iter_api_routes
from shared.pagination import Page, PageParams
from shared.routing import ApiRoute, api_route
from tests.shared.conftest import service_client
from tests.support.databases import Databases

METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


class Color(StrEnum):
    RED = "red"
    BLUE = "blue"


class Owner(BaseModel):
    id: uuid.UUID
    name: str


class Widget(BaseModel):
    name: str
    color: Color = Color.RED
    owner: Owner | None = None


class WidgetQuery(PageParams):
    name: str | None = Field(default=None, description="Filter by name.")
    color: list[Color] = Field(default_factory=list)


class TokenForm(BaseModel):
    grant_type: str
    device_code: str | None = None


async def handler(_request: Request) -> Response:
    raise NotImplementedError


# Two domains' handlers share a name, as STYLE.md's list/get/create convention makes them.
async def get(_request: Request) -> Response:
    raise NotImplementedError


ROUTES = [
    api_route(
        "/api/v1/widgets",
        handler,
        method="GET",
        summary="List Widgets",
        tags=["widgets"],
        query=WidgetQuery,
        response=Page[Widget],
        errors=(400,),
    ),
    api_route(
        "/api/v1/widgets",
        handler,
        method="POST",
        summary="Create Widget",
        body=Widget,
        response=Widget,
        errors=(409,),
    ),
    api_route(
        "/api/v1/widgets/{widget_id:uuid}",
        get,
        method="GET",
        summary="Get Widget",
        response=Widget,
    ),
    api_route(
        "/api/v1/owners/{owner_id}",
        get,
        method="GET",
        summary="Get Owner",
        response=Owner,
    ),
    api_route(
        "/api/v1/widgets/bulk",
        handler,
        method="PUT",
        summary="Replace Widgets",
        body=list[Widget],
        response=list[Widget],
    ),
    api_route(
        "/api/v1/widgets/{widget_id}",
        handler,
        method="DELETE",
        summary="Delete Widget",
    ),
    api_route(
        "/api/v1/owners/{owner_id:uuid_param}",
        handler,
        method="DELETE",
        summary="Delete Owner",
    ),
    api_route(
        "/api/v1/login",
        handler,
        method="POST",
        summary="Token",
        form=TokenForm,
        response=Owner,
        auth=False,
    ),
    Mount(
        "/api/v2",
        routes=[api_route("/owners", handler, method="GET", summary="List v2", response=Owner)],
    ),
]


@pytest.fixture(scope="module")
async def document(databases: Databases, redis_url: str) -> dict[str, Any]:
    async with service_client(
        databases, redis_url, ROUTES, title="widgets", version="4.5.6"
    ) as client:
        response = await client.get("/openapi.json")
    assert response.status_code == 200
    result: dict[str, Any] = response.json()
    return result


def walk_refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from walk_refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from walk_refs(item)


def structural_problems(doc: dict[str, Any]) -> list[str]:
    """What an OpenAPI 3.1 validator would object to first."""
    problems: list[str] = []
    if doc.get("openapi") != "3.1.0":
        problems.append("openapi is not 3.1.0")
    if not isinstance(doc.get("info", {}).get("title"), str):
        problems.append("info.title missing")
    if not isinstance(doc.get("info", {}).get("version"), str):
        problems.append("info.version missing")
    schemas = doc.get("components", {}).get("schemas", {})
    for ref in walk_refs(doc):
        name = ref.removeprefix("#/components/schemas/")
        if not ref.startswith("#/components/schemas/") or name not in schemas:
            problems.append(f"unresolved $ref {ref}")
    seen_ids: set[str] = set()
    for path, item in doc.get("paths", {}).items():
        if not path.startswith("/"):
            problems.append(f"path {path} does not start with /")
        template_params = set(re.findall(r"{([^}]+)}", path))
        for method, operation in item.items():
            where = f"{method.upper()} {path}"
            if method not in METHODS:
                problems.append(f"{where}: not an HTTP method")
                continue
            if not operation.get("responses"):
                problems.append(f"{where}: no responses")
            for status, response in operation.get("responses", {}).items():
                if not re.fullmatch(r"[1-5]\d\d|default", status):
                    problems.append(f"{where}: bad status {status}")
                if "description" not in response:
                    problems.append(f"{where}: response {status} has no description")
            op_id = operation.get("operationId")
            if op_id in seen_ids:
                problems.append(f"{where}: duplicate operationId {op_id}")
            seen_ids.add(op_id)
            params = operation.get("parameters", [])
            path_params = {p["name"] for p in params if p["in"] == "path"}
            if path_params != template_params:
                problems.append(f"{where}: path parameters {path_params} != {template_params}")
            for param in params:
                if param["in"] == "path" and param.get("required") is not True:
                    problems.append(f"{where}: path parameter {param['name']} not required")
                if "schema" not in param:
                    problems.append(f"{where}: parameter {param['name']} has no schema")
            body = operation.get("requestBody")
            if body is not None and not body.get("content"):
                problems.append(f"{where}: request body without content")
    return problems


def operation(doc: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    result: dict[str, Any] = doc["paths"][path][method]
    return result


def resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def test_openapi_document_is_3_1_with_the_given_title_and_version(document):
    assert document["openapi"] == "3.1.0"
    assert document["info"]["title"] == "widgets"
    assert document["info"]["version"] == "4.5.6"


def test_openapi_document_is_structurally_valid(document):
    assert structural_problems(document) == []


def test_structural_check_flags_an_unresolved_ref_and_a_missing_response():
    broken = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {"/x/{id}": {"get": {"responses": {}, "parameters": []}}},
        "components": {"schemas": {"A": {"$ref": "#/components/schemas/Missing"}}},
    }
    problems = structural_problems(broken)
    assert "unresolved $ref #/components/schemas/Missing" in problems
    assert "GET /x/{id}: no responses" in problems
    assert any("path parameters" in p for p in problems)


def test_every_api_route_appears_with_its_method(document):
    expected = {
        (path, method.lower())
        for path, route in iter_api_routes(ROUTES)
        if isinstance(route, ApiRoute)
        for method in route.methods or ()
        if method != "HEAD"
    }
    documented = {(path, method) for path, item in document["paths"].items() for method in item}
    assert documented == expected


def test_path_keys_use_the_template_without_convertors(document):
    assert "/api/v1/widgets/{widget_id}" in document["paths"]
    assert not [path for path in document["paths"] if ":" in path]
    [param] = operation(document, "/api/v1/widgets/{widget_id}", "get")["parameters"]
    assert param == {
        "name": "widget_id",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "format": "uuid"},
    }


def test_a_segment_the_handler_parses_as_a_uuid_is_documented_uuid(document):
    [by_name] = operation(document, "/api/v1/owners/{owner_id}", "get")["parameters"]
    [by_id] = operation(document, "/api/v1/owners/{owner_id}", "delete")["parameters"]
    assert by_name["schema"] == {"type": "string"}
    assert by_id["schema"] == {"type": "string", "format": "uuid"}


def test_mounted_routes_are_documented_under_the_mount_path(document):
    assert "get" in document["paths"]["/api/v2/owners"]


def test_query_model_fields_become_query_parameters(document):
    params = {p["name"]: p for p in operation(document, "/api/v1/widgets", "get")["parameters"]}
    assert set(params) == {"page", "size", "name", "color"}
    assert all(p["in"] == "query" and p["required"] is False for p in params.values())
    assert params["size"]["schema"]["maximum"] == 10000
    assert params["size"]["schema"]["minimum"] == 1
    assert params["name"]["description"] == "Filter by name."
    assert params["color"]["schema"]["type"] == "array"


def test_json_body_is_the_request_body(document):
    body = operation(document, "/api/v1/widgets", "post")["requestBody"]
    assert body["required"] is True
    schema = body["content"]["application/json"]["schema"]
    assert resolve(document, schema)["required"] == ["name"]


def test_list_body_is_an_array_of_the_model(document):
    body = operation(document, "/api/v1/widgets/bulk", "put")["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    assert schema["type"] == "array"
    assert set(resolve(document, schema["items"])["properties"]) == {"name", "color", "owner"}


def test_form_body_is_an_urlencoded_request_body(document):
    login = operation(document, "/api/v1/login", "post")
    content = login["requestBody"]["content"]
    assert list(content) == ["application/x-www-form-urlencoded"]
    assert resolve(document, content["application/x-www-form-urlencoded"]["schema"])[
        "required"
    ] == ["grant_type"]
    assert login["requestBody"]["required"] is True
    assert "security" not in login


class HelloForm(BaseModel):
    hostname: str | None = None


def test_a_form_without_required_fields_may_be_left_out():
    # parse_form reads a missing body as an empty form.
    route = api_route("/hello", handler, method="POST", summary="Hello", form=HelloForm)
    document = build_openapi([route], title="t", version="1")
    assert document["paths"]["/hello"]["post"]["requestBody"]["required"] is False


def test_response_model_is_the_success_schema(document):
    ok = operation(document, "/api/v1/widgets", "get")["responses"]["200"]
    page = resolve(document, ok["content"]["application/json"]["schema"])
    assert set(page["properties"]) == {"index", "max_size", "total_pages", "total", "items"}


def test_operation_without_response_model_documents_null(document):
    ok = operation(document, "/api/v1/widgets/{widget_id}", "delete")["responses"]["200"]
    assert ok["content"]["application/json"]["schema"] == {"type": "null"}


def test_declared_errors_and_auth_are_documented(document):
    responses = operation(document, "/api/v1/widgets", "post")["responses"]
    assert {"200", "401", "409", "422"} <= set(responses)
    # A request that does not validate, or one whose content the service refuses.
    assert responses["422"]["content"]["application/json"]["schema"] == {
        "anyOf": [
            {"$ref": "#/components/schemas/HTTPValidationError"},
            {"$ref": "#/components/schemas/ErrorModel"},
        ]
    }
    assert operation(document, "/api/v1/widgets", "post")["security"] == [
        {"CookieOAuth2TokenBearer": []}
    ]


def test_operation_ids_are_unique_when_handlers_share_a_name(document):
    ids = [op["operationId"] for item in document["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))
    assert operation(document, "/api/v1/owners/{owner_id}", "get")["operationId"] == (
        "get_api_v1_owners__owner_id__get"
    )


def test_shared_models_get_one_component(document):
    schemas = document["components"]["schemas"]
    assert "Owner" in schemas
    assert "Color" in schemas


def test_health_ready_and_openapi_routes_are_not_documented(document):
    assert not {"/health", "/ready", "/openapi.json"} & set(document["paths"])


def test_build_openapi_without_api_routes_is_an_empty_valid_document():
    doc = build_openapi([], title="empty", version="0")
    assert doc["paths"] == {}
    assert structural_problems(doc) == []
