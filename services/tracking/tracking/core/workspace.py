"""The reference's deprecated ``/workspaces/{project_name_or_id}/<resource>`` paths, which
older clients still call: route aliases of the ``/<resource>`` routes (the same handlers).

As the reference, the path's project scopes a list (it wins over ``?project=``) and a
created resource (it wins over the body's ``project``), where the resource is
project-scoped; stacks and components are global, and there it is ignored.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TypeVar

from starlette.requests import Request
from starlette.routing import BaseRoute

from shared.routing import ApiRoute, parse_json, parse_query
from tracking.core.schemas import ScopedListQuery, ScopedRequest

__all__ = ["WORKSPACE_ALIASES", "scoped_body", "scoped_query", "workspace_aliases"]

PREFIX = "/api/v1/workspaces/{project_name_or_id}"
PARAMETER = "project_name_or_id"

# The resources whose deprecated workspace paths ZenML 0.96.3 still serves, and the
# methods it serves there.
WORKSPACE_ALIASES: Mapping[str, tuple[str, ...]] = {
    "pipelines": ("GET", "POST"),
    "runs": ("GET", "POST"),
    "schedules": ("GET", "POST"),
    "stacks": ("GET", "POST"),
    "components": ("GET", "POST"),
}

Q = TypeVar("Q", bound=ScopedListQuery)
R = TypeVar("R", bound=ScopedRequest)


def workspace_aliases(
    routes: Sequence[BaseRoute], aliases: Mapping[str, tuple[str, ...]] = WORKSPACE_ALIASES
) -> list[ApiRoute]:
    """For each ``/api/v1/<resource>`` route of ``aliases``' methods, the same handler and
    operation at ``/api/v1/workspaces/{project_name_or_id}/<resource>``."""
    found = []
    for route in routes:
        if not isinstance(route, ApiRoute) or not route.path.startswith("/api/v1/"):
            continue
        resource = route.path.removeprefix("/api/v1/")
        methods = [m for m in route.methods or () if m in aliases.get(resource, ())]
        if methods:
            operation = dataclasses.replace(route.operation, operation_id=None)
            found.append(
                ApiRoute(
                    f"{PREFIX}/{resource}", route.endpoint, methods=methods, operation=operation
                )
            )
    return found


def scoped_query(request: Request, model: type[Q]) -> Q:
    """The list's scope; on a workspace path, its project."""
    query = parse_query(request, model)
    workspace = request.path_params.get(PARAMETER)
    if workspace is not None:
        query.project = workspace
    return query


async def scoped_body(request: Request, model: type[R]) -> R:
    """The request to create; on a workspace path, for its project."""
    body = await parse_json(request, model)
    body.in_workspace(request.path_params.get(PARAMETER))
    return body
