"""``/api-keys`` and ``/service-accounts/{id}/api-keys`` (admins issue keys for service
accounts)."""

from __future__ import annotations

import uuid

from sqlmodel.ext.asyncio.session import AsyncSession
from starlette.requests import Request
from starlette.responses import Response

from agent_accounts.api_key.repository import API_KEYS
from agent_accounts.api_key.schemas import (
    ApiKeyCreateRequest,
    ApiKeyIssuedResponse,
    ApiKeyResponse,
    ApiKeyRotateRequest,
    ApiKeyUpdateRequest,
    api_key_response,
    issued_response,
)
from agent_accounts.api_key.service import ApiKeyService
from agent_accounts.core.auth import require_account
from agent_accounts.core.listing import Page
from agent_accounts.core.schemas import parse_optional_json
from agent_accounts.state import AgentState
from shared.db import transaction
from shared.responses import NO_STORE, render
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param

TAGS = ["api keys"]

LIST_QUERY = API_KEYS.query_model("ApiKeyListQuery")


def api_keys(request: Request, session: AsyncSession) -> ApiKeyService:
    state = AgentState.of(request)
    return ApiKeyService(session, state.settings, state.clock)


def _id(request: Request) -> uuid.UUID:
    return path_param(request, "api_key_id", uuid.UUID)


async def create(request: Request) -> Response:
    caller = require_account(request)
    body = await parse_json(request, ApiKeyCreateRequest)
    async with transaction(request) as session:
        key, plaintext = await api_keys(request, session).create(body.name, caller)
    return render(issued_response(key, plaintext), status_code=201, headers=NO_STORE)


async def create_for_service_account(request: Request) -> Response:
    caller = require_account(request)
    owner_id = path_param(request, "account_id", uuid.UUID)
    body = await parse_json(request, ApiKeyCreateRequest)
    async with transaction(request) as session:
        service = api_keys(request, session)
        key, plaintext = await service.create(body.name, caller, owner_id=owner_id)
    return render(issued_response(key, plaintext), status_code=201, headers=NO_STORE)


async def list_keys(request: Request) -> Response:
    caller = require_account(request)
    query = parse_query(request, LIST_QUERY)
    async with transaction(request) as session:
        items, cursor = await api_keys(request, session).list(caller, query)
    return render(Page(items=[api_key_response(k) for k in items], next_cursor=cursor))


async def get(request: Request) -> Response:
    caller = require_account(request)
    key_id = _id(request)
    async with transaction(request) as session:
        key = await api_keys(request, session).get(key_id, caller)
    return render(api_key_response(key))


async def update(request: Request) -> Response:
    caller = require_account(request)
    key_id = _id(request)
    body = await parse_json(request, ApiKeyUpdateRequest)
    async with transaction(request) as session:
        key = await api_keys(request, session).set_active(key_id, body.active, caller)
    return render(api_key_response(key))


async def rotate(request: Request) -> Response:
    caller = require_account(request)
    key_id = _id(request)
    body = await parse_optional_json(request, ApiKeyRotateRequest)
    async with transaction(request) as session:
        service = api_keys(request, session)
        key, plaintext = await service.rotate(key_id, body, caller)
    return render(issued_response(key, plaintext), headers=NO_STORE)


async def delete(request: Request) -> Response:
    caller = require_account(request)
    key_id = _id(request)
    async with transaction(request) as session:
        await api_keys(request, session).delete(key_id, caller)
    return Response(status_code=204)


def routes() -> list[ApiRoute]:
    return [
        api_route("/api/v1/api-keys", create, method="POST", summary="Create an API key",
                  tags=TAGS, body=ApiKeyCreateRequest, response=ApiKeyIssuedResponse,
                  status_code=201, errors=(409,)),
        api_route("/api/v1/api-keys", list_keys, method="GET", summary="List your API keys",
                  tags=TAGS, query=LIST_QUERY, response=Page[ApiKeyResponse]),
        api_route("/api/v1/api-keys/{api_key_id:uuid_param}", get, method="GET",
                  summary="Get an API key",
                  tags=TAGS, response=ApiKeyResponse, errors=(404,)),
        api_route("/api/v1/api-keys/{api_key_id:uuid_param}", update, method="PATCH",
                  summary="Activate or deactivate an API key", tags=TAGS,
                  body=ApiKeyUpdateRequest, response=ApiKeyResponse, errors=(404,)),
        api_route("/api/v1/api-keys/{api_key_id:uuid_param}", delete, method="DELETE",
                  summary="Delete an API key", tags=TAGS, status_code=204, errors=(404,)),
        api_route("/api/v1/api-keys/{api_key_id:uuid_param}/rotate", rotate, method="POST",
                  summary="Rotate an API key", tags=TAGS, body=ApiKeyRotateRequest,
                  body_required=False, response=ApiKeyIssuedResponse, errors=(404,)),
        api_route("/api/v1/service-accounts/{account_id:uuid_param}/api-keys",
                  create_for_service_account,
                  method="POST", summary="Issue an API key for a service account (admin)",
                  tags=TAGS, body=ApiKeyCreateRequest, response=ApiKeyIssuedResponse,
                  status_code=201, errors=(403, 404, 409)),
    ]  # fmt: skip
