"""``/code_repositories`` (and the deprecated ``/workspaces/{project}/code_repositories``)."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from tracking.code_repository.repository import CODE_REPOSITORIES
from tracking.code_repository.schemas import (
    CodeRepositoryListQuery,
    CodeRepositoryRequest,
    CodeRepositoryResponse,
    CodeRepositoryUpdate,
    code_repository_response,
)
from tracking.code_repository.service import CodeRepositoryService
from tracking.core.aliases import scoped_body, scoped_query
from tracking.core.auth import caller, caller_id
from tracking.core.rendering import render_one, render_page
from tracking.core.schemas import HydrateQuery, ProjectQuery

# On the deprecated path, the path segment of the same name wins over the query parameter.
LIST_QUERY = CODE_REPOSITORIES.query_model(extra=query_extras(CodeRepositoryListQuery))


async def list_code_repositories(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, CODE_REPOSITORIES)
    query = scoped_query(request, CodeRepositoryListQuery)
    async with transaction(request) as session:
        total, rows = await CodeRepositoryService(session).list_page(listing, query)
    return await render_page(request, listing, total, rows, code_repository_response)


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    body = await scoped_body(request, CodeRepositoryRequest)
    async with transaction(request) as session:
        row = await CodeRepositoryService(session).create(body, user_id)
    return await render_one(request, row, code_repository_response, hydrate=True)


async def update(request: Request) -> Response:
    caller_id(request)
    repository_id = path_param(request, "code_repository_id", uuid.UUID)
    body = await parse_json(request, CodeRepositoryUpdate)
    async with transaction(request) as session:
        row = await CodeRepositoryService(session).update(repository_id, body)
    return await render_one(request, row, code_repository_response, hydrate=True)


async def get(request: Request) -> Response:
    caller_id(request)
    repository_id = path_param(request, "code_repository_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        row = await CodeRepositoryService(session).get(repository_id)
    return await render_one(request, row, code_repository_response, hydrate=query.hydrate)


async def delete(request: Request) -> Response:
    caller_id(request)
    repository_id = path_param(request, "code_repository_id", uuid.UUID)
    async with transaction(request) as session:
        await CodeRepositoryService(session).delete(repository_id)
    return render_null()


def routes() -> list[ApiRoute]:
    many = "/api/v1/code_repositories"
    one = many + "/{code_repository_id:uuid_param}"
    tags = ["code_repositories"]
    return [
        api_route(
            many,
            list_code_repositories,
            method="GET",
            summary="List Code Repositories",
            tags=tags,
            query=LIST_QUERY,
            response=Page[CodeRepositoryResponse],
            errors=(400, 404),
        ),
        api_route(
            many,
            create,
            method="POST",
            query=ProjectQuery,
            summary="Create Code Repository",
            tags=tags,
            body=CodeRepositoryRequest,
            response=CodeRepositoryResponse,
            errors=(404, 409),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Code Repository",
            tags=tags,
            query=HydrateQuery,
            response=CodeRepositoryResponse,
            errors=(404,),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Code Repository",
            tags=tags,
            body=CodeRepositoryUpdate,
            response=CodeRepositoryResponse,
            errors=(404, 409),
        ),
        api_route(
            one, delete, method="DELETE", summary="Delete Code Repository", tags=tags, errors=(404,)
        ),
    ]
