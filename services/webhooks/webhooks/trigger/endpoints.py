"""``/webhook_triggers``: create, list, get, update, archive or delete, executions."""

from __future__ import annotations

import uuid

from sqlmodel.ext.asyncio.session import AsyncSession
from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import page_of, query_extras, read_list
from shared.pagination import Page
from shared.responses import render, render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from shared.users import users_by_id
from webhooks.core.auth import acting_user
from webhooks.core.caller_project import resolve_project
from webhooks.models import TriggerExecution, WebhookTrigger
from webhooks.state import WebhooksState
from webhooks.trigger.repository import EXECUTIONS, TRIGGERS
from webhooks.trigger.schemas import (
    DeleteQuery,
    HydrateQuery,
    TriggerExecutionResponse,
    TriggerListQuery,
    WebhookTriggerRequest,
    WebhookTriggerResponse,
    WebhookTriggerResponseBody,
    WebhookTriggerResponseResources,
    WebhookTriggerUpdate,
)
from webhooks.trigger.service import TriggerService

LIST_QUERY = TRIGGERS.query_model(extra=query_extras(TriggerListQuery))
EXECUTIONS_QUERY = EXECUTIONS.query_model()
TRIGGER_ID = "trigger_id"


def _service(request: Request, session: AsyncSession) -> TriggerService:
    return TriggerService(session, WebhooksState.of(request).providers)


async def _responses(
    request: Request, triggers: list[WebhookTrigger], *, hydrate: bool
) -> list[WebhookTriggerResponse]:
    users = await users_by_id(request, [t.user_id for t in triggers])
    return [
        WebhookTriggerResponse(
            id=trigger.id,
            body=WebhookTriggerResponseBody.model_validate(trigger, from_attributes=True),
            metadata={} if hydrate else None,
            resources=WebhookTriggerResponseResources(
                user=users.get(trigger.user_id) if trigger.user_id else None
            ),
        )
        for trigger in triggers
    ]


async def _one(request: Request, trigger: WebhookTrigger) -> Response:
    return render((await _responses(request, [trigger], hydrate=True))[0])


async def create(request: Request) -> Response:
    actor = acting_user(request)
    body = await parse_json(request, WebhookTriggerRequest)
    project = await resolve_project(request, body.project)
    async with transaction(request) as session:
        trigger = await _service(request, session).create(body, actor.user_id, project)
    return await _one(request, trigger)


async def list_triggers(request: Request) -> Response:
    acting_user(request)
    listing = await read_list(request, TRIGGERS)
    query = parse_query(request, TriggerListQuery)
    project = await resolve_project(request, query.project)
    async with transaction(request) as session:
        total, rows = await _service(request, session).list_page(
            listing, project.id, query.scope_user
        )
    items = await _responses(request, rows, hydrate=listing.hydrate)
    return render(page_of(listing, total, items))


async def get(request: Request) -> Response:
    acting_user(request)
    trigger_id = path_param(request, TRIGGER_ID, uuid.UUID)
    parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        trigger = await _service(request, session).get(trigger_id)
    return await _one(request, trigger)


async def update(request: Request) -> Response:
    actor = acting_user(request)
    trigger_id = path_param(request, TRIGGER_ID, uuid.UUID)
    body = await parse_json(request, WebhookTriggerUpdate)
    async with transaction(request) as session:
        trigger = await _service(request, session).update(trigger_id, body, actor)
    return await _one(request, trigger)


async def delete(request: Request) -> Response:
    actor = acting_user(request)
    trigger_id = path_param(request, TRIGGER_ID, uuid.UUID)
    query = parse_query(request, DeleteQuery)
    async with transaction(request) as session:
        service = _service(request, session)
        await (
            service.archive(trigger_id, actor) if query.soft else service.delete(trigger_id, actor)
        )
    return render_null()


def _execution(row: TriggerExecution) -> TriggerExecutionResponse:
    return TriggerExecutionResponse.model_validate(row, from_attributes=True)


async def executions(request: Request) -> Response:
    acting_user(request)
    trigger_id = path_param(request, TRIGGER_ID, uuid.UUID)
    listing = await read_list(request, EXECUTIONS)
    async with transaction(request) as session:
        total, rows = await _service(request, session).executions(listing, trigger_id)
    return render(page_of(listing, total, [_execution(r) for r in rows]))


async def retry_execution(request: Request) -> Response:
    actor = acting_user(request)
    trigger_id = path_param(request, TRIGGER_ID, uuid.UUID)
    execution_id = path_param(request, "execution_id", uuid.UUID)
    async with transaction(request) as session:
        row = await _service(request, session).retry_execution(
            trigger_id, execution_id, WebhooksState.of(request).jobs, actor
        )
    return render(_execution(row), status_code=202)


def routes() -> list[ApiRoute]:
    many = "/api/v1/webhook_triggers"
    one = many + "/{trigger_id:uuid_param}"
    tags = ["webhook_triggers"]
    return [
        api_route(
            many,
            create,
            method="POST",
            summary="Create Webhook Trigger",
            tags=tags,
            body=WebhookTriggerRequest,
            response=WebhookTriggerResponse,
            errors=(404, 409, 422, 503),
        ),
        api_route(
            many,
            list_triggers,
            method="GET",
            summary="List Webhook Triggers",
            tags=tags,
            query=LIST_QUERY,
            response=Page[WebhookTriggerResponse],
            errors=(400, 404, 503),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Webhook Trigger",
            tags=tags,
            query=HydrateQuery,
            response=WebhookTriggerResponse,
            errors=(404,),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Webhook Trigger",
            tags=tags,
            body=WebhookTriggerUpdate,
            response=WebhookTriggerResponse,
            errors=(403, 404, 409, 422),
        ),
        api_route(
            one,
            delete,
            method="DELETE",
            summary="Archive or Delete Webhook Trigger",
            tags=tags,
            query=DeleteQuery,
            errors=(403, 404),
        ),
        api_route(
            one + "/executions",
            executions,
            method="GET",
            summary="List Webhook Trigger Executions",
            tags=tags,
            query=EXECUTIONS_QUERY,
            response=Page[TriggerExecutionResponse],
            errors=(400, 404),
        ),
        api_route(
            one + "/executions/{execution_id:uuid_param}/retry",
            retry_execution,
            method="POST",
            summary="Retry Webhook Trigger Execution",
            tags=tags,
            response=TriggerExecutionResponse,
            status_code=202,
            errors=(403, 404, 409, 503),
        ),
    ]
