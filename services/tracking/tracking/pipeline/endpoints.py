"""``/pipelines``: what snapshots, runs and deployments refer to."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from shared.users import users_by_id
from tracking.core.aliases import scoped_body, scoped_query
from tracking.core.auth import caller, caller_id
from tracking.core.rendering import render_one, render_page
from tracking.core.schemas import HydrateQuery, ProjectQuery, WorkspaceListQuery
from tracking.pipeline.repository import PIPELINES
from tracking.pipeline.schemas import (
    PipelineItem,
    PipelineRequest,
    PipelineResponse,
    PipelineUpdate,
    pipeline_response,
)
from tracking.pipeline.service import PipelineService

LIST_QUERY = PIPELINES.query_model(extra=query_extras(WorkspaceListQuery))


async def with_runners(request: Request, items: list[PipelineItem]) -> list[PipelineItem]:
    """The items with the creators of their latest runs, looked up in one batch."""
    runs = [item.latest_run for item in items if item.latest_run is not None]
    users = await users_by_id(request, [run.user_id for run in runs])
    return [
        item._replace(latest_run_user=users.get(item.latest_run.user_id))
        if item.latest_run is not None and item.latest_run.user_id is not None
        else item
        for item in items
    ]


async def list_(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, PIPELINES)
    query = scoped_query(request, WorkspaceListQuery)
    async with transaction(request) as session:
        total, items = await PipelineService(session).list_page(listing, query.scope())
    return await render_page(
        request, listing, total, await with_runners(request, items), pipeline_response
    )


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    body = await scoped_body(request, PipelineRequest)
    async with transaction(request) as session:
        item = await PipelineService(session).create(body, user_id)
    return await render_one(request, item, pipeline_response, hydrate=True)


async def get(request: Request) -> Response:
    caller_id(request)
    pipeline_id = path_param(request, "pipeline_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        item = await PipelineService(session).get(pipeline_id)
    (item,) = await with_runners(request, [item])
    return await render_one(request, item, pipeline_response, hydrate=query.hydrate)


async def update(request: Request) -> Response:
    user_id = caller_id(request)
    pipeline_id = path_param(request, "pipeline_id", uuid.UUID)
    body = await parse_json(request, PipelineUpdate)
    async with transaction(request) as session:
        item = await PipelineService(session).update(pipeline_id, body, user_id)
    (item,) = await with_runners(request, [item])
    return await render_one(request, item, pipeline_response, hydrate=True)


async def delete(request: Request) -> Response:
    caller_id(request)
    pipeline_id = path_param(request, "pipeline_id", uuid.UUID)
    async with transaction(request) as session:
        await PipelineService(session).delete(pipeline_id)
    return render_null()


def routes() -> list[ApiRoute]:
    many = "/api/v1/pipelines"
    one = many + "/{pipeline_id:uuid_param}"
    tags = ["pipelines"]
    return [
        api_route(
            many,
            list_,
            method="GET",
            summary="List Pipelines",
            tags=tags,
            query=LIST_QUERY,
            response=Page[PipelineResponse],
            errors=(400, 404),
        ),
        api_route(
            many,
            create,
            method="POST",
            summary="Create Pipeline",
            tags=tags,
            query=ProjectQuery,
            body=PipelineRequest,
            response=PipelineResponse,
            errors=(400, 404, 409),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Pipeline",
            tags=tags,
            query=HydrateQuery,
            response=PipelineResponse,
            errors=(404,),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Pipeline",
            tags=tags,
            body=PipelineUpdate,
            response=PipelineResponse,
            errors=(404,),
        ),
        api_route(
            one, delete, method="DELETE", summary="Delete Pipeline", tags=tags, errors=(400, 404)
        ),
    ]
