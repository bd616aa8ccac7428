"""``/model_version_artifacts``, ``/model_version_pipeline_runs`` and the link deletions
under ``/model_versions/{id}``."""

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
from tracking.model_version_link.repository import ARTIFACT_LINKS, RUN_LINKS
from tracking.model_version_link.schemas import (
    ArtifactLinkListQuery,
    DeleteLinksQuery,
    ModelVersionArtifactRequest,
    ModelVersionArtifactResponse,
    ModelVersionPipelineRunRequest,
    ModelVersionPipelineRunResponse,
    link_response,
)
from tracking.model_version_link.service import artifact_links, run_links

ARTIFACT_LIST_QUERY = ARTIFACT_LINKS.query_model(extra=query_extras(ArtifactLinkListQuery))
RUN_LIST_QUERY = RUN_LINKS.query_model()


async def create_artifact_link(request: Request) -> Response:
    caller_id(request)
    body = await parse_json(request, ModelVersionArtifactRequest)
    async with transaction(request) as session:
        item, made = await artifact_links(session).create(body.model_version, body.artifact_version)
    return await render_one(request, item, link_response, hydrate=made)


async def list_artifact_links(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, ARTIFACT_LINKS)
    query = parse_query(request, ArtifactLinkListQuery)
    async with transaction(request) as session:
        total, items = await artifact_links(session).list_page(listing, query)
    return await render_page(request, listing, total, items, link_response)


async def create_run_link(request: Request) -> Response:
    caller_id(request)
    body = await parse_json(request, ModelVersionPipelineRunRequest)
    async with transaction(request) as session:
        item, made = await run_links(session).create(body.model_version, body.pipeline_run)
    return await render_one(request, item, link_response, hydrate=made)


async def list_run_links(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, RUN_LINKS)
    async with transaction(request) as session:
        total, items = await run_links(session).list_page(listing)
    return await render_page(request, listing, total, items, link_response)


async def delete_artifact_link(request: Request) -> Response:
    caller_id(request)
    version_id = path_param(request, "model_version_id", uuid.UUID)
    name_or_id = path_param(request, "link_name_or_id", str)
    async with transaction(request) as session:
        await artifact_links(session).delete(version_id, name_or_id)
    return render_null()


async def delete_artifact_links(request: Request) -> Response:
    caller_id(request)
    version_id = path_param(request, "model_version_id", uuid.UUID)
    query = parse_query(request, DeleteLinksQuery)
    async with transaction(request) as session:
        await artifact_links(session).delete_all(version_id, only_links=query.only_links)
    return render_null()


async def delete_run_link(request: Request) -> Response:
    caller_id(request)
    version_id = path_param(request, "model_version_id", uuid.UUID)
    name_or_id = path_param(request, "link_name_or_id", str)
    async with transaction(request) as session:
        await run_links(session).delete(version_id, name_or_id)
    return render_null()


def routes() -> list[ApiRoute]:
    artifacts = "/api/v1/model_version_artifacts"
    runs = "/api/v1/model_version_pipeline_runs"
    version = "/api/v1/model_versions/{model_version_id:uuid_param}"
    return [
        api_route(
            artifacts,
            list_artifact_links,
            method="GET",
            summary="List Model Version Artifact Links",
            tags=["model_version_artifacts"],
            query=ARTIFACT_LIST_QUERY,
            response=Page[ModelVersionArtifactResponse],
            errors=(400,),
        ),
        api_route(
            artifacts,
            create_artifact_link,
            method="POST",
            summary="Create Model Version Artifact Link",
            tags=["model_version_artifacts"],
            body=ModelVersionArtifactRequest,
            response=ModelVersionArtifactResponse,
            errors=(404,),
        ),
        api_route(
            runs,
            list_run_links,
            method="GET",
            summary="List Model Version Pipeline Run Links",
            tags=["model_version_pipeline_runs"],
            query=RUN_LIST_QUERY,
            response=Page[ModelVersionPipelineRunResponse],
            errors=(400,),
        ),
        api_route(
            runs,
            create_run_link,
            method="POST",
            summary="Create Model Version Pipeline Run Link",
            tags=["model_version_pipeline_runs"],
            body=ModelVersionPipelineRunRequest,
            response=ModelVersionPipelineRunResponse,
            errors=(404,),
        ),
        api_route(
            version + "/artifacts",
            delete_artifact_links,
            method="DELETE",
            summary="Delete All Model Version Artifact Links",
            tags=["model_versions"],
            query=DeleteLinksQuery,
            errors=(404,),
        ),
        api_route(
            version + "/artifacts/{link_name_or_id}",
            delete_artifact_link,
            method="DELETE",
            summary="Delete Model Version Artifact Link",
            tags=["model_versions"],
            errors=(404,),
        ),
        api_route(
            version + "/runs/{link_name_or_id}",
            delete_run_link,
            method="DELETE",
            summary="Delete Model Version Pipeline Run Link",
            tags=["model_versions"],
            errors=(404,),
        ),
    ]
