"""``/triggers``: list and get (what ``zenml trigger list`` calls). This server runs no
triggers, so their writes answer 501 (see :class:`TriggersNotRun`). ``/supported-events``:
the events a platform event trigger may name, by its source's type."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import render
from shared.routing import ApiRoute, api_route, parse_query, path_ids, path_param
from tracking.core.auth import caller, caller_id
from tracking.core.rendering import render_one, render_page
from tracking.core.schemas import HydrateQuery
from tracking.trigger.repository import TRIGGERS
from tracking.trigger.schemas import (
    SUPPORTED_EVENTS,
    SupportedEvent,
    SupportedEventsQuery,
    TriggerListQuery,
    TriggerResponse,
    trigger_response,
)
from tracking.trigger.service import TriggerService, TriggersNotRun

LIST_QUERY = TRIGGERS.query_model(extra=query_extras(TriggerListQuery))


async def list_triggers(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, TRIGGERS)
    query = parse_query(request, TriggerListQuery)
    async with transaction(request) as session:
        total, items = await TriggerService(session).list_page(listing, query)
    return await render_page(request, listing, total, items, trigger_response)


async def get(request: Request) -> Response:
    caller_id(request)
    trigger_id = path_param(request, "trigger_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        item = await TriggerService(session).get(trigger_id)
    return await render_one(request, item, trigger_response, hydrate=query.hydrate)


async def supported_events(request: Request) -> Response:
    """No login needed, as the reference's."""
    query = parse_query(request, SupportedEventsQuery)
    events = SUPPORTED_EVENTS[query.source_type]
    return render([SupportedEvent(value=v, description=d) for v, d in events.items()])


async def refuse(request: Request) -> Response:
    caller_id(request)
    path_ids(request)
    raise TriggersNotRun()


def routes() -> list[ApiRoute]:
    many = "/api/v1/triggers"
    one = many + "/{trigger_id:uuid_param}"
    attached = one + "/pipeline_snapshots/{snapshot_id:uuid_param}"
    tags = ["triggers"]
    writes = [
        (many, "POST", "Create Trigger"),
        (one, "PUT", "Update Trigger"),
        (one, "DELETE", "Delete Trigger"),
        (attached, "PUT", "Attach Trigger To Snapshot"),
        (attached, "DELETE", "Detach Trigger From Snapshot"),
        (one + "/dispatch_state", "DELETE", "Clear Trigger Dispatch Error"),
    ]
    return [
        api_route(
            many,
            list_triggers,
            method="GET",
            summary="List Triggers",
            tags=tags,
            query=LIST_QUERY,
            response=Page[TriggerResponse],
            errors=(400, 404),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Trigger",
            tags=tags,
            query=HydrateQuery,
            response=TriggerResponse,
            errors=(404,),
        ),
        api_route(
            "/api/v1/supported-events",
            supported_events,
            method="GET",
            summary="List Supported Events",
            tags=tags,
            auth=False,
            query=SupportedEventsQuery,
            response=list[SupportedEvent],
        ),
        *(
            api_route(path, refuse, method=method, summary=summary, tags=tags, errors=(501,))
            for path, method, summary in writes
        ),
    ]
