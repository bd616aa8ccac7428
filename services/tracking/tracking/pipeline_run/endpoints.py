"""``/runs`` and ``/steps``: the runs and step runs that link artifact versions."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.auth import ScopeKind, TokenKind
from shared.db import transaction
from shared.errors import AuthorizationFailed, Conflict
from shared.pagination import Page
from shared.responses import render
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from shared.users import users_by_id
from tracking.core.auth import MANAGING_KINDS, caller, caller_id
from tracking.core.schemas import HydrateQuery
from tracking.core.scoped import (
    ScopedListQuery,
    create_handler,
    delete_handler,
    get_handler,
    list_handler,
    query_extras,
    render_one,
    update_handler,
)
from tracking.pipeline_run.repository import RUNS
from tracking.pipeline_run.schemas import (
    PipelineRunRequest,
    PipelineRunResponse,
    PipelineRunUpdate,
    PipelineSnapshotRunRequest,
    StepRunRequest,
    StepRunResponse,
    run_response,
    step_response,
)
from tracking.pipeline_run.service import RunService, StepService
from tracking.settings import Settings

LIST_QUERY = RUNS.query_model(extra=query_extras(ScopedListQuery))


list_runs = list_handler(RunService, RUNS, run_response)
create_step = create_handler(StepService, StepRunRequest, step_response)


async def get_or_create_run(request: Request) -> Response:
    """200 ``[run, created]``, as the reference."""
    user_id = caller_id(request)
    body = await parse_json(request, PipelineRunRequest)
    async with transaction(request) as session:
        item, created = await RunService(session).get_or_create(body, user_id)
    users = await users_by_id(request, [item.user_id])
    user = users.get(item.user_id) if item.user_id is not None else None
    return render([run_response(item, True, user), created])


SNAPSHOT_RUN_KINDS = (*MANAGING_KINDS, TokenKind.SERVICE)


def snapshot_runner(request: Request) -> uuid.UUID | None:
    """Who may run a snapshot, and as which user: a user (login, device or generic API
    token) as itself, or a service named in ``snapshot_run_clients`` (the webhooks
    service, for its triggers) as nobody (the run records the trigger instead). A workload
    token may not: it is bound to its own run, schedule or deployment."""
    principal = caller(request, kinds=SNAPSHOT_RUN_KINDS)
    if principal.kind != TokenKind.SERVICE:
        return caller_id(request, kinds=SNAPSHOT_RUN_KINDS)
    settings: Settings = request.state.settings
    if principal.identity not in {f"service:{c}" for c in settings.snapshot_run_clients}:
        raise AuthorizationFailed(f"The service '{principal.display_name}' may not run snapshots.")
    return None


async def run_snapshot(request: Request) -> Response:
    """A new run of the snapshot (for a trigger execution that asked before: its run)."""
    user_id = snapshot_runner(request)
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


async def get_step(request: Request) -> Response:
    caller(request)
    step_id = path_param(request, "step_id", uuid.UUID)
    query = parse_query(request, HydrateQuery)
    async with transaction(request) as session:
        item = await StepService(session).get(step_id)
    return await render_one(request, item, step_response, hydrate=query.hydrate)


RUN = ScopeKind.PIPELINE_RUN
get_run = get_handler(RunService, "run_id", run_response, scope=RUN)
update_run = update_handler(RunService, "run_id", PipelineRunUpdate, run_response, scope=RUN)
delete_run = delete_handler(RunService, "run_id", scope=RUN)


def routes() -> list[ApiRoute]:
    runs = "/api/v1/runs"
    steps = "/api/v1/steps"
    return [
        api_route(
            runs,
            list_runs,
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
            body=PipelineRunRequest,
            response=tuple[PipelineRunResponse, bool],
            errors=(404, 409),
        ),
        api_route(
            "/api/v1/pipeline_snapshots/{snapshot_id}/runs",
            run_snapshot,
            method="POST",
            summary="Create Snapshot Run",
            tags=["pipeline_snapshots"],
            body=PipelineSnapshotRunRequest,
            response=PipelineRunResponse,
            errors=(400, 401, 404, 409),
        ),
        api_route(
            f"{runs}/{{run_id}}",
            get_run,
            method="GET",
            summary="Get Run",
            tags=["runs"],
            query=HydrateQuery,
            response=PipelineRunResponse,
            errors=(404,),
        ),
        api_route(
            f"{runs}/{{run_id}}",
            update_run,
            method="PUT",
            summary="Update Run",
            tags=["runs"],
            body=PipelineRunUpdate,
            response=PipelineRunResponse,
            errors=(404,),
        ),
        api_route(
            f"{runs}/{{run_id}}",
            delete_run,
            method="DELETE",
            summary="Delete Run",
            tags=["runs"],
            errors=(404,),
        ),
        api_route(
            steps,
            create_step,
            method="POST",
            summary="Create Run Step",
            tags=["steps"],
            body=StepRunRequest,
            response=StepRunResponse,
            errors=(404, 409),
        ),
        api_route(
            f"{steps}/{{step_id}}",
            get_step,
            method="GET",
            summary="Get Step",
            tags=["steps"],
            query=HydrateQuery,
            response=StepRunResponse,
            errors=(404,),
        ),
    ]
