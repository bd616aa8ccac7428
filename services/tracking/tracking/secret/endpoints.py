"""``/secrets`` and ``/secrets_operations`` (and the deprecated
``/workspaces/{workspace_name_or_id}/secrets`` create)."""

from __future__ import annotations

import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import NO_STORE, render, render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from shared.users import users_by_id
from tracking.core.auth import caller
from tracking.core.rendering import render_page
from tracking.core.schemas import HydrateQuery
from tracking.secret.repository import SECRETS
from tracking.secret.schemas import (
    BackupQuery,
    RestoreQuery,
    SecretListQuery,
    SecretRequest,
    SecretResponse,
    SecretUpdate,
    SecretUpdateQuery,
    secret_response,
)
from tracking.secret.service import (
    Revealed,
    SecretService,
    backup_secrets,
    restore_secrets,
)
from tracking.state import TrackingState

LIST_QUERY = SECRETS.query_model(extra=query_extras(SecretListQuery))


def _service(request: Request, session: Any) -> SecretService:
    return SecretService(session, TrackingState.of(request).secret_cipher)


async def _render_revealed(request: Request, revealed: Revealed, *, hydrate: bool) -> Response:
    """One secret with its values: never kept by a cache or an idempotent replay's store in
    clear (``no-store``)."""
    secret, values = revealed
    users = await users_by_id(request, [secret.user_id])
    body = secret_response(secret, hydrate, users.get(secret.user_id), values)
    return render(body, headers=NO_STORE)


async def list_secrets(request: Request) -> Response:
    principal = caller(request)
    # Its parameters are ignored, but one the document types (scope_user a UUID) that is
    # not of its type is the reference's 422.
    parse_query(request, SecretListQuery)
    listing = await read_list(request, SECRETS)
    async with transaction(request) as session:
        total, rows = await _service(request, session).list_page(listing, principal)
    return await render_page(request, listing, total, rows, secret_response)


async def create(request: Request) -> Response:
    principal = caller(request)
    body = await parse_json(request, SecretRequest)
    async with transaction(request) as session:
        revealed = await _service(request, session).create(body, principal)
    return await _render_revealed(request, revealed, hydrate=True)


async def get(request: Request) -> Response:
    principal = caller(request)
    secret_id = path_param(request, "secret_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        revealed = await _service(request, session).get(secret_id, principal)
    return await _render_revealed(request, revealed, hydrate=query.hydrate)


async def update(request: Request) -> Response:
    principal = caller(request)
    secret_id = path_param(request, "secret_id", uuid.UUID)
    patch = bool(parse_query(request, SecretUpdateQuery).patch_values)
    body = await parse_json(request, SecretUpdate)
    async with transaction(request) as session:
        revealed = await _service(request, session).update(secret_id, body, patch, principal)
    return await _render_revealed(request, revealed, hydrate=True)


async def delete(request: Request) -> Response:
    principal = caller(request)
    secret_id = path_param(request, "secret_id", uuid.UUID)
    async with transaction(request) as session:
        await _service(request, session).delete(secret_id, principal)
    return render_null()


async def backup(request: Request) -> Response:
    principal = caller(request)
    parse_query(request, BackupQuery)
    backup_secrets(principal)
    return render_null()


async def restore(request: Request) -> Response:
    principal = caller(request)
    parse_query(request, RestoreQuery)
    restore_secrets(principal)
    return render_null()


def routes() -> list[ApiRoute]:
    many = "/api/v1/secrets"
    one = many + "/{secret_id:uuid_param}"
    operations = "/api/v1/secrets_operations"
    tags = ["secrets"]
    return [
        api_route(
            many,
            list_secrets,
            method="GET",
            summary="List Secrets",
            tags=tags,
            query=LIST_QUERY,
            response=Page[SecretResponse],
            errors=(400, 422),
        ),
        *(
            api_route(
                path,
                create,
                method="POST",
                summary="Create Secret",
                tags=tags,
                body=SecretRequest,
                response=SecretResponse,
                errors=(400, 409, 422),
            )
            for path in (many, "/api/v1/workspaces/{workspace_name_or_id}/secrets")
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Secret",
            tags=tags,
            query=HydrateQuery,
            response=SecretResponse,
            errors=(404, 422),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Secret",
            tags=tags,
            query=SecretUpdateQuery,
            body=SecretUpdate,
            response=SecretResponse,
            errors=(400, 403, 404, 409, 422),
        ),
        api_route(one, delete, method="DELETE", summary="Delete Secret", tags=tags, errors=(404,)),
        *(
            api_route(
                f"{operations}/{operation}",
                handler,
                method="PUT",
                summary=f"{operation.title()} Secrets",
                tags=tags,
                query=query,
                errors=(403, 501),
            )
            for operation, handler, query in (
                ("backup", backup, BackupQuery),
                ("restore", restore, RestoreQuery),
            )
        ),
    ]
