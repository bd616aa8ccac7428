"""``/pipeline_builds`` (and the deprecated ``/workspaces/{project}/pipeline_builds``)."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import render_null
from shared.routing import ApiRoute, api_route, parse_query, path_param
from tracking.core.aliases import scoped_body, scoped_query
from tracking.core.auth import caller, caller_id
from tracking.core.rendering import render_one, render_page
from tracking.core.schemas import HydrateQuery, ProjectQuery
from tracking.pipeline_build.repository import PIPELINE_BUILDS
from tracking.pipeline_build.schemas import (
    PipelineBuildListQuery,
    PipelineBuildRequest,
    PipelineBuildResponse,
    pipeline_build_response,
)
from tracking.pipeline_build.service import PipelineBuildService

LIST_QUERY = PIPELINE_BUILDS.query_model(extra=query_extras(PipelineBuildListQuery))


async def list_builds(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, PIPELINE_BUILDS)
    # On the deprecated path, its project segment wins over the query parameter.
    query = scoped_query(request, PipelineBuildListQuery)
    async with transaction(request) as session:
        total, items = await PipelineBuildService(session).list_page(listing, query)
    return await render_page(request, listing, total, items, pipeline_build_response)


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    body = await scoped_body(request, PipelineBuildRequest)
    async with transaction(request) as session:
        item = await PipelineBuildService(session).create(body, user_id)
    return await render_one(request, item, pipeline_build_response, hydrate=True)


async def get(request: Request) -> Response:
    caller_id(request)
    build_id = path_param(request, "build_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        item = await PipelineBuildService(session).get(build_id)
    return await render_one(request, item, pipeline_build_response, hydrate=query.hydrate)


async def delete(request: Request) -> Response:
    caller_id(request)
    build_id = path_param(request, "build_id", uuid.UUID)
    async with transaction(request) as session:
        await PipelineBuildService(session).delete(build_id)
    return render_null()


def routes() -> list[ApiRoute]:
    many = "/api/v1/pipeline_builds"
    one = many + "/{build_id:uuid_param}"
    tags = ["builds"]
    return [
        api_route(
            many,
            list_builds,
            method="GET",
            summary="List Builds",
            tags=tags,
            query=LIST_QUERY,
            response=Page[PipelineBuildResponse],
            errors=(400, 404),
        ),
        api_route(
            many,
            create,
            method="POST",
            query=ProjectQuery,
            summary="Create Build",
            tags=tags,
            body=PipelineBuildRequest,
            response=PipelineBuildResponse,
            errors=(404,),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Build",
            tags=tags,
            query=HydrateQuery,
            response=PipelineBuildResponse,
            errors=(404,),
        ),
        api_route(one, delete, method="DELETE", summary="Delete Build", tags=tags, errors=(404,)),
    ]
