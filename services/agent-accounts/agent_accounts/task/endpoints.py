"""``/tasks`` (create, claim, report, requeue, get), ``/sessions`` and ``/blobs``: what
task tokens guard."""

from __future__ import annotations

import uuid

from sqlmodel.ext.asyncio.session import AsyncSession
from starlette.requests import Request
from starlette.responses import Response

from agent_accounts.core.auth import (
    require_account,
    require_caller,
    require_task,
    require_worker,
)
from agent_accounts.core.listing import Page
from agent_accounts.core.schemas import parse_optional_json
from agent_accounts.state import AgentState
from agent_accounts.task.repository import SESSIONS, TASKS
from agent_accounts.task.schemas import (
    BlobResponse,
    SessionCreateRequest,
    SessionListQuery,
    SessionResponse,
    SessionSummary,
    SessionUpdateRequest,
    TaskClaimRequest,
    TaskClaimResponse,
    TaskCreateRequest,
    TaskResponse,
    TaskUpdateRequest,
    TaskWithSpec,
    blob_response,
    session_response,
    session_summary,
    task_response,
    task_spec,
)
from agent_accounts.task.service import TaskService
from shared.db import transaction
from shared.responses import NO_STORE, render
from shared.routing import ApiRoute, api_route, parse_json, parse_query, path_param

TAGS = ["tasks"]

TASK_QUERY = TASKS.query_model("TaskListQuery")
SESSION_QUERY = SESSIONS.query_model("SessionListQuery", SessionListQuery)


def tasks(request: Request, session: AsyncSession) -> TaskService:
    state = AgentState.of(request)
    return TaskService(session, state.settings, state.clock)


async def create(request: Request) -> Response:
    caller = require_account(request)
    body = await parse_json(request, TaskCreateRequest)
    async with transaction(request) as session:
        task = await tasks(request, session).create(body, caller)
    return render(task_response(task), status_code=201)


async def claim(request: Request) -> Response:
    caller = require_worker(request)
    body = await parse_optional_json(request, TaskClaimRequest)
    async with transaction(request) as session:
        claimed = await tasks(request, session).claim(
            caller, body.max_tasks, AgentState.of(request).issuer
        )
    items = [
        TaskWithSpec(task=task_response(task), spec=task_spec(task), token=issued.token)
        for task, issued in claimed
    ]
    return render(TaskClaimResponse(tasks=items), headers=NO_STORE)


async def list_tasks(request: Request) -> Response:
    require_account(request)
    query = parse_query(request, TASK_QUERY)
    async with transaction(request) as session:
        items, cursor = await tasks(request, session).list_tasks(query)
    return render(Page(items=[task_response(t) for t in items], next_cursor=cursor))


async def get(request: Request) -> Response:
    caller = require_caller(request)
    task_id = path_param(request, "task_id", uuid.UUID)
    async with transaction(request) as session:
        task = await tasks(request, session).get(task_id, caller)
    return render(task_response(task))


async def update(request: Request) -> Response:
    caller = require_task(request)
    task_id = path_param(request, "task_id", uuid.UUID)
    body = await parse_json(request, TaskUpdateRequest)
    async with transaction(request) as session:
        task = await tasks(request, session).update(task_id, body, caller)
    return render(task_response(task))


async def requeue(request: Request) -> Response:
    caller = require_account(request)
    task_id = path_param(request, "task_id", uuid.UUID)
    async with transaction(request) as session:
        task = await tasks(request, session).requeue(task_id, caller)
    return render(task_response(task))


async def create_session(request: Request) -> Response:
    caller = require_caller(request)
    body = await parse_json(request, SessionCreateRequest)
    async with transaction(request) as session:
        row = await tasks(request, session).create_session(body, caller)
    return render(session_response(row), status_code=201)


async def list_sessions(request: Request) -> Response:
    caller = require_caller(request)
    query = parse_query(request, SESSION_QUERY)
    async with transaction(request) as session:
        rows, cursor = await tasks(request, session).list_sessions(query, caller)
    render_one = session_response if query.include_payloads else session_summary
    page: Page[SessionSummary] = Page(items=[render_one(r) for r in rows], next_cursor=cursor)
    return render(page)


async def get_session(request: Request) -> Response:
    caller = require_caller(request)
    session_id = path_param(request, "session_id", uuid.UUID)
    async with transaction(request) as session:
        row = await tasks(request, session).get_session(session_id, caller)
    return render(session_response(row))


async def update_session(request: Request) -> Response:
    caller = require_caller(request)
    session_id = path_param(request, "session_id", uuid.UUID)
    body = await parse_json(request, SessionUpdateRequest)
    async with transaction(request) as session:
        row = await tasks(request, session).update_session(session_id, body.data, caller)
    return render(session_response(row))


async def create_blob(request: Request) -> Response:
    caller = require_caller(request)
    content = await request.body()
    async with transaction(request) as session:
        blob = await tasks(request, session).create_blob(content, caller)
    return render(blob_response(blob), status_code=201)


async def get_blob(request: Request) -> Response:
    caller = require_caller(request)
    blob_id = path_param(request, "blob_id", uuid.UUID)
    async with transaction(request) as session:
        blob = await tasks(request, session).get_blob(blob_id, caller)
    return Response(blob.content, media_type="application/octet-stream")


def routes() -> list[ApiRoute]:
    return [
        api_route("/api/v1/tasks", create, method="POST", summary="Create a task", tags=TAGS,
                  body=TaskCreateRequest, response=TaskResponse, status_code=201,
                  errors=(422,)),
        api_route("/api/v1/tasks", list_tasks, method="GET", summary="List tasks", tags=TAGS,
                  query=TASK_QUERY, response=Page[TaskResponse], errors=(403, 422)),
        api_route("/api/v1/tasks/claim", claim, method="POST", summary="Claim tasks (worker)",
                  tags=TAGS, body=TaskClaimRequest, body_required=False,
                  response=TaskClaimResponse, errors=(403,)),
        api_route("/api/v1/tasks/{task_id:uuid_param}", get, method="GET", summary="Get a task",
                  tags=TAGS, response=TaskResponse, errors=(403, 404)),
        api_route("/api/v1/tasks/{task_id:uuid_param}", update, method="PATCH",
                  summary="Report a task's status, error and result (its task token)",
                  tags=TAGS, body=TaskUpdateRequest, response=TaskResponse,
                  errors=(403, 404, 409, 413)),
        api_route("/api/v1/tasks/{task_id:uuid_param}/requeue", requeue, method="POST",
                  summary="Requeue a task (a new attempt fences off the old token)",
                  tags=TAGS, response=TaskResponse, errors=(404, 409)),
        api_route("/api/v1/sessions", create_session, method="POST",
                  summary="Record a session", tags=TAGS, body=SessionCreateRequest,
                  response=SessionResponse, status_code=201),
        api_route("/api/v1/sessions", list_sessions, method="GET",
                  summary="List sessions (a task token: those its task recorded)", tags=TAGS,
                  query=SESSION_QUERY, response=Page[SessionResponse] | Page[SessionSummary],
                  errors=(403, 422)),
        api_route("/api/v1/sessions/{session_id:uuid_param}", get_session, method="GET",
                  summary="Read a session", tags=TAGS, response=SessionResponse,
                  errors=(403, 404)),
        api_route("/api/v1/sessions/{session_id:uuid_param}", update_session, method="PATCH",
                  summary="Update a session", tags=TAGS, body=SessionUpdateRequest,
                  response=SessionResponse, errors=(403, 404)),
        api_route("/api/v1/blobs", create_blob, method="POST", summary="Upload a blob",
                  tags=TAGS, response=BlobResponse, status_code=201, errors=(413,)),
        api_route("/api/v1/blobs/{blob_id:uuid_param}", get_blob, method="GET",
                  summary="Download a blob",
                  tags=TAGS, response_media_type="application/octet-stream",
                  errors=(403, 404)),
        # kitaru's name for the download (its UI's evaluator pages call it).
        api_route("/api/v1/blobs/{blob_id:uuid_param}/content", get_blob, method="GET",
                  summary="Download a blob", tags=TAGS,
                  response_media_type="application/octet-stream", errors=(403, 404),
                  operation_id="download_blob_content"),
    ]  # fmt: skip
