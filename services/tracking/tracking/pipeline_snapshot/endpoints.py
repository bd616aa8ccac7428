"""``/pipeline_snapshots``: a pipeline's code and configuration, frozen for runs and
deployments (the model lives with pipelines: :mod:`tracking.models.pipeline`)."""

from __future__ import annotations

import uuid

from pydantic import BaseModel
from sqlmodel.ext.asyncio.session import AsyncSession
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import render, render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from tracking.artifact_version.download import SNAPSHOT_CODE, DownloadTokens
from tracking.core.aliases import scoped_body, scoped_query
from tracking.core.auth import caller, caller_id
from tracking.core.rendering import render_one, render_page
from tracking.core.schemas import HydrateQuery, ProjectQuery
from tracking.pipeline_snapshot.repository import SNAPSHOTS
from tracking.pipeline_snapshot.schemas import (
    PipelineSnapshotRequest,
    PipelineSnapshotResponse,
    PipelineSnapshotUpdate,
    SnapshotListQuery,
    snapshot_response,
)
from tracking.pipeline_snapshot.service import SnapshotCodeService, SnapshotService
from tracking.settings import Settings
from tracking.state import TrackingState

LIST_QUERY = SNAPSHOTS.query_model(extra=query_extras(SnapshotListQuery))


class CodeQuery(BaseModel):
    token: str


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    body = await scoped_body(request, PipelineSnapshotRequest)
    async with transaction(request) as session:
        item = await SnapshotService(session).create(body, user_id)
    return await render_one(request, item, snapshot_response, hydrate=True)


async def get(request: Request) -> Response:
    caller_id(request)
    snapshot_id = path_param(request, "snapshot_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        item = await SnapshotService(session).get(snapshot_id)
    return await render_one(request, item, snapshot_response, hydrate=query.hydrate)


async def update(request: Request) -> Response:
    user_id = caller_id(request)
    snapshot_id = path_param(request, "snapshot_id", uuid.UUID)
    body = await parse_json(request, PipelineSnapshotUpdate)
    async with transaction(request) as session:
        item = await SnapshotService(session).update(snapshot_id, body, user_id)
    return await render_one(request, item, snapshot_response, hydrate=True)


async def delete(request: Request) -> Response:
    caller_id(request)
    snapshot_id = path_param(request, "snapshot_id", uuid.UUID)
    async with transaction(request) as session:
        await SnapshotService(session).delete(snapshot_id)
    return render_null()


def _code(request: Request, session: AsyncSession) -> SnapshotCodeService:
    return SnapshotCodeService(session, TrackingState.of(request).artifact_stores)


async def download_token(request: Request) -> Response:
    """A short-lived token for the code's URL, which a browser opens without headers."""
    state = TrackingState.of(request)
    caller_id(request)
    snapshot_id = path_param(request, "snapshot_id", uuid.UUID)
    settings: Settings = state.settings
    async with transaction(request) as session:
        await _code(request, session).code(snapshot_id, settings.download_size_limit)
    tokens: DownloadTokens = state.downloads
    return render(tokens.issue(snapshot_id, SNAPSHOT_CODE))


async def code(request: Request) -> Response:
    """No credential but the download token; the archive is sent as it is read."""
    state = TrackingState.of(request)
    snapshot_id = path_param(request, "snapshot_id", uuid.UUID)
    query = parse_query(request, CodeQuery)
    tokens: DownloadTokens = state.downloads
    tokens.check(query.token, snapshot_id, SNAPSHOT_CODE)
    settings: Settings = state.settings
    async with transaction(request) as session:
        found = await _code(request, session).code(snapshot_id, settings.download_size_limit)
    return StreamingResponse(
        found.store.chunks(found.entry),
        media_type="application/gzip",
        headers={"Content-Disposition": f'attachment; filename="snapshot-{snapshot_id}.tar.gz"'},
    )


async def list_snapshots(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, SNAPSHOTS)
    query = scoped_query(request, SnapshotListQuery)
    async with transaction(request) as session:
        total, items = await SnapshotService(session).list_page(listing, query)
    return await render_page(request, listing, total, items, snapshot_response)


def routes() -> list[ApiRoute]:
    many = "/api/v1/pipeline_snapshots"
    one = many + "/{snapshot_id:uuid_param}"
    tags = ["pipeline_snapshots"]
    return [
        api_route(
            many,
            create,
            method="POST",
            summary="Create Snapshot",
            tags=tags,
            query=ProjectQuery,
            body=PipelineSnapshotRequest,
            response=PipelineSnapshotResponse,
            errors=(400, 404, 409),
        ),
        api_route(
            one,
            get,
            method="GET",
            summary="Get Snapshot",
            tags=tags,
            query=HydrateQuery,
            response=PipelineSnapshotResponse,
            errors=(404,),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Snapshot",
            tags=tags,
            body=PipelineSnapshotUpdate,
            response=PipelineSnapshotResponse,
            errors=(400, 404, 409),
        ),
        api_route(
            one, delete, method="DELETE", summary="Delete Snapshot", tags=tags, errors=(400, 404)
        ),
        api_route(
            f"{one}/download-token",
            download_token,
            method="GET",
            summary="Get Snapshot Code Download Token",
            tags=tags,
            response=str,
            errors=(400, 403, 404),
        ),
        api_route(
            f"{one}/code",
            code,
            method="GET",
            summary="Download Snapshot Code",
            tags=tags,
            query=CodeQuery,
            auth=False,
            response_media_type="application/gzip",
            errors=(400, 401, 403, 404),
        ),
        api_route(
            "/api/v1/pipeline_snapshots",
            list_snapshots,
            method="GET",
            summary="List Pipeline Snapshots",
            tags=["pipeline_snapshots"],
            query=LIST_QUERY,
            response=Page[PipelineSnapshotResponse],
            errors=(400, 404),
        ),
    ]
