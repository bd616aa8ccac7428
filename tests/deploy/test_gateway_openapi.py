"""Merging the services' OpenAPI documents into one per gateway entrypoint
(deploy/gateway/openapi.py), on small documents written here."""

from __future__ import annotations

import copy
import re
from typing import Any

import jsonschema_rs
import pytest
from schemathesis.specs.openapi.definitions import OPENAPI_31

from deploy.config import Stack, parse_stack
from deploy.gateway.openapi import MergeError, merge, route_owner

SCHEMES = {
    "CookieOAuth2TokenBearer": {
        "type": "oauth2",
        "flows": {"password": {"scopes": {}, "tokenUrl": "/api/v1/login"}},
    }
}
ERROR = {"type": "object", "properties": {"detail": {"title": "Detail"}}}


def make_stack() -> Stack:
    def service(name: str, port: int, entrypoint: str, routes: list[str]) -> dict[str, Any]:
        return {"name": name, "module": name, "kind": "web", "port": port,
                "entrypoint": entrypoint, "routes": routes}  # fmt: skip

    return parse_stack(
        {
            "gateway": {},
            "valkey": {"port": 6399},
            "postgres": {"port": 5499},
            "entrypoint": [
                {
                    "name": "platform",
                    "title": "platform API",
                    "port": 8080,
                    "unimplemented": ["/api/v1/tags"],
                },
                {
                    "name": "agent",
                    "title": "agent server",
                    "port": 8090,
                    "error_style": "agent",
                    "unimplemented": ["/api/v1/agents"],
                },
            ],
            "service": [
                {
                    **service("users", 8101, "platform", ["/api/v1/users", "/api/v1/login"]),
                    "issuer": True,
                },
                service("runs", 8102, "platform", ["/api/v1/runs", "/api/v1/users/me/runs"]),
                service("hooks", 8103, "platform", ["/api/v1/hooks"]),
                service("agents", 8104, "agent", ["/"]),
            ],
        }
    )


STACK = make_stack()
PLATFORM = STACK.entrypoint("platform")
AGENT = STACK.entrypoint("agent")


def operation(operation_id: str, schema: str | None = None, tag: str = "things") -> dict[str, Any]:
    error = {"schema": {"$ref": "#/components/schemas/ErrorModel"}}
    responses: dict[str, Any] = {
        "200": {"description": "Successful Response"},
        "404": {"description": "Not Found", "content": {"application/json": error}},
    }
    if schema is not None:
        ref = {"$ref": f"#/components/schemas/{schema}"}
        responses["200"]["content"] = {"application/json": {"schema": ref}}
    return {"operationId": operation_id, "tags": [tag], "responses": responses}


def document(
    paths: dict[str, dict[str, Any]], schemas: dict[str, Any], version: str = "0.96.3"
) -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": "a service", "version": version, "description": ""},
        "paths": paths,
        "components": {
            "schemas": {"ErrorModel": ERROR, **schemas},
            "securitySchemes": copy.deepcopy(SCHEMES),
        },
    }


def platform_documents() -> dict[str, dict[str, Any]]:
    page = {"type": "object", "properties": {"items": {"type": "array"}}}
    return {
        "users": document(
            {
                "/api/v1/users": {"get": operation("list_users", "UserPage", "users")},
                "/api/v1/login": {"post": operation("login", None, "auth")},
                # Reached on runs' longer prefix, not users'.
                "/api/v1/users/me/runs": {"get": operation("users_runs", "Gone")},
                "/internal/v1/keys": {"get": operation("keys", "Internal")},
            },
            {
                "UserPage": {
                    "type": "object",
                    "properties": {"query": {"$ref": "#/components/schemas/DeleteQuery"}},
                },
                "DeleteQuery": {"type": "object", "properties": {"user": {"type": "string"}}},
                "Gone": {"type": "string"},
                "Internal": {"type": "string"},
                "Unused": {"type": "integer"},
            },
        ),
        "runs": document(
            {
                "/api/v1/runs": {
                    "get": operation("list_runs", "Page", "runs"),
                    "delete": operation("delete_runs", "DeleteQuery", "runs"),
                },
                "/api/v1/users/me/runs": {"get": operation("my_runs", "Page", "runs")},
                "/api/v1/tags": {"get": operation("tags", "Page")},
                # The same schema text as users' UserPage, whose DeleteQuery differs.
                "/api/v1/runs/page": {"get": operation("run_page", "UserPage", "runs")},
            },
            {
                "Page": page,
                "DeleteQuery": {"type": "object", "properties": {"run": {"type": "string"}}},
                "UserPage": {
                    "type": "object",
                    "properties": {"query": {"$ref": "#/components/schemas/DeleteQuery"}},
                },
            },
        ),
        "hooks": document(
            {"/api/v1/hooks/{hook_id}": {"get": operation("get_hook", "Page", "hooks")}},
            {"Page": page},
        ),
    }


def assert_valid_openapi_31(merged: dict[str, Any]) -> None:
    # The OpenAPI 3.1 meta-schema (structure; formats are not asserted: the reference's own
    # tokenUrl, a relative URL, is no absolute "uri"), and every reference resolves.
    jsonschema_rs.Draft202012Validator(OPENAPI_31, validate_formats=False).validate(merged)
    names = re.compile(r"^[a-zA-Z0-9._-]+$")  # what OpenAPI allows a component to be called
    for entries in merged["components"].values():
        assert all(names.match(name) for name in entries), list(entries)
    refs: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            refs.extend(v for k, v in value.items() if k == "$ref")
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(merged)
    for ref in refs:
        section, name = ref.removeprefix("#/components/").split("/")
        assert name in merged["components"][section], ref


@pytest.mark.parametrize(
    ("entrypoint", "path", "owner"),
    [
        (PLATFORM, "/api/v1/users", "users"),
        (PLATFORM, "/api/v1/users/{user_id}", "users"),
        (PLATFORM, "/api/v1/users/me/runs", "runs"),  # the longest prefix, as nginx picks
        (PLATFORM, "/api/v1/usersX", None),
        (PLATFORM, "/api/v1/tags", None),  # the gateway's 501
        (PLATFORM, "/internal/v1/keys", None),
        (AGENT, "/api/v1/anything", "agents"),  # "/" takes what nothing else does
        (AGENT, "/api/v1/agents/{id}", None),
    ],
)
def test_a_path_belongs_to_the_service_the_gateway_sends_it_to(entrypoint, path, owner):
    assert route_owner(STACK, entrypoint, path) == owner


def test_only_the_paths_the_entrypoint_routes_to_each_service_are_kept():
    merged = merge(STACK, PLATFORM, platform_documents())
    assert list(merged["paths"]) == [
        "/api/v1/hooks/{hook_id}",
        "/api/v1/login",
        "/api/v1/runs",
        "/api/v1/runs/page",
        "/api/v1/users",
        "/api/v1/users/me/runs",
    ]
    assert merged["paths"]["/api/v1/users/me/runs"]["get"]["operationId"] == "my_runs"
    assert set(merged["paths"]["/api/v1/runs"]) == {"get", "delete"}
    assert_valid_openapi_31(merged)


def test_info_is_the_entrypoints_and_the_shape_the_reference_has():
    merged = merge(STACK, PLATFORM, platform_documents())
    assert merged["openapi"] == "3.1.0"
    assert merged["info"]["title"] == "platform API"
    assert merged["info"]["version"] == "0.96.3"
    assert set(merged) == {"openapi", "info", "paths", "components", "tags"}
    assert merged["components"]["securitySchemes"] == SCHEMES


def test_same_schemas_are_kept_once_and_unused_ones_left_out():
    schemas = merge(STACK, PLATFORM, platform_documents())["components"]["schemas"]
    assert schemas["Page"]["properties"] == {"items": {"type": "array"}}
    assert schemas["ErrorModel"] == ERROR
    assert not {"Gone", "Internal", "Unused", "ErrorModel.users"} & set(schemas)


def test_a_name_with_different_schemas_is_renamed_per_service_with_its_references():
    merged = merge(STACK, PLATFORM, platform_documents())
    schemas = merged["components"]["schemas"]
    assert "DeleteQuery" not in schemas
    assert schemas["users.DeleteQuery"]["properties"] == {"user": {"type": "string"}}
    assert schemas["runs.DeleteQuery"]["properties"] == {"run": {"type": "string"}}
    delete = merged["paths"]["/api/v1/runs"]["delete"]["responses"]["200"]["content"]
    assert delete["application/json"]["schema"] == {"$ref": "#/components/schemas/runs.DeleteQuery"}
    # UserPage reads the same in both, but each points at its own DeleteQuery.
    assert "UserPage" not in schemas
    users = schemas["users.UserPage"]["properties"]["query"]
    assert users == {"$ref": "#/components/schemas/users.DeleteQuery"}
    runs = schemas["runs.UserPage"]["properties"]["query"]
    assert runs == {"$ref": "#/components/schemas/runs.DeleteQuery"}
    assert_valid_openapi_31(merged)


def test_tags_are_every_operations_sorted():
    merged = merge(STACK, PLATFORM, platform_documents())
    assert merged["tags"] == [{"name": t} for t in ("auth", "hooks", "runs", "users")]


def test_a_service_taking_every_path_keeps_all_but_the_unimplemented():
    agents = document(
        {
            "/api/v1/info": {"get": operation("info")},
            "/health/live": {"get": operation("live")},
            "/api/v1/agents": {"get": operation("agents")},
        },
        {},
        version="0.27.2",
    )
    merged = merge(STACK, AGENT, {"agents": agents})
    assert list(merged["paths"]) == ["/api/v1/info", "/health/live"]
    assert merged["info"]["version"] == "0.27.2"
    assert merged["info"]["title"] == "agent server"


def test_services_disagreeing_on_the_version_fail():
    documents = platform_documents()
    documents["hooks"]["info"]["version"] = "0.1.0"
    with pytest.raises(MergeError, match="version"):
        merge(STACK, PLATFORM, documents)


def test_one_operation_id_on_two_services_fails():
    documents = platform_documents()
    documents["hooks"]["paths"]["/api/v1/hooks/{hook_id}"]["get"]["operationId"] = "list_runs"
    with pytest.raises(MergeError, match="operationId 'list_runs'"):
        merge(STACK, PLATFORM, documents)


def test_different_security_schemes_of_one_name_fail():
    documents = platform_documents()
    flows = documents["runs"]["components"]["securitySchemes"]["CookieOAuth2TokenBearer"]
    flows["flows"]["password"]["tokenUrl"] = "/elsewhere"
    with pytest.raises(MergeError, match="CookieOAuth2TokenBearer"):
        merge(STACK, PLATFORM, documents)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(servers=[{"url": "/"}]), "top-level"),
        (lambda d: d["components"]["schemas"].pop("Page"), "not defined"),
        (lambda d: d.update(openapi="3.0.3"), "openapi"),
    ],
)
def test_documents_that_cannot_be_merged_faithfully_fail(change, message):
    documents = platform_documents()
    change(documents["runs"])
    with pytest.raises(MergeError, match=message):
        merge(STACK, PLATFORM, documents)


def test_an_entrypoint_without_documents_fails():
    with pytest.raises(MergeError, match="no service document"):
        merge(STACK, AGENT, platform_documents())
