"""``/steps``: the step runs of a pipeline run, which link artifact versions (the models
and rules live with runs: :mod:`tracking.pipeline_run`)."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import Response

from shared.db import transaction
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param
from tracking.core.auth import caller, caller_id
from tracking.core.rendering import render_one
from tracking.core.schemas import HydrateQuery
from tracking.pipeline_run.schemas import StepRunRequest, StepRunResponse, step_response
from tracking.pipeline_run.service import StepService


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


def routes() -> list[ApiRoute]:
    steps = "/api/v1/steps"
    return [
        api_route(
            steps,
            create,
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
