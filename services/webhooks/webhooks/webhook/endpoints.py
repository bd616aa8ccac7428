"""``/webhooks``: create, list, get, update, delete, rotate the secret, read a raw event."""

from __future__ import annotations

import gzip
import uuid

from sqlmodel.ext.asyncio.session import AsyncSession
from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import page_of, query_extras, read_list
from shared.pagination import Page
from shared.responses import render, render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query
from shared.secret_box import SecretBox
from shared.users import users_by_id
from webhooks.core.auth import acting_user
from webhooks.core.caller_project import resolve_project
from webhooks.core.live import LiveState
from webhooks.intake.providers.base import stored_payload
from webhooks.models import Webhook
from webhooks.settings import Settings
from webhooks.state import WebhooksState
from webhooks.webhook.repository import WEBHOOKS
from webhooks.webhook.schemas import (
    RawEventQuery,
    RawEventResponse,
    WebhookCreateResponse,
    WebhookListQuery,
    WebhookLookupQuery,
    WebhookRequest,
    WebhookResponse,
    WebhookResponseBody,
    WebhookResponseMetadata,
    WebhookResponseResources,
    WebhookRotateSecretRequest,
    WebhookSecretResponse,
    WebhookStats,
    WebhookUpdate,
)
from webhooks.webhook.service import WebhookService

LIST_QUERY = WEBHOOKS.query_model(extra=query_extras(WebhookListQuery))
REFERENCE = "webhook_name_or_id"


def _service(request: Request, session: AsyncSession) -> WebhookService:
    state = WebhooksState.of(request)
    box: SecretBox = state.box
    live: LiveState = state.live
    return WebhookService(session, box, live)


def endpoint_url(settings: Settings, webhook: Webhook) -> str | None:
    if not settings.server_api_url:
        return None
    base = settings.server_api_url.rstrip("/")
    return f"{base}/webhooks/{webhook.webhook_type}/{webhook.id}/events"


async def _responses(
    request: Request, webhooks: list[Webhook], *, hydrate: bool
) -> list[WebhookResponse]:
    state = WebhooksState.of(request)
    settings: Settings = state.settings
    live: LiveState = state.live
    users = await users_by_id(request, [w.user_id for w in webhooks])
    stats = await live.stats([w.id for w in webhooks]) if hydrate else []
    return [
        WebhookResponse(
            id=webhook.id,
            name=webhook.name,
            body=WebhookResponseBody(
                created=webhook.created,
                updated=webhook.updated,
                user_id=webhook.user_id,
                project_id=webhook.project_id,
                webhook_type=webhook.webhook_type,
                active=webhook.active,
                endpoint_url=endpoint_url(settings, webhook),
            ),
            metadata=WebhookResponseMetadata(stats=WebhookStats.from_redis(stats[i]))
            if hydrate
            else None,
            resources=WebhookResponseResources(
                user=users.get(webhook.user_id) if webhook.user_id else None
            ),
        )
        for i, webhook in enumerate(webhooks)
    ]


async def _one(request: Request, webhook: Webhook, *, hydrate: bool = True) -> WebhookResponse:
    return (await _responses(request, [webhook], hydrate=hydrate))[0]


async def create(request: Request) -> Response:
    actor = acting_user(request)
    body = await parse_json(request, WebhookRequest)
    project = await resolve_project(request, body.project)
    async with transaction(request) as session:
        webhook, secret = await _service(request, session).create(body, actor.user_id, project)
    await WebhooksState.of(request).live.publish(webhook.id, webhook.version)
    response = await _one(request, webhook)
    created = WebhookCreateResponse(**response.model_dump(), secret=secret)
    return render(created, headers={"Cache-Control": "no-store"})


async def list_webhooks(request: Request) -> Response:
    acting_user(request)
    listing = await read_list(request, WEBHOOKS)
    query = parse_query(request, WebhookListQuery)
    project = await resolve_project(request, query.project)
    async with transaction(request) as session:
        total, rows = await _service(request, session).list_page(
            listing, project.id, query.scope_user
        )
    return render(page_of(listing, total, await _responses(request, rows, hydrate=listing.hydrate)))


async def _project_id(request: Request, project: str | None) -> uuid.UUID | None:
    return (await resolve_project(request, project)).id if project else None


async def get(request: Request) -> Response:
    acting_user(request)
    query = parse_query(request, WebhookLookupQuery)
    project_id = await _project_id(request, query.project)
    async with transaction(request) as session:
        webhook = await _service(request, session).get(request.path_params[REFERENCE], project_id)
    return render(await _one(request, webhook, hydrate=query.hydrate))


async def update(request: Request) -> Response:
    actor = acting_user(request)
    query = parse_query(request, WebhookLookupQuery)
    body = await parse_json(request, WebhookUpdate)
    project_id = await _project_id(request, query.project)
    async with transaction(request) as session:
        service = _service(request, session)
        webhook = await service.get(request.path_params[REFERENCE], project_id)
        webhook = await service.update(webhook, body, actor)
    await WebhooksState.of(request).live.publish(webhook.id, webhook.version)
    return render(await _one(request, webhook))


async def delete(request: Request) -> Response:
    actor = acting_user(request)
    query = parse_query(request, WebhookLookupQuery)
    project_id = await _project_id(request, query.project)
    async with transaction(request) as session:
        service = _service(request, session)
        webhook = await service.get(request.path_params[REFERENCE], project_id)
        await service.delete(webhook, actor)
    await WebhooksState.of(request).live.drop(webhook.id)
    return render_null()


async def rotate_secret(request: Request) -> Response:
    actor = acting_user(request)
    query = parse_query(request, WebhookLookupQuery)
    body = await parse_json(request, WebhookRotateSecretRequest)
    project_id = await _project_id(request, query.project)
    chosen = body.secret.get_secret_value() if body.secret else None
    async with transaction(request) as session:
        service = _service(request, session)
        webhook = await service.get(request.path_params[REFERENCE], project_id)
        secret = await service.rotate_secret(webhook, chosen, actor)
    await WebhooksState.of(request).live.publish(webhook.id, webhook.version)
    return render(WebhookSecretResponse(secret=secret), headers={"Cache-Control": "no-store"})


async def raw_event(request: Request) -> Response:
    acting_user(request)
    query = parse_query(request, RawEventQuery)
    project_id = await _project_id(request, query.project)
    async with transaction(request) as session:
        stored = await _service(request, session).raw_event(
            request.path_params[REFERENCE], project_id, query.delivery_id
        )
    return render(RawEventResponse(body=stored_payload(gzip.decompress(stored))))


def routes() -> list[ApiRoute]:
    many = "/api/v1/webhooks"
    one = many + "/{webhook_name_or_id}"
    tags = ["webhooks"]
    return [
        api_route(
            many,
            create,
            method="POST",
            summary="Create Webhook",
            tags=tags,
            body=WebhookRequest,
            response=WebhookCreateResponse,
            errors=(404, 409, 422, 503),
        ),
        api_route(
            many,
            list_webhooks,
            method="GET",
            summary="List Webhooks",
            tags=tags,
            query=LIST_QUERY,
            response=Page[WebhookResponse],
            errors=(400, 404, 503),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Webhook",
            tags=tags,
            query=WebhookLookupQuery,
            response=WebhookResponse,
            errors=(400, 404),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Webhook",
            tags=tags,
            query=WebhookLookupQuery,
            body=WebhookUpdate,
            response=WebhookResponse,
            errors=(400, 403, 404, 409),
        ),
        api_route(
            one,
            delete,
            method="DELETE",
            summary="Delete Webhook",
            tags=tags,
            query=WebhookLookupQuery,
            errors=(400, 403, 404, 409),
        ),
        api_route(
            one + "/secret",
            rotate_secret,
            method="PUT",
            summary="Rotate Webhook Secret",
            tags=tags,
            query=WebhookLookupQuery,
            body=WebhookRotateSecretRequest,
            response=WebhookSecretResponse,
            errors=(400, 403, 404),
        ),
        api_route(
            one + "/events/raw",
            raw_event,
            method="GET",
            summary="Get Raw Webhook Event",
            tags=tags,
            query=RawEventQuery,
            response=RawEventResponse,
            errors=(400, 404),
        ),
    ]
