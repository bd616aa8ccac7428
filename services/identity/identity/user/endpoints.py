"""``/users``: what an admin needs to manage accounts (and activation by token); who may
do what is :class:`~identity.user.service.UserService`'s to decide."""

from __future__ import annotations

from sqlmodel.ext.asyncio.session import AsyncSession
from starlette.requests import Request
from starlette.responses import Response

from identity.state import IdentityState
from identity.user.repository import USERS
from identity.user.schemas import (
    UserQuery,
    UserRequest,
    UserResponse,
    UserUpdate,
    user_response,
)
from identity.user.service import UserService
from shared.auth import require_principal
from shared.db import transaction
from shared.listing import page_of, parse_list
from shared.pagination import Page
from shared.responses import NO_STORE, render, render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query


def _users(request: Request, session: AsyncSession) -> UserService:
    state = IdentityState.of(request)
    return UserService(session, state.revocations, state.clock)


async def create(request: Request) -> Response:
    body = await parse_json(request, UserRequest)
    caller = require_principal(request)
    async with transaction(request) as session:
        created = await _users(request, session).create_for(caller, body)
    # The activation token is shown once: never cached, never kept for an idempotent replay.
    return render(
        user_response(created.user, hydrate=True, activation_token=created.activation_token),
        headers=NO_STORE,
    )


async def list_users(request: Request) -> Response:
    listing = parse_list(request, USERS)
    caller = require_principal(request)
    async with transaction(request) as session:
        total, items = await _users(request, session).list_for(caller, listing)
    return render(
        page_of(listing, total, [user_response(u, hydrate=listing.hydrate) for u in items])
    )


async def get(request: Request) -> Response:
    query = parse_query(request, UserQuery)
    caller = require_principal(request)
    async with transaction(request) as session:
        user = await _users(request, session).get_for(
            caller, request.path_params["user_name_or_id"]
        )
    return render(user_response(user, hydrate=query.hydrate))


async def update(request: Request) -> Response:
    body = await parse_json(request, UserUpdate)
    caller = require_principal(request)
    async with transaction(request) as session:
        user = await _users(request, session).update_for(
            caller, request.path_params["user_name_or_id"], body
        )
    return render(user_response(user, hydrate=True))


async def email_opt_in(request: Request) -> Response:
    body = await parse_json(request, UserUpdate)
    caller = require_principal(request)
    async with transaction(request) as session:
        user = await _users(request, session).email_opt_in_for(
            caller, request.path_params["user_name_or_id"], body
        )
    return render(user_response(user, hydrate=True))


async def deactivate(request: Request) -> Response:
    caller = require_principal(request)
    async with transaction(request) as session:
        user, token = await _users(request, session).deactivate_for(
            caller, request.path_params["user_name_or_id"]
        )
    return render(user_response(user, hydrate=True, activation_token=token), headers=NO_STORE)


async def activate(request: Request) -> Response:
    """No login needed: the one-time activation token is the credential."""
    body = await parse_json(request, UserUpdate)
    async with transaction(request) as session:
        users = _users(request, session)
        user = await users.get(request.path_params["user_name_or_id"])
        user = await users.activate(user, body)
    return render(user_response(user, hydrate=True))


async def delete(request: Request) -> Response:
    caller = require_principal(request)
    async with transaction(request) as session:
        await _users(request, session).delete_for(caller, request.path_params["user_name_or_id"])
    return render_null()


def routes() -> list[ApiRoute]:
    one = "/api/v1/users/{user_name_or_id}"
    tags = ["users"]
    return [
        api_route(
            "/api/v1/users",
            list_users,
            method="GET",
            summary="List Users",
            tags=tags,
            query=USERS.query_model(),
            response=Page[UserResponse],
            errors=(400, 403),
        ),
        api_route(
            "/api/v1/users",
            create,
            method="POST",
            summary="Create User",
            tags=tags,
            body=UserRequest,
            response=UserResponse,
            errors=(400, 403, 409),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get User",
            tags=tags,
            query=UserQuery,
            response=UserResponse,
            errors=(403, 404),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update User",
            tags=tags,
            body=UserUpdate,
            response=UserResponse,
            errors=(400, 403, 404, 409),
        ),
        api_route(
            one,
            delete,
            method="DELETE",
            summary="Delete User",
            tags=tags,
            errors=(403, 404),
        ),
        api_route(
            one + "/deactivate",
            deactivate,
            method="PUT",
            summary="Deactivate User",
            tags=tags,
            response=UserResponse,
            errors=(403, 404),
        ),
        api_route(
            one + "/activate",
            activate,
            method="PUT",
            summary="Activate User",
            tags=tags,
            body=UserUpdate,
            response=UserResponse,
            auth=False,
            errors=(400, 403, 404),
        ),
        api_route(
            one + "/email-opt-in",
            email_opt_in,
            method="PUT",
            summary="Email Opt In Response",
            tags=tags,
            body=UserUpdate,
            response=UserResponse,
            errors=(404,),
        ),
    ]
