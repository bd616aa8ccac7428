"""Every list of ZenML 0.96.3's OpenAPI document takes every query parameter the reference
declares for it, or says here why not: a list that ignored a declared filter would answer
unfiltered, and a caller (the dashboard, the client) would take that for the filtered
answer.

The reference's list operations are its GETs with a ``page`` parameter; each is routed as
``deploy/coverage.py`` routes it (the gateway's table, then the owning service's routes),
and what the route understands is its operation's query model: its list's filter fields,
the common list parameters and the extras its handler reads (see
:meth:`shared.listing.ListSpec.query_model`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache

import pytest
from pydantic import BaseModel
from starlette.routing import BaseRoute, Match

from deploy.config import DEFAULT_STACK_FILE, Stack, load_stack
from deploy.coverage import ENTRYPOINT, PARAMETER, REFERENCE, SAMPLE_PARAMETER, platform_routes
from deploy.gateway.openapi import route_owner
from shared.routing import ApiRoute
from tracking.core.aliases import PREFIX, WORKSPACE_TARGETS

NOT_A_LIST = "refused (501) as the reference's open-source server refuses it: nothing to filter"

# (resource path, parameter) -> why that list does not take the reference's parameter.
# A deprecated ``/workspaces/{project}/<name>`` path shares its resource path's entries.
NOT_TAKEN: Mapping[tuple[str, str], str] = {
    (path, name): NOT_A_LIST
    for path, names in {
        "/api/v1/resource_pools": ("id", "created", "updated", "scope_user", "user", "name"),
        "/api/v1/resource_pool_subject_policies": (
            *("id", "created", "updated", "scope_user", "user"),
            *("pool_id", "component_id", "priority"),
        ),
        "/api/v1/resource_requests": (
            *("id", "created", "updated", "scope_user", "user", "preemptible"),
            *("component_id", "step_run_id", "preemption_initiated_by_id", "status"),
            "pipeline_run_id",
        ),
    }.items()
    for name in names
}


def _resource_path(path: str) -> str:
    """The resource path a deprecated workspace path is an alias of (else ``path``)."""
    if not path.startswith(f"{PREFIX}/"):
        return path
    name = path.removeprefix(f"{PREFIX}/")
    return f"/api/v1/{WORKSPACE_TARGETS.get(name, name)}"


@cache
def reference_lists() -> dict[str, tuple[str, ...]]:
    """Each list operation's path and the query parameters the reference declares."""
    document = json.loads(REFERENCE.read_text(encoding="utf-8"))
    found = {}
    for path, item in document["paths"].items():
        parameters = item.get("get", {}).get("parameters", [])
        names = tuple(p["name"] for p in parameters if p["in"] == "query")
        if "page" in names:
            found[path] = names
    return found


@cache
def _routes() -> tuple[Stack, Mapping[str, Sequence[BaseRoute]]]:
    stack = load_stack(DEFAULT_STACK_FILE)
    return stack, platform_routes(stack)


def understood(path: str) -> set[str]:
    """The query parameters our route for the reference's ``GET path`` understands."""
    stack, routes = _routes()
    concrete = PARAMETER.sub(SAMPLE_PARAMETER, path)
    owner = route_owner(stack, stack.entrypoint(ENTRYPOINT), concrete)
    scope = {"type": "http", "method": "GET", "path": concrete, "root_path": ""}
    for route in routes.get(owner or "", ()):
        if route.matches(scope)[0] is Match.FULL:
            assert isinstance(route, ApiRoute), route
            query: type[BaseModel] | None = route.operation.query
            return set(query.model_fields) if query is not None else set()
    raise AssertionError(f"GET {path} is not served")


def missing(path: str) -> list[str]:
    resource = _resource_path(path)
    taken = understood(path)
    return [
        name
        for name in reference_lists()[path]
        if name not in taken and (resource, name) not in NOT_TAKEN
    ]


def test_the_reference_has_list_operations_to_walk() -> None:
    lists = reference_lists()
    assert "/api/v1/runs" in lists
    assert "/api/v1/workspaces/{project_name_or_id}/runs" in lists
    assert len(lists) > 40


@pytest.mark.parametrize("path", sorted(reference_lists()))
def test_a_list_takes_every_filter_the_reference_declares(path: str) -> None:
    assert missing(path) == [], f"GET {path} ignores filters the reference declares"


def test_every_parameter_not_taken_is_one_the_reference_declares_and_we_lack() -> None:
    declared = {
        (_resource_path(path), name): path
        for path, names in reference_lists().items()
        for name in names
    }
    for resource, name in NOT_TAKEN:
        assert (resource, name) in declared, f"{resource} declares no {name}"
        assert name not in understood(declared[(resource, name)]), (
            f"{resource} takes {name} now: remove it from NOT_TAKEN"
        )
