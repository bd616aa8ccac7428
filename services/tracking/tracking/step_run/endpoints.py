"""``/steps``: the step runs of a pipeline run, which link artifact versions and whose
cache keys the client looks up to reuse an earlier run of a step."""

from __future__ import annotations

import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from shared.auth import ScopeKind
from shared.db import transaction
from shared.listing import query_extras, read_list
from shared.pagination import Page
from shared.responses import render
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from tracking.core.auth import caller, caller_id, object_caller
from tracking.core.rendering import render_one, render_page
from tracking.core.schemas import HydrateQuery, ScopedListQuery
from tracking.logs.entries import LogEntry
from tracking.pipeline_run.schemas import ExecutionStatus
from tracking.state import TrackingState
from tracking.step_run.repository import STEPS
from tracking.step_run.schemas import (
    StepHeartbeatResponse,
    StepLogsQuery,
    StepRunRequest,
    StepRunResponse,
    StepRunUpdate,
    step_response,
)
from tracking.step_run.service import StepPageService, StepService
from tracking.store import ArtifactStores

LIST_QUERY = STEPS.query_model(extra=query_extras(ScopedListQuery))


async def list_(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, STEPS)
    query = parse_query(request, ScopedListQuery)
    async with transaction(request) as session:
        total, items = await StepService(session).list_page(listing, query)
    return await render_page(request, listing, total, items, step_response)


async def create(request: Request) -> Response:
    user_id = caller_id(request)
    body = await parse_json(request, StepRunRequest)
    async with transaction(request) as session:
        item = await StepService(session).create(body, user_id)
    return await render_one(request, item, step_response, hydrate=True)


async def get_step(request: Request) -> Response:
    caller(request)
    step_id = path_param(request, "step_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        item = await StepService(session).get(step_id)
    return await render_one(request, item, step_response, hydrate=query.hydrate)


async def update(request: Request) -> Response:
    user_id = caller_id(request)
    step_id = path_param(request, "step_id", uuid.UUID)
    body = await parse_json(request, StepRunUpdate)
    async with transaction(request) as session:
        item = await StepService(session).update(step_id, body, user_id)
    return await render_one(request, item, step_response, hydrate=True)


async def logs(request: Request) -> Response:
    """The entries of a step's logs, read from the artifact store the client wrote them
    to."""
    caller(request)
    step_id = path_param(request, "step_id", uuid.UUID)
    query = parse_query(request, StepLogsQuery)
    stores: ArtifactStores = TrackingState.of(request).artifact_stores
    async with transaction(request) as session:
        entries = await StepService(session).log_entries(step_id, query, stores)
    return render(entries)


async def status(request: Request) -> Response:
    caller(request)
    step_id = path_param(request, "step_id", uuid.UUID)
    async with transaction(request) as session:
        found = await StepPageService(session).status(step_id)
    return render(found)


async def configuration(request: Request) -> Response:
    caller(request)
    step_id = path_param(request, "step_id", uuid.UUID)
    async with transaction(request) as session:
        found = await StepPageService(session).configuration(step_id)
    return render(found)


async def heartbeat(request: Request) -> Response:
    """A running step's heartbeat; a workload token only for a step of its own run."""
    caller(request)
    step_id = path_param(request, "step_run_id", uuid.UUID)
    async with transaction(request) as session:
        service = StepPageService(session)
        object_caller(request, ScopeKind.PIPELINE_RUN, await service.run_of(step_id))
        found = await service.heartbeat(step_id)
    return render(found)


def routes() -> list[ApiRoute]:
    steps = "/api/v1/steps"
    one = f"{steps}/{{step_id:uuid_param}}"
    tags = ["steps"]
    return [
        api_route(
            steps,
            list_,
            method="GET",
            summary="List Run Steps",
            tags=tags,
            query=LIST_QUERY,
            response=Page[StepRunResponse],
            errors=(400, 404),
        ),
        api_route(
            steps,
            create,
            method="POST",
            summary="Create Run Step",
            tags=tags,
            body=StepRunRequest,
            response=StepRunResponse,
            errors=(404, 409),
        ),
        api_route(
            one,
            get_step,
            method="GET",
            summary="Get Step",
            tags=tags,
            query=HydrateQuery,
            response=StepRunResponse,
            errors=(404,),
        ),
        api_route(
            f"{one}/logs",
            logs,
            method="GET",
            summary="Get Step Logs",
            tags=tags,
            query=StepLogsQuery,
            response=list[LogEntry],
            errors=(400, 403, 404, 501),
        ),
        api_route(
            f"{one}/status",
            status,
            method="GET",
            summary="Get Step Status",
            tags=tags,
            response=ExecutionStatus,
            errors=(404,),
        ),
        api_route(
            f"{one}/step-configuration",
            configuration,
            method="GET",
            summary="Get Step Configuration",
            tags=tags,
            response=dict[str, Any],
            errors=(404,),
        ),
        api_route(
            f"{steps}/{{step_run_id:uuid_param}}/heartbeat",
            heartbeat,
            method="PUT",
            summary="Update Heartbeat",
            tags=tags,
            response=StepHeartbeatResponse,
            errors=(401, 403, 404),
        ),
        api_route(
            one,
            update,
            method="PUT",
            summary="Update Step",
            tags=tags,
            body=StepRunUpdate,
            response=StepRunResponse,
            errors=(404,),
        ),
    ]
