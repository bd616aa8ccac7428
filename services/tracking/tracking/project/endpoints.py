"""``/projects`` and its deprecated alias ``/workspaces``."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import page_of, read_list
from shared.pagination import Page
from shared.responses import render, render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from tracking.core.auth import caller
from tracking.core.schemas import HydrateQuery
from tracking.project.repository import PROJECTS
from tracking.project.schemas import (
    ProjectListQuery,
    ProjectRequest,
    ProjectResponse,
    ProjectStatistics,
    ProjectUpdate,
    project_response,
)
from tracking.project.service import ProjectService

NAME_OR_ID = "project_name_or_id"


async def list_projects(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, PROJECTS)
    async with transaction(request) as session:
        total, projects = await ProjectService(session).list_page(listing)
    items = [project_response(p, hydrate=listing.hydrate) for p in projects]
    return render(page_of(listing, total, items))


async def create(request: Request) -> Response:
    caller(request)
    body = await parse_json(request, ProjectRequest)
    async with transaction(request) as session:
        project = await ProjectService(session).create(body)
    return render(project_response(project, hydrate=True))


async def get(request: Request) -> Response:
    caller(request)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        project = await ProjectService(session).get(request.path_params[NAME_OR_ID])
    return render(project_response(project, hydrate=query.hydrate))


async def update(request: Request) -> Response:
    caller(request)
    # The reference takes only an id here (a name is a 422), unlike its other paths.
    project_id = path_param(request, NAME_OR_ID, uuid.UUID)
    body = await parse_json(request, ProjectUpdate)
    async with transaction(request) as session:
        projects = ProjectService(session)
        project = await projects.get(str(project_id))
        project = await projects.update(project, body)
    return render(project_response(project, hydrate=True))


async def delete(request: Request) -> Response:
    caller(request)
    async with transaction(request) as session:
        projects = ProjectService(session)
        await projects.delete(await projects.get(request.path_params[NAME_OR_ID]))
    return render_null()


async def statistics(request: Request) -> Response:
    caller(request)
    async with transaction(request) as session:
        found = await ProjectService(session).statistics(request.path_params[NAME_OR_ID])
    return render(found)


def _routes(base: str, tags: list[str]) -> list[ApiRoute]:
    one = base + "/{" + NAME_OR_ID + "}"
    by_id = base + "/{" + NAME_OR_ID + ":uuid_param}"  # the reference's update takes an id only
    return [
        api_route(
            base,
            list_projects,
            method="GET",
            summary="List Projects",
            tags=tags,
            query=ProjectListQuery,
            response=Page[ProjectResponse],
            errors=(400, 422),
        ),
        api_route(
            base,
            create,
            method="POST",
            summary="Create Project",
            tags=tags,
            body=ProjectRequest,
            response=ProjectResponse,
            errors=(409, 422),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Project",
            tags=tags,
            query=HydrateQuery,
            response=ProjectResponse,
            errors=(404, 422),
        ),
        api_route(
            by_id,
            update,
            method="PUT",
            summary="Update Project",
            tags=tags,
            body=ProjectUpdate,
            response=ProjectResponse,
            errors=(403, 404, 409, 422),
        ),
        api_route(
            one, delete, method="DELETE", summary="Delete Project", tags=tags, errors=(403, 404)
        ),
        api_route(
            f"{one}/statistics",
            statistics,
            method="GET",
            summary="Get Project Statistics",
            tags=tags,
            response=ProjectStatistics,
            errors=(404,),
        ),
    ]


def routes() -> list[ApiRoute]:
    # /workspaces is the reference's deprecated name for the same resource.
    return [
        *_routes("/api/v1/projects", ["projects"]),
        *_routes("/api/v1/workspaces", ["workspaces"]),
    ]
