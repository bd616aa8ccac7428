"""``/workers``: registration, token renewal, heartbeat, list, get, delete."""

from __future__ import annotations

import uuid

from sqlmodel.ext.asyncio.session import AsyncSession
from starlette.requests import Request
from starlette.responses import Response

from agent_accounts.core.auth import require_account, require_worker
from agent_accounts.core.listing import Page
from agent_accounts.state import AgentState
from agent_accounts.worker.repository import WORKERS
from agent_accounts.worker.schemas import (
    WorkerCreateRequest,
    WorkerHeartbeatRequest,
    WorkerHeartbeatResponse,
    WorkerListQuery,
    WorkerRegistrationResponse,
    WorkerResponse,
    WorkerTokenResponse,
    worker_response,
)
from agent_accounts.worker.service import WorkerService, check_client
from shared.db import transaction
from shared.responses import NO_STORE, render
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param

TAGS = ["workers"]
LIST_QUERY = WORKERS.query_model("WorkerListQuery", WorkerListQuery)


def workers(request: Request, session: AsyncSession) -> WorkerService:
    return WorkerService(session, AgentState.of(request).clock)


def _id(request: Request) -> uuid.UUID:
    return path_param(request, "worker_id", uuid.UUID)


async def create(request: Request) -> Response:
    caller = require_account(request)
    check_client(request.headers.get("x-kitaru-client"))
    body = await parse_json(request, WorkerCreateRequest)
    async with transaction(request) as session:
        service = workers(request, session)
        worker, issued = await service.register(body, caller, AgentState.of(request).issuer)
        response = WorkerRegistrationResponse(
            token=issued.token,
            token_expires_at=issued.expires_at,
            worker=worker_response(worker, live=service.live(worker)),
        )
    return render(response, headers=NO_STORE)


async def renew_token(request: Request) -> Response:
    caller = require_account(request)
    worker_id = _id(request)
    async with transaction(request) as session:
        issued = await workers(request, session).renew(
            worker_id, caller, AgentState.of(request).issuer
        )
    return render(
        WorkerTokenResponse(token=issued.token, token_expires_at=issued.expires_at),
        headers=NO_STORE,
    )


async def heartbeat(request: Request) -> Response:
    caller = require_worker(request)
    worker_id = _id(request)
    await parse_json(request, WorkerHeartbeatRequest)
    async with transaction(request) as session:
        await workers(request, session).heartbeat(worker_id, caller)
    return render(WorkerHeartbeatResponse(cancel_task_ids=[]))


async def list_workers(request: Request) -> Response:
    require_account(request)
    query = parse_query(request, LIST_QUERY)
    async with transaction(request) as session:
        service = workers(request, session)
        items, cursor = await service.list(query, include_stale=query.include_stale)
        page: Page[WorkerResponse] = Page(
            items=[worker_response(w, live=service.live(w)) for w in items], next_cursor=cursor
        )
    return render(page)


async def get(request: Request) -> Response:
    require_account(request)
    worker_id = _id(request)
    async with transaction(request) as session:
        service = workers(request, session)
        worker = await service.get(worker_id)
        response = worker_response(worker, live=service.live(worker))
    return render(response)


async def delete(request: Request) -> Response:
    caller = require_account(request)
    worker_id = _id(request)
    async with transaction(request) as session:
        await workers(request, session).delete(worker_id, caller)
    return Response(status_code=204)


def routes() -> list[ApiRoute]:
    return [
        api_route("/api/v1/workers", create, method="POST", summary="Register a worker",
                  tags=TAGS, body=WorkerCreateRequest, response=WorkerRegistrationResponse,
                  errors=(426,)),
        api_route("/api/v1/workers", list_workers, method="GET", summary="List workers",
                  tags=TAGS, query=LIST_QUERY, response=Page[WorkerResponse]),
        api_route("/api/v1/workers/{worker_id:uuid_param}", get, method="GET",
                  summary="Get a worker",
                  tags=TAGS, response=WorkerResponse, errors=(404,)),
        api_route("/api/v1/workers/{worker_id:uuid_param}", delete, method="DELETE",
                  summary="Delete a worker", tags=TAGS, status_code=204, errors=(403, 404)),
        api_route("/api/v1/workers/{worker_id:uuid_param}/token", renew_token, method="POST",
                  summary="Renew a worker's token", tags=TAGS, response=WorkerTokenResponse,
                  errors=(403, 404)),
        api_route("/api/v1/workers/{worker_id:uuid_param}/heartbeat", heartbeat, method="POST",
                  summary="Worker heartbeat", tags=TAGS, body=WorkerHeartbeatRequest,
                  response=WorkerHeartbeatResponse, errors=(403, 404)),
    ]  # fmt: skip
