"""``/accounts``, ``/users`` and ``/service-accounts``."""

from __future__ import annotations

import uuid

from sqlmodel.ext.asyncio.session import AsyncSession
from starlette.requests import Request
from starlette.responses import Response

from agent_accounts.account.repository import ACCOUNTS
from agent_accounts.account.schemas import (
    AccountResponse,
    ServiceAccountCreateRequest,
    ServiceAccountUpdateRequest,
    UserActivateRequest,
    UserActivationTokenResponse,
    UserCreateRequest,
    UserUpdateRequest,
    account_response,
    with_activation_token,
)
from agent_accounts.account.service import AccountService
from agent_accounts.core.auth import require_account
from agent_accounts.core.listing import Page
from agent_accounts.state import AgentState
from shared.db import transaction
from shared.responses import NO_STORE, render
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param

TAGS = ["accounts"]

LIST_QUERY = ACCOUNTS.query_model("AccountListQuery")


def accounts(request: Request, session: AsyncSession) -> AccountService:
    state = AgentState.of(request)
    return AccountService(session, state.settings, state.clock)


def _id(request: Request) -> uuid.UUID:
    return path_param(request, "account_id", uuid.UUID)


async def list_accounts(request: Request) -> Response:
    require_account(request)
    query = parse_query(request, LIST_QUERY)
    async with transaction(request) as session:
        items, cursor = await accounts(request, session).list(query)
    return render(Page(items=[account_response(a) for a in items], next_cursor=cursor))


async def me(request: Request) -> Response:
    caller = require_account(request)
    async with transaction(request) as session:
        account = await accounts(request, session).get(caller.account_id)
    return render(account_response(account))


async def get(request: Request) -> Response:
    require_account(request)
    account_id = _id(request)
    async with transaction(request) as session:
        account = await accounts(request, session).get(account_id)
    return render(account_response(account))


async def create_user(request: Request) -> Response:
    caller = require_account(request)
    body = await parse_json(request, UserCreateRequest)
    async with transaction(request) as session:
        account, token = await accounts(request, session).create_user(body, caller)
    if token is None:
        return render(account_response(account), status_code=201)
    # The activation token is shown once: never cached, never kept for a replay.
    return render(with_activation_token(account, token), status_code=201, headers=NO_STORE)


async def update_user(request: Request) -> Response:
    caller = require_account(request)
    account_id = _id(request)
    body = await parse_json(request, UserUpdateRequest)
    async with transaction(request) as session:
        account = await accounts(request, session).update_user(account_id, body, caller)
    return render(account_response(account))


async def activate(request: Request) -> Response:
    """No login: the activation token is the credential."""
    account_id = _id(request)
    body = await parse_json(request, UserActivateRequest)
    async with transaction(request) as session:
        account = await accounts(request, session).activate(account_id, body)
    return render(account_response(account))


async def deactivate(request: Request) -> Response:
    caller = require_account(request)
    account_id = _id(request)
    async with transaction(request) as session:
        account, token = await accounts(request, session).deactivate(account_id, caller)
    return render(with_activation_token(account, token), headers=NO_STORE)


async def create_service_account(request: Request) -> Response:
    caller = require_account(request)
    body = await parse_json(request, ServiceAccountCreateRequest)
    async with transaction(request) as session:
        account = await accounts(request, session).create_service_account(body, caller)
    return render(account_response(account), status_code=201)


async def update_service_account(request: Request) -> Response:
    caller = require_account(request)
    account_id = _id(request)
    body = await parse_json(request, ServiceAccountUpdateRequest)
    async with transaction(request) as session:
        service = accounts(request, session)
        account = await service.update_service_account(account_id, body, caller)
    return render(account_response(account))


def routes() -> list[ApiRoute]:
    page = Page[AccountResponse]
    return [
        api_route("/api/v1/accounts", list_accounts, method="GET", summary="List accounts",
                  tags=TAGS, query=LIST_QUERY, response=page),
        api_route("/api/v1/accounts/me", me, method="GET", summary="The calling account",
                  tags=TAGS, response=AccountResponse),
        api_route("/api/v1/accounts/{account_id:uuid_param}", get, method="GET",
                  summary="Get an account",
                  tags=TAGS, response=AccountResponse, errors=(404,)),
        api_route("/api/v1/users", create_user, method="POST", summary="Create a user",
                  tags=TAGS, body=UserCreateRequest,
                  response=UserActivationTokenResponse | AccountResponse,
                  status_code=201, errors=(403, 409)),
        api_route("/api/v1/users/{account_id:uuid_param}", update_user, method="PATCH",
                  summary="Update a user", tags=TAGS, body=UserUpdateRequest,
                  response=AccountResponse, errors=(403, 404)),
        api_route("/api/v1/users/{account_id:uuid_param}/activate", activate, method="POST",
                  summary="Activate a user with its activation token", tags=TAGS,
                  body=UserActivateRequest, response=AccountResponse, auth=False,
                  errors=(403, 404)),
        api_route("/api/v1/users/{account_id:uuid_param}/deactivate", deactivate, method="POST",
                  summary="Deactivate a user", tags=TAGS,
                  response=UserActivationTokenResponse, errors=(403, 404)),
        api_route("/api/v1/service-accounts", create_service_account, method="POST",
                  summary="Create a service account", tags=TAGS,
                  body=ServiceAccountCreateRequest, response=AccountResponse, status_code=201,
                  errors=(403, 409)),
        api_route("/api/v1/service-accounts/{account_id:uuid_param}", update_service_account,
                  method="PATCH", summary="Update a service account", tags=TAGS,
                  body=ServiceAccountUpdateRequest, response=AccountResponse,
                  errors=(403, 404)),
    ]  # fmt: skip
