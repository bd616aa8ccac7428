"""``/users``: what an admin needs to manage accounts (and activation by token).

Other services may list users with their client-credentials token (to show a creator in
``resources.user``); a service token may do nothing else here.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from identity.auth.endpoints import acting_user
from identity.models import User
from identity.user.repository import USERS
from identity.user.schemas import (
    UserQuery,
    UserRequest,
    UserResponse,
    UserUpdate,
    user_response,
)
from identity.user.service import UserService
from shared.auth import TokenKind, require_principal
from shared.db import transaction
from shared.errors import Forbidden
from shared.listing import page_of, parse_list
from shared.pagination import Page
from shared.responses import NO_STORE, render, render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query


def _is_service(request: Request) -> bool:
    return require_principal(request).kind == TokenKind.SERVICE


async def _actor(request: Request, users: UserService) -> User:
    """The acting user; a service token is refused with 403 (it is valid, but may only
    list users), not 401, which would make the service fetch a new token and retry."""
    if _is_service(request):
        raise Forbidden("A service token may only list users.")
    return await acting_user(request, users)


async def _admin(request: Request, users: UserService) -> User:
    actor = await _actor(request, users)
    if not actor.is_admin:
        raise Forbidden("Only admins can manage other accounts.")
    return actor


async def create(request: Request) -> Response:
    body = await parse_json(request, UserRequest)
    async with transaction(request) as session:
        users = UserService(session)
        await _admin(request, users)
        created = await users.create(body)
    # The activation token is shown once: never cached, never kept for an idempotent replay.
    return render(
        user_response(created.user, hydrate=True, activation_token=created.activation_token),
        headers=NO_STORE,
    )


async def list_users(request: Request) -> Response:
    listing = parse_list(request, USERS)
    async with transaction(request) as session:
        users = UserService(session)
        if not _is_service(request):
            await _admin(request, users)
        total, items = await users.list(listing)
    return render(
        page_of(listing, total, [user_response(u, hydrate=listing.hydrate) for u in items])
    )


async def get(request: Request) -> Response:
    query = parse_query(request, UserQuery)
    async with transaction(request) as session:
        users = UserService(session)
        actor = await _actor(request, users)
        user = await users.get(request.path_params["user_name_or_id"])
        if user.id != actor.id and not actor.is_admin:
            raise Forbidden("Only admins can read other accounts.")
    return render(user_response(user, hydrate=query.hydrate))


async def update(request: Request) -> Response:
    body = await parse_json(request, UserUpdate)
    async with transaction(request) as session:
        users = UserService(session, request.state.revocations)
        actor = await _actor(request, users)
        user = await users.get(request.path_params["user_name_or_id"])
        if user.id != actor.id and not actor.is_admin:
            raise Forbidden("Only admins can update other accounts.")
        user = await users.update(user, body, by_admin=actor.is_admin, actor=str(actor.id))
    return render(user_response(user, hydrate=True))


async def deactivate(request: Request) -> Response:
    async with transaction(request) as session:
        users = UserService(session, request.state.revocations)
        actor = await _admin(request, users)
        user = await users.get(request.path_params["user_name_or_id"])
        if user.id == actor.id:
            raise Forbidden("An account cannot deactivate itself.")
        token = await users.deactivate(user)
    return render(user_response(user, hydrate=True, activation_token=token), headers=NO_STORE)


async def activate(request: Request) -> Response:
    """No login needed: the one-time activation token is the credential."""
    body = await parse_json(request, UserUpdate)
    async with transaction(request) as session:
        users = UserService(session)
        user = await users.get(request.path_params["user_name_or_id"])
        user = await users.activate(user, body)
    return render(user_response(user, hydrate=True))


async def delete(request: Request) -> Response:
    async with transaction(request) as session:
        users = UserService(session, request.state.revocations)
        actor = await _admin(request, users)
        user = await users.get(request.path_params["user_name_or_id"])
        await users.delete(user, actor=str(actor.id))
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
    ]
