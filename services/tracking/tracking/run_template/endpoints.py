"""``/run_templates`` (and the deprecated ``/workspaces/{project}/run_templates``)."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from tracking.core.aliases import scoped_body, scoped_query
from tracking.core.auth import caller, caller_id
from tracking.core.rendering import render_one, render_page
from tracking.core.schemas import HydrateQuery, ProjectQuery, WorkspaceListQuery
from tracking.run_template.repository import RUN_TEMPLATES
from tracking.run_template.schemas import (
    RunTemplateRequest,
    RunTemplateResponse,
    RunTemplateUpdate,
    run_template_response,
)
from tracking.run_template.service import RunTemplateService

LIST_QUERY = RUN_TEMPLATES.query_model(extra=query_extras(WorkspaceListQuery))


async def list_(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, RUN_TEMPLATES)
    query = scoped_query(request, WorkspaceListQuery)
    async with transaction(request) as session:
        total, items = await RunTemplateService(session).list_page(listing, query)
    return await render_page(request, listing, total, items, run_template_response)


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    body = await scoped_body(request, RunTemplateRequest)
    async with transaction(request) as session:
        item = await RunTemplateService(session).create(body, user_id)
    return await render_one(request, item, run_template_response, hydrate=True)


async def get(request: Request) -> Response:
    caller_id(request)
    template_id = path_param(request, "template_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        item = await RunTemplateService(session).get(template_id)
    return await render_one(request, item, run_template_response, hydrate=query.hydrate)


async def update(request: Request) -> Response:
    user_id = caller_id(request)
    template_id = path_param(request, "template_id", uuid.UUID)
    body = await parse_json(request, RunTemplateUpdate)
    async with transaction(request) as session:
        item = await RunTemplateService(session).update(template_id, body, user_id)
    return await render_one(request, item, run_template_response, hydrate=True)


async def delete(request: Request) -> Response:
    caller_id(request)
    template_id = path_param(request, "template_id", uuid.UUID)
    async with transaction(request) as session:
        await RunTemplateService(session).delete(template_id)
    return render_null()


def routes() -> list[ApiRoute]:
    many = "/api/v1/run_templates"
    one = many + "/{template_id:uuid_param}"
    tags = ["run_templates"]
    return [
        api_route(
            many,
            list_,
            method="GET",
            summary="List Run Templates",
            tags=tags,
            query=LIST_QUERY,
            response=Page[RunTemplateResponse],
            errors=(400, 404),
        ),
        api_route(
            many,
            create,
            method="POST",
            query=ProjectQuery,
            summary="Create Run Template",
            tags=tags,
            body=RunTemplateRequest,
            response=RunTemplateResponse,
            errors=(400, 404, 409),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Run Template",
            tags=tags,
            query=HydrateQuery,
            response=RunTemplateResponse,
            errors=(404,),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Run Template",
            tags=tags,
            body=RunTemplateUpdate,
            response=RunTemplateResponse,
            errors=(400, 404, 409),
        ),
        api_route(
            one, delete, method="DELETE", summary="Delete Run Template", tags=tags, errors=(404,)
        ),
    ]
