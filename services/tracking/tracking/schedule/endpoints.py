"""``/schedules``: when pipelines run; workload tokens may be scoped to one."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from shared.auth import ScopeKind
from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query
from tracking.core.aliases import scoped_body, scoped_query
from tracking.core.auth import MANAGING_KINDS, caller, caller_id, object_id
from tracking.core.rendering import render_one, render_page
from tracking.core.schemas import HydrateQuery, ProjectQuery, WorkspaceListQuery
from tracking.schedule.repository import SCHEDULES
from tracking.schedule.schemas import (
    ScheduleRequest,
    ScheduleResponse,
    ScheduleUpdate,
    schedule_response,
)
from tracking.schedule.service import ScheduleService

LIST_QUERY = SCHEDULES.query_model(extra=query_extras(WorkspaceListQuery))
SCOPE = ScopeKind.SCHEDULE


async def list_(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, SCHEDULES)
    query = scoped_query(request, WorkspaceListQuery)
    async with transaction(request) as session:
        total, items = await ScheduleService(session).list_page(listing, query.scope())
    return await render_page(request, listing, total, items, schedule_response)


async def create(request: Request) -> Response:
    user_id = caller_id(request, kinds=MANAGING_KINDS)
    body = await scoped_body(request, ScheduleRequest)
    async with transaction(request) as session:
        item = await ScheduleService(session).create(body, user_id)
    return await render_one(request, item, schedule_response, hydrate=True)


async def get(request: Request) -> Response:
    schedule_id = object_id(request, "schedule_id", SCOPE)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        item = await ScheduleService(session).get(schedule_id)
    return await render_one(request, item, schedule_response, hydrate=query.hydrate)


async def update(request: Request) -> Response:
    schedule_id = object_id(request, "schedule_id", SCOPE)
    body = await parse_json(request, ScheduleUpdate)
    async with transaction(request) as session:
        item = await ScheduleService(session).update(schedule_id, body)
    return await render_one(request, item, schedule_response, hydrate=True)


async def delete(request: Request) -> Response:
    schedule_id = object_id(request, "schedule_id", SCOPE)
    async with transaction(request) as session:
        await ScheduleService(session).delete(schedule_id)
    return render_null()


def routes() -> list[ApiRoute]:
    many = "/api/v1/schedules"
    one = many + "/{schedule_id:uuid_param}"
    tags = ["schedules"]
    return [
        api_route(
            many,
            list_,
            method="GET",
            summary="List Schedules",
            tags=tags,
            query=LIST_QUERY,
            response=Page[ScheduleResponse],
            errors=(400, 404),
        ),
        api_route(
            many,
            create,
            method="POST",
            summary="Create Schedule",
            tags=tags,
            query=ProjectQuery,
            body=ScheduleRequest,
            response=ScheduleResponse,
            errors=(400, 404, 409),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Schedule",
            tags=tags,
            query=HydrateQuery,
            response=ScheduleResponse,
            errors=(404,),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Schedule",
            tags=tags,
            body=ScheduleUpdate,
            response=ScheduleResponse,
            errors=(400, 404, 409),
        ),
        api_route(
            one, delete, method="DELETE", summary="Delete Schedule", tags=tags, errors=(400, 404)
        ),
    ]
