"""The project a request names on the reference's deprecated ``/workspaces/{project}/...``
paths (their ``{project_name_or_id}`` segment), which wins over the query parameter of the
same name."""

from __future__ import annotations

from typing import TypeVar

from starlette.requests import Request

from shared.routing import parse_query
from tracking.core.schemas import ProjectQuery, WorkspaceListQuery

Query = TypeVar("Query", bound=WorkspaceListQuery)


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
