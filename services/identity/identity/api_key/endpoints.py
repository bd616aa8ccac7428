"""``/service_accounts/{id}/api_keys``; who may do what is
:class:`~identity.api_key.service.APIKeyService`'s to decide."""

from __future__ import annotations

import uuid

from sqlmodel.ext.asyncio.session import AsyncSession
from starlette.requests import Request
from starlette.responses import Response

from identity.api_key.repository import API_KEYS
from identity.api_key.schemas import (
    APIKeyListQuery,
    APIKeyQuery,
    APIKeyRequest,
    APIKeyResponse,
    APIKeyRotateRequest,
    APIKeyUpdate,
    api_key_response,
)
from identity.api_key.service import APIKeyService, NewAPIKey
from identity.state import IdentityState
from shared.auth import require_principal
from shared.db import transaction
from shared.listing import page_of, parse_list, query_extras
from shared.pagination import Page
from shared.responses import NO_STORE, render, render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param

NAME_OR_ID = "api_key_name_or_id"

LIST_QUERY = API_KEYS.query_model(extra=query_extras(APIKeyListQuery))


def _keys(request: Request, session: AsyncSession) -> APIKeyService:
    state = IdentityState.of(request)
    return APIKeyService(session, state.revocations, state.clock)


def _account_id(request: Request) -> uuid.UUID:
    return path_param(request, "service_account_id", uuid.UUID)


def _shown_once(issued: NewAPIKey) -> Response:
    # The key is in this answer only: never cached, never kept for an idempotent replay.
    return render(
        api_key_response(issued.api_key, issued.account, hydrate=True, key=issued.key),
        headers=NO_STORE,
    )


async def create(request: Request) -> Response:
    account_id = _account_id(request)
    body = await parse_json(request, APIKeyRequest)
    caller = require_principal(request)
    async with transaction(request) as session:
        issued = await _keys(request, session).create_for(caller, account_id, body)
    return _shown_once(issued)


async def list_keys(request: Request) -> Response:
    account_id = _account_id(request)
    parse_query(request, APIKeyListQuery)  # its service_account is the path's (see there)
    listing = parse_list(request, API_KEYS)
    caller = require_principal(request)
    async with transaction(request) as session:
        account, total, items = await _keys(request, session).list_for(caller, account_id, listing)
    return render(
        page_of(
            listing,
            total,
            [api_key_response(k, account, hydrate=listing.hydrate) for k in items],
        )
    )


async def get(request: Request) -> Response:
    account_id = _account_id(request)
    query = parse_query(request, APIKeyQuery)
    caller = require_principal(request)
    async with transaction(request) as session:
        api_key, account = await _keys(request, session).get_for(
            caller, account_id, request.path_params[NAME_OR_ID]
        )
    return render(api_key_response(api_key, account, hydrate=query.hydrate))


async def update(request: Request) -> Response:
    account_id = _account_id(request)
    body = await parse_json(request, APIKeyUpdate)
    caller = require_principal(request)
    async with transaction(request) as session:
        api_key, account = await _keys(request, session).update_for(
            caller, account_id, request.path_params[NAME_OR_ID], body
        )
    return render(api_key_response(api_key, account, hydrate=True))


async def rotate(request: Request) -> Response:
    account_id = _account_id(request)
    body = await parse_json(request, APIKeyRotateRequest)
    caller = require_principal(request)
    async with transaction(request) as session:
        issued = await _keys(request, session).rotate_for(
            caller, account_id, request.path_params[NAME_OR_ID], body
        )
    return _shown_once(issued)


async def delete(request: Request) -> Response:
    account_id = _account_id(request)
    caller = require_principal(request)
    async with transaction(request) as session:
        await _keys(request, session).delete_for(
            caller, account_id, request.path_params[NAME_OR_ID]
        )
    return render_null()


def routes() -> list[ApiRoute]:
    collection = "/api/v1/service_accounts/{service_account_id:uuid_param}/api_keys"
    one = collection + "/{" + NAME_OR_ID + "}"
    tags = ["service_accounts", "api_keys"]
    return [
        api_route(
            collection,
            list_keys,
            method="GET",
            summary="List Api Keys",
            tags=tags,
            query=LIST_QUERY,
            response=Page[APIKeyResponse],
            errors=(400, 404),
        ),
        api_route(
            collection,
            create,
            method="POST",
            summary="Create Api Key",
            tags=tags,
            body=APIKeyRequest,
            response=APIKeyResponse,
            errors=(403, 404, 409),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Api Key",
            tags=tags,
            query=APIKeyQuery,
            response=APIKeyResponse,
            errors=(404,),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Api Key",
            tags=tags,
            body=APIKeyUpdate,
            response=APIKeyResponse,
            errors=(403, 404, 409),
        ),
        api_route(
            one + "/rotate",
            rotate,
            method="PUT",
            summary="Rotate Api Key",
            tags=tags,
            body=APIKeyRotateRequest,
            response=APIKeyResponse,
            errors=(403, 404),
        ),
        api_route(
            one,
            delete,
            method="DELETE",
            summary="Delete Api Key",
            tags=tags,
            errors=(403, 404),
        ),
    ]
