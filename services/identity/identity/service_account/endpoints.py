"""``/service_accounts``; who may do what is
:class:`~identity.service_account.service.ServiceAccountService`'s to decide."""

from __future__ import annotations

from sqlmodel.ext.asyncio.session import AsyncSession
from starlette.requests import Request
from starlette.responses import Response

from identity.service_account.repository import SERVICE_ACCOUNTS
from identity.service_account.schemas import (
    ServiceAccountQuery,
    ServiceAccountRequest,
    ServiceAccountResponse,
    ServiceAccountUpdate,
    service_account_response,
)
from identity.service_account.service import ServiceAccountService
from identity.state import IdentityState
from shared.auth import require_principal
from shared.db import transaction
from shared.listing import page_of, parse_list
from shared.pagination import Page
from shared.responses import render, render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query

NAME_OR_ID = "service_account_name_or_id"


def _accounts(request: Request, session: AsyncSession) -> ServiceAccountService:
    state = IdentityState.of(request)
    return ServiceAccountService(session, state.revocations, state.clock)


async def create(request: Request) -> Response:
    body = await parse_json(request, ServiceAccountRequest)
    caller = require_principal(request)
    async with transaction(request) as session:
        account = await _accounts(request, session).create_for(caller, body)
    return render(service_account_response(account, hydrate=True))


async def list_accounts(request: Request) -> Response:
    listing = parse_list(request, SERVICE_ACCOUNTS)
    caller = require_principal(request)
    async with transaction(request) as session:
        total, items = await _accounts(request, session).list_for(caller, listing)
    return render(
        page_of(
            listing,
            total,
            [service_account_response(a, hydrate=listing.hydrate) for a in items],
        )
    )


async def get(request: Request) -> Response:
    query = parse_query(request, ServiceAccountQuery)
    caller = require_principal(request)
    async with transaction(request) as session:
        account = await _accounts(request, session).get_for(caller, request.path_params[NAME_OR_ID])
    return render(service_account_response(account, hydrate=query.hydrate))


async def update(request: Request) -> Response:
    body = await parse_json(request, ServiceAccountUpdate)
    caller = require_principal(request)
    async with transaction(request) as session:
        account = await _accounts(request, session).update_for(
            caller, request.path_params[NAME_OR_ID], body
        )
    return render(service_account_response(account, hydrate=True))


async def delete(request: Request) -> Response:
    caller = require_principal(request)
    async with transaction(request) as session:
        await _accounts(request, session).delete_for(caller, request.path_params[NAME_OR_ID])
    return render_null()


def routes() -> list[ApiRoute]:
    collection = "/api/v1/service_accounts"
    one = collection + "/{" + NAME_OR_ID + "}"
    tags = ["service_accounts"]
    return [
        api_route(
            collection,
            list_accounts,
            method="GET",
            summary="List Service Accounts",
            tags=tags,
            query=SERVICE_ACCOUNTS.query_model(),
            response=Page[ServiceAccountResponse],
            errors=(400,),
        ),
        api_route(
            collection,
            create,
            method="POST",
            summary="Create Service Account",
            tags=tags,
            body=ServiceAccountRequest,
            response=ServiceAccountResponse,
            errors=(403, 409),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Service Account",
            tags=tags,
            query=ServiceAccountQuery,
            response=ServiceAccountResponse,
            errors=(404,),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Service Account",
            tags=tags,
            body=ServiceAccountUpdate,
            response=ServiceAccountResponse,
            errors=(403, 404, 409),
        ),
        api_route(
            one,
            delete,
            method="DELETE",
            summary="Delete Service Account",
            tags=tags,
            errors=(403, 404),
        ),
    ]
