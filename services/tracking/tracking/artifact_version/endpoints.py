"""``/artifact_versions``: versions of artifacts, their visualizations and their data."""

from __future__ import annotations

import uuid

from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import render, render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from tracking.artifact_version.download import DownloadTokens
from tracking.artifact_version.repository import ARTIFACT_VERSIONS
from tracking.artifact_version.schemas import (
    ArtifactVersionRequest,
    ArtifactVersionResponse,
    ArtifactVersionUpdate,
    LoadedVisualization,
    version_response,
)
from tracking.artifact_version.service import ArtifactVersionService, VersionListQuery
from tracking.core.auth import caller, caller_id
from tracking.core.rendering import render_many, render_one, render_page
from tracking.core.schemas import HydrateQuery
from tracking.settings import Settings
from tracking.state import TrackingState
from tracking.store import ArtifactStores
from tracking.store.archive import tar_gz

LIST_QUERY = ARTIFACT_VERSIONS.query_model(extra=query_extras(VersionListQuery))


class DeleteQuery(BaseModel):
    delete_metadata: bool = True
    delete_from_artifact_store: bool = False


class PruneQuery(BaseModel):
    project_name_or_id: str
    only_versions: bool = True


class VisualizeQuery(BaseModel):
    index: int = Field(default=0)


class DataQuery(BaseModel):
    token: str


def _settings(request: Request) -> Settings:
    settings: Settings = TrackingState.of(request).settings
    return settings


def _stores(request: Request) -> ArtifactStores:
    stores: ArtifactStores = TrackingState.of(request).artifact_stores
    return stores


def _downloads(request: Request) -> DownloadTokens:
    tokens: DownloadTokens = TrackingState.of(request).downloads
    return tokens


async def list_(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, ARTIFACT_VERSIONS)
    query = parse_query(request, VersionListQuery)
    async with transaction(request) as session:
        total, items = await ArtifactVersionService(session).list_page(listing, query)
    return await render_page(request, listing, total, items, version_response)


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    body = await parse_json(request, ArtifactVersionRequest)
    async with transaction(request) as session:
        item = await ArtifactVersionService(session).create(body, user_id)
    return await render_one(request, item, version_response, hydrate=True)


async def create_batch(request: Request) -> Response:
    user_id = caller_id(request)
    body = await parse_json(request, list[ArtifactVersionRequest])
    async with transaction(request) as session:
        items = await ArtifactVersionService(session).create_many(body, user_id)
    return await render_many(request, items, version_response)


async def get(request: Request) -> Response:
    caller_id(request)
    version_id = path_param(request, "artifact_version_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        item = await ArtifactVersionService(session).get(version_id)
    return await render_one(request, item, version_response, hydrate=query.hydrate)


async def update(request: Request) -> Response:
    user_id = caller_id(request)
    version_id = path_param(request, "artifact_version_id", uuid.UUID)
    body = await parse_json(request, ArtifactVersionUpdate)
    async with transaction(request) as session:
        item = await ArtifactVersionService(session).update(version_id, body, user_id)
    return await render_one(request, item, version_response, hydrate=True)


async def delete(request: Request) -> Response:
    caller_id(request)
    version_id = path_param(request, "artifact_version_id", uuid.UUID)
    query = parse_query(request, DeleteQuery)
    async with transaction(request) as session:
        await ArtifactVersionService(session, _stores(request)).delete(
            version_id,
            delete_metadata=query.delete_metadata,
            delete_from_store=query.delete_from_artifact_store,
        )
    return render_null()


async def prune(request: Request) -> Response:
    caller_id(request)
    query = parse_query(request, PruneQuery)
    async with transaction(request) as session:
        await ArtifactVersionService(session).prune(
            query.project_name_or_id, only_versions=query.only_versions
        )
    return render_null()


async def visualize(request: Request) -> Response:
    caller(request)
    version_id = path_param(request, "artifact_version_id", uuid.UUID)
    query = parse_query(request, VisualizeQuery)
    limit = _settings(request).visualization_size_limit
    async with transaction(request) as session:
        versions = ArtifactVersionService(session, _stores(request))
        loaded = await versions.visualize(version_id, query.index, limit)
    return render(loaded)


async def download_token(request: Request) -> Response:
    caller(request)
    version_id = path_param(request, "artifact_version_id", uuid.UUID)
    limit = _settings(request).download_size_limit
    async with transaction(request) as session:
        await ArtifactVersionService(session, _stores(request)).download(version_id, limit)
    return render(_downloads(request).issue(version_id))


async def data(request: Request) -> Response:
    """No credential but the download token; the archive is built while it is sent."""
    version_id = path_param(request, "artifact_version_id", uuid.UUID)
    query = parse_query(request, DataQuery)
    _downloads(request).check(query.token, version_id)
    limit = _settings(request).download_size_limit
    async with transaction(request) as session:
        found = await ArtifactVersionService(session, _stores(request)).download(version_id, limit)
    return StreamingResponse(
        tar_gz(found.store, found.entries),
        media_type="application/gzip",
        headers={"Content-Disposition": f'attachment; filename="{found.filename}"'},
    )


def routes() -> list[ApiRoute]:
    many = "/api/v1/artifact_versions"
    one = f"{many}/{{artifact_version_id:uuid_param}}"
    tags = ["artifact_versions"]
    return [
        api_route(
            many,
            list_,
            method="GET",
            summary="List Artifact Versions",
            tags=tags,
            query=LIST_QUERY,
            response=Page[ArtifactVersionResponse],
            errors=(400, 404),
        ),
        api_route(
            many,
            create,
            method="POST",
            summary="Create Artifact Version",
            tags=tags,
            body=ArtifactVersionRequest,
            response=ArtifactVersionResponse,
            errors=(400, 404, 409),
        ),
        api_route(
            many,
            prune,
            method="DELETE",
            summary="Prune Artifact Versions",
            tags=tags,
            query=PruneQuery,
            errors=(404,),
        ),
        api_route(
            f"{many}/batch",
            create_batch,
            method="POST",
            summary="Batch Create Artifact Version",
            tags=tags,
            body=list[ArtifactVersionRequest],
            response=list[ArtifactVersionResponse],
            errors=(400, 404, 409),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Artifact Version",
            tags=tags,
            query=HydrateQuery,
            response=ArtifactVersionResponse,
            errors=(404,),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Artifact Version",
            tags=tags,
            body=ArtifactVersionUpdate,
            response=ArtifactVersionResponse,
            errors=(404, 409),
        ),
        api_route(
            one,
            delete,
            method="DELETE",
            summary="Delete Artifact Version",
            tags=tags,
            query=DeleteQuery,
            errors=(400, 403, 404),
        ),
        api_route(
            f"{one}/visualize",
            visualize,
            method="GET",
            summary="Get Artifact Visualization",
            tags=tags,
            query=VisualizeQuery,
            response=LoadedVisualization,
            errors=(403, 404, 501),
        ),
        api_route(
            f"{one}/download-token",
            download_token,
            method="GET",
            summary="Get Artifact Download Token",
            tags=tags,
            response=str,
            errors=(403, 404),
        ),
        api_route(
            f"{one}/data",
            data,
            method="GET",
            summary="Download Artifact Data",
            tags=tags,
            query=DataQuery,
            auth=False,
            response_media_type="application/gzip",
            errors=(401, 403, 404),
        ),
    ]
