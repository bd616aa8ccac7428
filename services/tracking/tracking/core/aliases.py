"""The reference's deprecated paths, which older clients still call, as route aliases (the
same handlers): ``/pipeline_deployments``, the old name of ``/pipeline_snapshots``, and
``/workspaces/{project_name_or_id}/<resource>`` (``/workspaces/{..}/resources`` being
``/service_connectors/resources``).

As the reference, the path's project scopes a list (it wins over ``?project=``) and a
created resource (it wins over the body's ``project``), where the resource is
project-scoped (over ``?project=`` and ``?project_name_or_id=`` too); stacks,
components, service connectors and their resources are global, and there it is ignored
(not even looked up, as the reference). (Two workspace paths are no alias and stay with
their handlers: a model's versions, which has no other path, and secrets', whose segment
the reference names ``workspace_name_or_id``.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TypeVar

from starlette.requests import Request
from starlette.routing import BaseRoute

from shared.routing import ApiRoute, parse_json, parse_query
from tracking.core.schemas import ProjectQuery, ScopedListQuery, ScopedRequest

__all__ = [
    "RENAMED",
    "WORKSPACE_ALIASES",
    "WORKSPACE_TARGETS",
    "aliases",
    "renamed_aliases",
    "scoped_body",
    "scoped_query",
    "workspace_aliases",
    "workspace_project",
]

PREFIX = "/api/v1/workspaces/{project_name_or_id}"
PARAMETER = "project_name_or_id"

# Old names of a resource's paths (new -> old) and the methods served under them.
RENAMED: Mapping[str, tuple[str, tuple[str, ...]]] = {
    "/api/v1/pipeline_snapshots": ("/api/v1/pipeline_deployments", ("GET", "POST", "DELETE")),
}

# The resources whose deprecated workspace paths ZenML 0.96.3 still serves, and the
# methods it serves there.
WORKSPACE_ALIASES: Mapping[str, tuple[str, ...]] = {
    "pipelines": ("GET", "POST"),
    "runs": ("GET", "POST"),
    "schedules": ("GET", "POST"),
    "stacks": ("GET", "POST"),
    "components": ("GET", "POST"),
    "pipeline_deployments": ("GET", "POST"),
    "pipeline_builds": ("GET", "POST"),
    "code_repositories": ("GET", "POST"),
    "run_templates": ("GET", "POST"),
    "services": ("POST",),
    "models": ("POST",),
    "run-metadata": ("POST",),
    "service_connectors": ("GET", "POST"),  # global: the path's project is ignored
    "resources": ("GET",),
}

# The workspace paths named otherwise than their resource path (name -> resource path).
WORKSPACE_TARGETS: Mapping[str, str] = {"resources": "service_connectors/resources"}

Q = TypeVar("Q", bound=ScopedListQuery)
R = TypeVar("R", bound=ScopedRequest)


def _alias(route: ApiRoute, path: str, methods: list[str]) -> ApiRoute:
    operation = dataclasses.replace(route.operation, operation_id=None)
    return ApiRoute(path, route.endpoint, methods=methods, operation=operation)


def renamed_aliases(
    routes: Sequence[BaseRoute], renamed: Mapping[str, tuple[str, tuple[str, ...]]] = RENAMED
) -> list[ApiRoute]:
    """Each route under a renamed path (itself or one level below it, ``/{id}``) again
    under the old name, for the methods the old name serves."""
    found = []
    for route in routes:
        if not isinstance(route, ApiRoute):
            continue
        for new, (old, allowed) in renamed.items():
            rest = route.path.removeprefix(new)
            if rest != route.path and (not rest or (rest.count("/") == 1 and rest[1] == "{")):
                methods = [m for m in route.methods or () if m in allowed]
                if methods:
                    found.append(_alias(route, old + rest, methods))
    return found


def aliases(routes: Sequence[BaseRoute]) -> list[ApiRoute]:
    """Every alias of ``routes``: the renamed paths, and the workspace paths of both."""
    renamed = renamed_aliases(routes)
    return [*renamed, *workspace_aliases([*routes, *renamed])]


def workspace_aliases(
    routes: Sequence[BaseRoute],
    aliases: Mapping[str, tuple[str, ...]] = WORKSPACE_ALIASES,
    targets: Mapping[str, str] = WORKSPACE_TARGETS,
) -> list[ApiRoute]:
    """For each ``/api/v1/<resource>`` route of ``aliases``' methods, the same handler and
    operation at ``/api/v1/workspaces/{project_name_or_id}/<name>``: the resource's name,
    or the one ``targets`` gives it."""
    names = {resource: name for name, resource in targets.items()}
    found = []
    for route in routes:
        if not isinstance(route, ApiRoute) or not route.path.startswith("/api/v1/"):
            continue
        resource = route.path.removeprefix("/api/v1/")
        name = names.get(resource, resource)
        if targets.get(name, name) != resource:
            continue  # a name another resource's alias takes
        methods = [m for m in route.methods or () if m in aliases.get(name, ())]
        if methods:
            found.append(_alias(route, f"{PREFIX}/{name}", methods))
    return found


def workspace_project(request: Request) -> str | None:
    """The project (a name or id) of a deprecated workspace path; None on the resource's
    own path."""
    project: str | None = request.path_params.get(PARAMETER)
    return project


def scoped_query(request: Request, model: type[Q]) -> Q:
    """The list's scope; on a workspace path, its project."""
    query = parse_query(request, model)
    workspace = workspace_project(request)
    if workspace is None:
        return query
    update: dict[str, str | None] = {"project": workspace}
    if "project_name_or_id" in model.model_fields:  # the snapshots' overriding parameter
        update["project_name_or_id"] = None
    return query.model_copy(update=update)


async def scoped_body(request: Request, model: type[R]) -> R:
    """The request to create; on a workspace path (or given ``?project_name_or_id=``), for
    that project."""
    body = await parse_json(request, model)
    workspace = workspace_project(request)
    body.in_workspace(workspace or parse_query(request, ProjectQuery).project_name_or_id)
    return body
