"""``/model_versions``, ``/models/{model_name_or_id}/model_versions`` and the deprecated
``POST /workspaces/{project}/models/{model_id}/model_versions``."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from tracking.core.auth import caller, caller_id
from tracking.core.rendering import render_one, render_page
from tracking.core.schemas import HydrateQuery
from tracking.model_version.repository import MODEL_VERSIONS
from tracking.model_version.schemas import (
    ModelVersionListQuery,
    ModelVersionRequest,
    ModelVersionResponse,
    ModelVersionUpdate,
    model_version_response,
)
from tracking.model_version.service import ModelVersionService

LIST_QUERY = MODEL_VERSIONS.query_model(extra=query_extras(ModelVersionListQuery))


async def list_(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, MODEL_VERSIONS)
    query = parse_query(request, ModelVersionListQuery)
    # On /models/{model_name_or_id}/model_versions, the path's model wins.
    named = request.path_params.get("model_name_or_id", query.model_name_or_id)
    query.model = named or query.model
    async with transaction(request) as session:
        total, items = await ModelVersionService(session).list_page(listing, query)
    return await render_page(request, listing, total, items, model_version_response)


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    body = await parse_json(request, ModelVersionRequest)
    project = request.path_params.get("project_name_or_id")
    model_id = path_param(request, "model_id", uuid.UUID) if project else None
    async with transaction(request) as session:
        item = await ModelVersionService(session).create(body, user_id, project, model_id)
    return await render_one(request, item, model_version_response, hydrate=True)


async def get(request: Request) -> Response:
    caller_id(request)
    version_id = path_param(request, "model_version_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        item = await ModelVersionService(session).get(version_id, hydrate=query.hydrate)
    return await render_one(request, item, model_version_response, hydrate=query.hydrate)


async def update(request: Request) -> Response:
    user_id = caller_id(request)
    version_id = path_param(request, "model_version_id", uuid.UUID)
    body = await parse_json(request, ModelVersionUpdate)
    async with transaction(request) as session:
        item = await ModelVersionService(session).update(version_id, body, user_id)
    return await render_one(request, item, model_version_response, hydrate=True)


async def delete(request: Request) -> Response:
    caller_id(request)
    version_id = path_param(request, "model_version_id", uuid.UUID)
    async with transaction(request) as session:
        await ModelVersionService(session).delete(version_id)
    return render_null()


def routes() -> list[ApiRoute]:
    many = "/api/v1/model_versions"
    one = many + "/{model_version_id:uuid_param}"
    tags = ["model_versions"]
    return [
        *(
            api_route(
                path,
                list_,
                method="GET",
                summary="List Model Versions",
                tags=tags,
                query=LIST_QUERY,
                response=Page[ModelVersionResponse],
                errors=(400, 404),
            )
            for path in (many, "/api/v1/models/{model_name_or_id}/model_versions")
        ),
        *(
            api_route(
                path,
                create,
                method="POST",
                summary="Create Model Version",
                tags=tags,
                body=ModelVersionRequest,
                response=ModelVersionResponse,
                errors=(400, 404, 409),
            )
            for path in (
                many,
                "/api/v1/workspaces/{project_name_or_id}/models/{model_id:uuid_param}/model_versions",
            )
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Model Version",
            tags=tags,
            query=HydrateQuery,
            response=ModelVersionResponse,
            errors=(404,),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Model Version",
            tags=tags,
            body=ModelVersionUpdate,
            response=ModelVersionResponse,
            errors=(400, 404, 409, 500),
        ),
        api_route(
            one,
            delete,
            method="DELETE",
            summary="Delete Model Version",
            tags=tags,
            errors=(404,),
        ),
    ]
