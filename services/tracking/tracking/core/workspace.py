"""The project a request names on the reference's deprecated ``/workspaces/{project}/...``
paths (their ``{project_name_or_id}`` segment), which wins over the query parameter of the
same name."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import Response

from shared.routing import ApiRoute, api_route, parse_query
from tracking.core.schemas import ProjectQuery, WorkspaceListQuery

Query = TypeVar("Query", bound=WorkspaceListQuery)
Handler = Callable[[Request], Awaitable[Response]]


def named_project(request: Request) -> str | None:
    """The project to create in: the path's segment, else ``?project_name_or_id=``."""
    project: str | None = request.path_params.get("project_name_or_id")
    return project or parse_query(request, ProjectQuery).project_name_or_id


def workspace_list_query(request: Request, model: type[Query]) -> Query:
    """A list's scope parameters, the path's project segment over the query's."""
    query = parse_query(request, model)
    if project := request.path_params.get("project_name_or_id"):
        query.project_name_or_id = project
    return query


def create_routes(many: str, workspace: str, handler: Handler, **operation: Any) -> list[ApiRoute]:
    """A create on its path (the project as ``?project_name_or_id=``) and on the
    deprecated workspace path (the project as the path's segment)."""
    return [
        api_route(many, handler, method="POST", query=ProjectQuery, **operation),
        api_route(workspace, handler, method="POST", **operation),
    ]


def list_routes(many: str, workspace: str, handler: Handler, **operation: Any) -> list[ApiRoute]:
    """A list on its path and on the deprecated workspace path."""
    return [api_route(path, handler, method="GET", **operation) for path in (many, workspace)]
