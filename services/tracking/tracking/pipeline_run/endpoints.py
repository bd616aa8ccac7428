"""``/runs``: pipeline runs, and runs of a snapshot (``/pipeline_snapshots/{id}/runs``)."""

from __future__ import annotations

import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from shared.auth import ScopeKind
from shared.db import transaction
from shared.errors import Conflict, HTTPDetailError
from shared.listing import query_extras, read_list, resolve_lookups
from shared.pagination import Page
from shared.responses import render, render_null
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_ids, path_param
from shared.users import users_by_id
from tracking.core.aliases import scoped_body, scoped_query
from tracking.core.auth import caller, caller_id, object_id, snapshot_runner
from tracking.core.rendering import render_one, render_page
from tracking.core.schemas import ProjectQuery, ScopedListQuery
from tracking.logs.entries import LogEntry
from tracking.pipeline_run.repository import RUNS
from tracking.pipeline_run.run_page import RunPageService
from tracking.pipeline_run.schemas import (
    DagQuery,
    ExecutionStatus,
    PipelineRunDAG,
    PipelineRunRequest,
    PipelineRunResponse,
    PipelineRunUpdate,
    PipelineSnapshotRunRequest,
    RunListQuery,
    RunQuery,
    StopQuery,
    run_response,
)
from tracking.pipeline_run.service import RunService
from tracking.pipeline_run.statistics import (
    RunStatisticsRequest,
    RunStatisticsResponse,
    RunStatisticsService,
    filter_listing,
)
from tracking.state import TrackingState
from tracking.step_run.repository import STEPS
from tracking.step_run.schemas import StepLogsQuery, StepRunResponse, step_response
from tracking.store import ArtifactStores

LIST_QUERY = RUNS.query_model(extra=query_extras(RunListQuery))
STEPS_QUERY = STEPS.query_model(extra=query_extras(ScopedListQuery))


SCOPE = ScopeKind.PIPELINE_RUN


async def list_(request: Request) -> Response:
    caller(request)
    listing = await read_list(request, RUNS)
    query = scoped_query(request, RunListQuery)
    async with transaction(request) as session:
        total, items = await RunService(session).list_page(listing, query)
    return await render_page(request, listing, total, items, run_response)


async def statistics(request: Request) -> Response:
    caller(request)
    body = await parse_json(request, RunStatisticsRequest)
    listing = await resolve_lookups(request, filter_listing(body.filter))
    async with transaction(request) as session:
        found = await RunStatisticsService(session).statistics(body, listing)
    return render(found)


async def get_or_create_run(request: Request) -> Response:
    """200 ``[run, created]``, as the reference."""
    user_id = caller_id(request)
    body = await scoped_body(request, PipelineRunRequest)
    async with transaction(request) as session:
        item, created = await RunService(session).get_or_create(body, user_id)
    users = await users_by_id(request, [item.user_id])
    user = users.get(item.user_id) if item.user_id is not None else None
    return render([run_response(item, True, user), created])


async def run_snapshot(request: Request) -> Response:
    """A new run of the snapshot (for a trigger execution that asked before: its run)."""
    settings = TrackingState.of(request).settings
    user_id = snapshot_runner(request, settings.snapshot_run_clients)
    snapshot_id = path_param(request, "snapshot_id", uuid.UUID)
    body = await parse_json(request, PipelineSnapshotRunRequest)
    try:
        async with transaction(request) as session:
            item = await RunService(session).run_snapshot(snapshot_id, body, user_id)
    except Conflict:
        if body.trigger_execution is None:
            raise
        # The same execution asked twice at once and the other request's run won the
        # unique constraint: answer with that run.
        async with transaction(request) as session:
            found = await RunService(session).of_trigger_execution(
                snapshot_id, body.trigger_execution.id
            )
        if found is None:
            raise
        item = found
    return await render_one(request, item, run_response, hydrate=True)


async def get(request: Request) -> Response:
    run_id = object_id(request, "run_id", SCOPE)
    query = parse_query(request, RunQuery)
    async with transaction(request) as session:
        item = await RunService(session).get(run_id, full=query.include_full_metadata)
    return await render_one(request, item, run_response, hydrate=query.hydrate)


async def update(request: Request) -> Response:
    run_id = object_id(request, "run_id", SCOPE)
    user_id = caller_id(request)
    body = await parse_json(request, PipelineRunUpdate)
    async with transaction(request) as session:
        item = await RunService(session).update(run_id, body, user_id)
    return await render_one(request, item, run_response, hydrate=True)


async def delete(request: Request) -> Response:
    run_id = object_id(request, "run_id", SCOPE)
    async with transaction(request) as session:
        await RunService(session).delete(run_id)
    return render_null()


async def dag(request: Request) -> Response:
    run_id = object_id(request, "run_id", SCOPE)
    query = parse_query(request, DagQuery)
    async with transaction(request) as session:
        found = await RunPageService(session).dag(run_id, query.include_step_metadata)
    return render(found)


async def steps(request: Request) -> Response:
    run_id = object_id(request, "run_id", SCOPE)
    listing = await read_list(request, STEPS)
    query = parse_query(request, ScopedListQuery)
    async with transaction(request) as session:
        total, items = await RunPageService(session).steps(run_id, listing, query)
    return await render_page(request, listing, total, items, step_response)


async def status(request: Request) -> Response:
    run_id = object_id(request, "run_id", SCOPE)
    async with transaction(request) as session:
        found = await RunPageService(session).status(run_id)
    return render(found)


async def pipeline_configuration(request: Request) -> Response:
    run_id = object_id(request, "run_id", SCOPE)
    async with transaction(request) as session:
        found = await RunPageService(session).configuration(run_id)
    return render(found)


async def logs(request: Request) -> Response:
    """The entries of the run's own logs, read from the artifact store the client wrote
    them to."""
    run_id = object_id(request, "run_id", SCOPE)
    query = parse_query(request, StepLogsQuery)
    stores: ArtifactStores = TrackingState.of(request).artifact_stores
    async with transaction(request) as session:
        entries = await RunPageService(session).log_entries(run_id, query, stores)
    return render(entries)


async def stop(request: Request) -> Response:
    run_id = object_id(request, "run_id", SCOPE)
    user_id = caller_id(request)
    parse_query(request, StopQuery)
    async with transaction(request) as session:
        await RunPageService(session).stop(run_id, user_id)
    return render_null()


async def disable_heartbeat(request: Request) -> Response:
    run_id = object_id(request, "run_id", SCOPE)
    async with transaction(request) as session:
        await RunPageService(session).disable_heartbeat(run_id)
    return render_null()


async def refresh(request: Request) -> Response:
    run_id = object_id(request, "run_id", SCOPE)
    async with transaction(request) as session:
        await RunPageService(session).refresh(run_id)
    return render_null()


def _run_page_routes(one: str) -> list[ApiRoute]:
    tags = ["runs"]
    return [
        api_route(
            f"{one}/steps",
            steps,
            method="GET",
            summary="Get Run Steps",
            tags=tags,
            query=STEPS_QUERY,
            response=Page[StepRunResponse],
            errors=(400, 404),
        ),
        api_route(
            f"{one}/pipeline-configuration",
            pipeline_configuration,
            method="GET",
            summary="Get Pipeline Configuration",
            tags=tags,
            response=dict[str, Any],
            errors=(404,),
        ),
        api_route(
            f"{one}/status",
            status,
            method="GET",
            summary="Get Run Status",
            tags=tags,
            response=ExecutionStatus,
            errors=(404,),
        ),
        api_route(
            f"{one}/dag",
            dag,
            method="GET",
            summary="Get Run Dag",
            tags=tags,
            query=DagQuery,
            response=PipelineRunDAG,
            errors=(404,),
        ),
        api_route(
            f"{one}/disable_heartbeat",
            disable_heartbeat,
            method="PUT",
            summary="Disable Run Heartbeat",
            tags=tags,
            errors=(400, 404),
        ),
        api_route(
            f"{one}/refresh",
            refresh,
            method="POST",
            summary="Refresh Run Status",
            tags=tags,
            errors=(404, 501),
        ),
        api_route(
            f"{one}/stop",
            stop,
            method="POST",
            summary="Stop Run",
            tags=tags,
            query=StopQuery,
            errors=(400, 403, 404),
        ),
        api_route(
            f"{one}/logs",
            logs,
            method="GET",
            summary="Run Logs",
            tags=tags,
            query=StepLogsQuery,
            response=list[LogEntry],
            errors=(400, 404, 501),
        ),
    ]


async def events_not_streamed(request: Request) -> Response:
    """A run's live event stream, which the reference serves only with a stream broker
    configured; this server has none, so it answers as the reference without one."""
    caller_id(request)
    path_ids(request)
    raise HTTPDetailError(501, "Live event streaming is not enabled on this server.")


def routes() -> list[ApiRoute]:
    runs = "/api/v1/runs"
    events = runs + "/{pipeline_run_id:uuid_param}/events"
    return [
        *(
            api_route(
                path,
                events_not_streamed,
                method=method,
                summary=summary,
                tags=["runs"],
                errors=(501,),
            )
            for path, method, summary in (
                (events, "POST", "Publish Run Events"),
                (events + "/stream", "GET", "Stream Run Events"),
            )
        ),
        api_route(
            runs,
            list_,
            method="GET",
            summary="List Runs",
            tags=["runs"],
            query=LIST_QUERY,
            response=Page[PipelineRunResponse],
            errors=(400, 404),
        ),
        api_route(
            runs,
            get_or_create_run,
            method="POST",
            summary="Get Or Create Pipeline Run",
            tags=["runs"],
            query=ProjectQuery,
            body=PipelineRunRequest,
            response=tuple[PipelineRunResponse, bool],
            errors=(404, 409),
        ),
        api_route(
            f"{runs}/statistics",
            statistics,
            method="POST",
            summary="Get Run Statistics",
            tags=["runs"],
            body=RunStatisticsRequest,
            response=RunStatisticsResponse,
            errors=(404, 422),
        ),
        *_run_page_routes(f"{runs}/{{run_id:uuid_param}}"),
        api_route(
            "/api/v1/pipeline_snapshots/{snapshot_id:uuid_param}/runs",
            run_snapshot,
            method="POST",
            summary="Create Snapshot Run",
            tags=["pipeline_snapshots"],
            body=PipelineSnapshotRunRequest,
            response=PipelineRunResponse,
            errors=(400, 401, 404, 409),
        ),
        api_route(
            f"{runs}/{{run_id:uuid_param}}",
            get,
            method="GET",
            summary="Get Run",
            tags=["runs"],
            query=RunQuery,
            response=PipelineRunResponse,
            errors=(404,),
        ),
        api_route(
            f"{runs}/{{run_id:uuid_param}}",
            update,
            method="PUT",
            summary="Update Run",
            tags=["runs"],
            body=PipelineRunUpdate,
            response=PipelineRunResponse,
            errors=(403, 404),
        ),
        api_route(
            f"{runs}/{{run_id:uuid_param}}",
            delete,
            method="DELETE",
            summary="Delete Run",
            tags=["runs"],
            errors=(404,),
        ),
    ]
