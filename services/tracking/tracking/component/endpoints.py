"""``/components``: stack components (global, not project-scoped)."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from tracking.component.repository import COMPONENTS
from tracking.component.schemas import (
    ComponentRequest,
    ComponentResponse,
    ComponentScopeQuery,
    ComponentUpdate,
    component_response,
)
from tracking.component.secrets import ComponentSecrets
from tracking.component.service import ComponentService
from tracking.core.auth import caller, caller_id
from tracking.core.rendering import render_one, render_page
from tracking.core.schemas import HydrateQuery, ProjectQuery
from tracking.state import TrackingState


def _secrets(request: Request) -> ComponentSecrets:
    secrets: ComponentSecrets = TrackingState.of(request).component_secrets
    return secrets


ComponentListQuery = COMPONENTS.query_model(
    extra={**query_extras(ComponentScopeQuery), **query_extras(ProjectQuery)}
)


async def list_components(request: Request) -> Response:
    viewer = caller(request).user_id
    listing = await read_list(request, COMPONENTS)
    scope = parse_query(request, ComponentScopeQuery)
    async with transaction(request) as session:
        total, components = await ComponentService(session, _secrets(request)).list_page(
            listing, scope, viewer
        )
    return await render_page(request, listing, total, components, component_response)


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    body = await parse_json(request, ComponentRequest)
    async with transaction(request) as session:
        component = await ComponentService(session, _secrets(request)).create(body, user_id)
    return await render_one(request, component, component_response, hydrate=True)


async def get(request: Request) -> Response:
    viewer = caller(request).user_id
    component_id = path_param(request, "component_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        component = await ComponentService(session, _secrets(request)).read(component_id, viewer)
    return await render_one(request, component, component_response, hydrate=query.hydrate)


async def update(request: Request) -> Response:
    viewer = caller(request).user_id
    component_id = path_param(request, "component_id", uuid.UUID)
    body = await parse_json(request, ComponentUpdate)
    async with transaction(request) as session:
        components = ComponentService(session, _secrets(request))
        component = await components.update(component_id, body, viewer)
    return await render_one(request, component, component_response, hydrate=True)


async def delete(request: Request) -> Response:
    caller(request)
    component_id = path_param(request, "component_id", uuid.UUID)
    async with transaction(request) as session:
        await ComponentService(session, _secrets(request)).delete(component_id)
    return render_null()


def routes() -> list[ApiRoute]:
    base, tags = "/api/v1/components", ["stack_components"]
    one = base + "/{component_id:uuid_param}"
    return [
        api_route(
            base,
            list_components,
            method="GET",
            summary="List Stack Components",
            tags=tags,
            query=ComponentListQuery,
            response=Page[ComponentResponse],
            errors=(400, 422),
        ),
        api_route(
            base,
            create,
            method="POST",
            summary="Create Stack Component",
            tags=tags,
            query=ProjectQuery,
            body=ComponentRequest,
            response=ComponentResponse,
            errors=(400, 404, 409, 422),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Stack Component",
            tags=tags,
            query=HydrateQuery,
            response=ComponentResponse,
            errors=(404, 422),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Stack Component",
            tags=tags,
            body=ComponentUpdate,
            response=ComponentResponse,
            errors=(400, 403, 404, 409, 422),
        ),
        api_route(
            one,
            delete,
            method="DELETE",
            summary="Deregister Stack Component",
            tags=tags,
            errors=(403, 404, 422),
        ),
    ]
