"""``/tags`` and ``/tag_resources`` (one link, or a batch of them)."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import render, render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from tracking.core.auth import caller, caller_id
from tracking.core.rendering import render_one, render_page
from tracking.core.schemas import HydrateQuery
from tracking.tag.repository import TAGS
from tracking.tag.schemas import (
    TagListQuery,
    TagRequest,
    TagResourceRequest,
    TagResourceResponse,
    TagResponse,
    TagUpdate,
    tag_resource_response,
    tag_response,
)
from tracking.tag.service import TagService

LIST_QUERY = TAGS.query_model(extra=query_extras(TagListQuery))


async def list_tags(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, TAGS)
    query = parse_query(request, TagListQuery)
    async with transaction(request) as session:
        total, rows = await TagService(session).list_page(listing, query)
    return await render_page(request, listing, total, rows, tag_response)


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    body = await parse_json(request, TagRequest)
    async with transaction(request) as session:
        row = await TagService(session).create(body, user_id)
    return await render_one(request, row, tag_response, hydrate=True)


async def get(request: Request) -> Response:
    caller_id(request)
    tag_id = path_param(request, "tag_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        row = await TagService(session).get(tag_id)
    return await render_one(request, row, tag_response, hydrate=query.hydrate)


async def update(request: Request) -> Response:
    caller_id(request)
    tag_id = path_param(request, "tag_id", uuid.UUID)
    body = await parse_json(request, TagUpdate)
    async with transaction(request) as session:
        row = await TagService(session).update(tag_id, body)
    return await render_one(request, row, tag_response, hydrate=True)


async def delete(request: Request) -> Response:
    caller_id(request)
    tag_id = path_param(request, "tag_id", uuid.UUID)
    async with transaction(request) as session:
        await TagService(session).delete(tag_id)
    return render_null()


async def link(request: Request) -> Response:
    caller_id(request)
    body = await parse_json(request, TagResourceRequest)
    async with transaction(request) as session:
        links = await TagService(session).link([body])
    return render(tag_resource_response(links[0]))


async def link_batch(request: Request) -> Response:
    caller_id(request)
    body = await parse_json(request, list[TagResourceRequest])
    async with transaction(request) as session:
        links = await TagService(session).link(body)
    return render([tag_resource_response(row) for row in links])


async def unlink(request: Request) -> Response:
    caller_id(request)
    body = await parse_json(request, TagResourceRequest)
    async with transaction(request) as session:
        await TagService(session).unlink([body])
    return render_null()


async def unlink_batch(request: Request) -> Response:
    caller_id(request)
    body = await parse_json(request, list[TagResourceRequest])
    async with transaction(request) as session:
        await TagService(session).unlink(body)
    return render_null()


def routes() -> list[ApiRoute]:
    many = "/api/v1/tags"
    one = many + "/{tag_id:uuid_param}"
    links = "/api/v1/tag_resources"
    return [
        api_route(
            many,
            list_tags,
            method="GET",
            summary="List Tags",
            tags=["tags"],
            query=LIST_QUERY,
            response=Page[TagResponse],
            errors=(400, 404),
        ),
        api_route(
            many,
            create,
            method="POST",
            summary="Create Tag",
            tags=["tags"],
            body=TagRequest,
            response=TagResponse,
            errors=(400, 409),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Tag",
            tags=["tags"],
            query=HydrateQuery,
            response=TagResponse,
            errors=(404,),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Tag",
            tags=["tags"],
            body=TagUpdate,
            response=TagResponse,
            errors=(400, 404, 409),
        ),
        api_route(one, delete, method="DELETE", summary="Delete Tag", tags=["tags"], errors=(404,)),
        api_route(
            links,
            link,
            method="POST",
            summary="Create Tag Resource",
            tags=["tag_resources"],
            body=TagResourceRequest,
            response=TagResourceResponse,
            errors=(400, 404),
        ),
        api_route(
            links,
            unlink,
            method="DELETE",
            summary="Delete Tag Resource",
            tags=["tag_resources"],
            body=TagResourceRequest,
            errors=(404,),
        ),
        api_route(
            links + "/batch",
            link_batch,
            method="POST",
            summary="Batch Create Tag Resource",
            tags=["tag_resources"],
            body=list[TagResourceRequest],
            response=list[TagResourceResponse],
            errors=(400, 404),
        ),
        api_route(
            links + "/batch",
            unlink_batch,
            method="DELETE",
            summary="Batch Delete Tag Resource",
            tags=["tag_resources"],
            body=list[TagResourceRequest],
            errors=(404,),
        ),
    ]
