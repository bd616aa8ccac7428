"""Tasks and the sessions and blobs their tokens guard.

An account creates a task with an execution timeout and an allowlist of sessions and
blobs. A worker claims it: the attempt number grows, and the worker gets a task token for
that task and attempt, expiring after the timeout plus the configured leeway. The token
reads and writes only the allowlisted sessions and blobs (and what the task itself
wrote); a requeued task's next claim makes the old attempt's token stop working.
"""

from __future__ import annotations

import hashlib
import json
import uuid

from sqlmodel.ext.asyncio.session import AsyncSession

from agent_accounts.core.auth import (
    AccountCaller,
    Caller,
    TaskCaller,
    WorkerCaller,
)
from agent_accounts.core.listing import ListQuery
from agent_accounts.core.tokens import SignedToken, TokenIssuer
from agent_accounts.models import AgentSession, Blob, Task, Worker
from agent_accounts.settings import Settings
from agent_accounts.task.repository import TaskRepository
from agent_accounts.task.schemas import (
    SessionCreateRequest,
    TaskCreateRequest,
    TaskStatus,
    TaskUpdateRequest,
)
from shared.db import Clock
from shared.errors import Conflict, Forbidden, NotFound, PayloadTooLarge, Unprocessable

# A reported result is kept in the task row; larger ones belong in a blob.
MAX_RESULT_BYTES = 1024 * 1024
# Where each reported status may come from.
TRANSITIONS: dict[TaskStatus, frozenset[TaskStatus]] = {
    TaskStatus.RUNNING: frozenset({TaskStatus.CLAIMED}),
    TaskStatus.COMPLETED: frozenset({TaskStatus.RUNNING}),
    TaskStatus.TIMED_OUT: frozenset({TaskStatus.RUNNING}),
    TaskStatus.FAILED: frozenset({TaskStatus.CLAIMED, TaskStatus.RUNNING}),
    TaskStatus.CANCELED: frozenset({TaskStatus.CLAIMED, TaskStatus.RUNNING}),
}


class NotAccessible(Forbidden):
    def __init__(self, what: str, object_id: object) -> None:
        super().__init__(f"{what} {object_id} is not accessible to this caller")


def _not_found(what: str, object_id: object) -> NotFound:
    return NotFound(f"{what} {object_id} was not found")


class TaskService:
    def __init__(self, session: AsyncSession, settings: Settings, clock: Clock) -> None:
        self.session = session
        self.settings = settings
        self.clock = clock
        self.repository = TaskRepository(session)

    async def _exists(self, model: type[AgentSession] | type[Blob], ids: list[uuid.UUID]) -> None:
        if not ids:
            return
        found = await self.repository.existing(model, ids)
        missing = [str(i) for i in ids if i not in found]
        if missing:
            raise Unprocessable(f"{model.__name__} {missing[0]} was not found")

    async def create(self, request: TaskCreateRequest, caller: AccountCaller) -> Task:
        if request.timeout_seconds > self.settings.max_task_timeout.total_seconds():
            raise Unprocessable("timeout_seconds exceeds the server's maximum task timeout.")
        await self._exists(AgentSession, request.session_ids)
        await self._exists(Blob, request.blob_ids)
        now = self.clock()
        task = Task(
            owner_id=caller.account_id,
            kind=request.kind,
            timeout_seconds=request.timeout_seconds,
            session_ids=sorted({str(i) for i in request.session_ids}),
            blob_ids=sorted({str(i) for i in request.blob_ids}),
            run=request.run.model_dump(mode="json") if request.run is not None else None,
            created=now,
            updated=now,
        )
        self.session.add(task)
        await self.session.flush()
        return task

    async def list_tasks(self, query: ListQuery) -> tuple[list[Task], str | None]:
        """Every task, to every account (kitaru's trusted-team model, as ``get``)."""
        return await self.repository.list_tasks(query)

    async def get(self, task_id: uuid.UUID, caller: Caller) -> Task:
        task = await self.session.get(Task, task_id)
        if task is None:
            raise _not_found("Task", task_id)
        if isinstance(caller, TaskCaller) and caller.task_id != task.id:
            raise NotAccessible("Task", task_id)
        if isinstance(caller, WorkerCaller) and task.worker_id != caller.worker_id:
            raise NotAccessible("Task", task_id)
        return task

    async def claim(
        self, caller: WorkerCaller, max_tasks: int, issuer: TokenIssuer
    ) -> list[tuple[Task, SignedToken]]:
        """Claim pending tasks of the kinds the worker serves (rows locked, skipping those
        another worker is claiming).

        An agent task carries a shell command: only a worker of the task's own account
        claims it, so one account cannot run commands on another's machines. Other kinds
        are shared by every worker, as the reference's trusted-team model has it."""
        worker = await self.session.get(Worker, caller.worker_id)
        if worker is None:
            raise _not_found("Worker", caller.worker_id)
        kinds = sorted({str(c.get("kind")) for c in worker.scope.get("claims", [])})
        now = self.clock()
        claimed = []
        for task in await self.repository.claimable(kinds, worker.owner_id, max_tasks):
            task.attempt += 1
            task.status = TaskStatus.CLAIMED
            task.worker_id = worker.id
            task.claimed_at = now
            task.updated = now
            self.session.add(task)
            claimed.append(task)
        await self.session.flush()
        return [(task, issuer.task(task, worker.id)) for task in claimed]

    async def requeue(self, task_id: uuid.UUID, caller: AccountCaller) -> Task:
        """Back to pending; the next claim is a new attempt, which fences off this one's
        token. Only a claimed or running task goes back."""
        task = await self.get(task_id, caller)
        if task.status not in (TaskStatus.CLAIMED, TaskStatus.RUNNING):
            raise Conflict(f"A {task.status} task cannot be requeued.")
        task.status = TaskStatus.PENDING
        task.worker_id = None
        task.claimed_at = None
        task.started_at = None
        task.updated = self.clock()
        self.session.add(task)
        await self.session.flush()
        return task

    async def update(
        self, task_id: uuid.UUID, request: TaskUpdateRequest, caller: TaskCaller
    ) -> Task:
        """The attempt's own transition (running, then how it ended), with its error and
        result; the task token names the attempt, so a requeued attempt cannot write."""
        if caller.task_id != task_id:
            raise NotAccessible("Task", task_id)
        task = await self.session.get(Task, task_id, with_for_update=True)
        if task is None:
            raise _not_found("Task", task_id)
        allowed = TRANSITIONS.get(request.status, frozenset())
        if task.status not in allowed:
            raise Conflict(f"A {task.status} task cannot become {request.status}.")
        result_size = len(json.dumps(request.result, separators=(",", ":")).encode())
        if result_size > MAX_RESULT_BYTES:
            raise PayloadTooLarge(f"The result is larger than {MAX_RESULT_BYTES} bytes.")
        now = self.clock()
        task.status = request.status
        if request.status == TaskStatus.RUNNING:
            task.started_at = now
        else:
            task.ended_at = now
            task.error = request.error
            task.result = request.result
        task.updated = now
        self.session.add(task)
        await self.session.flush()
        return task

    # Sessions and blobs

    def _check(
        self, caller: Caller, what: str, row: AgentSession | Blob, granted: frozenset[uuid.UUID]
    ) -> None:
        if isinstance(caller, WorkerCaller):
            raise NotAccessible(what, row.id)
        if (
            isinstance(caller, TaskCaller)
            and row.id not in granted
            and (row.produced_by_task_id != caller.task_id)
        ):
            raise NotAccessible(what, row.id)

    async def list_sessions(
        self, query: ListQuery, caller: Caller
    ) -> tuple[list[AgentSession], str | None]:
        """Every session to an account; to a task token, the sessions its task recorded
        (as kitaru scopes a task's listing), not those it was only granted."""
        if isinstance(caller, WorkerCaller):
            raise Forbidden("Worker credentials are not accepted on this route.")
        produced_by = caller.task_id if isinstance(caller, TaskCaller) else None
        return await self.repository.list_sessions(query, produced_by=produced_by)

    async def get_session(self, session_id: uuid.UUID, caller: Caller) -> AgentSession:
        row = await self.session.get(AgentSession, session_id)
        if row is None:
            # A task learns nothing about sessions outside its allowlist.
            if isinstance(caller, TaskCaller | WorkerCaller):
                raise NotAccessible("Session", session_id)
            raise _not_found("Session", session_id)
        self._check(caller, "Session", row, _grants(caller, "sessions"))
        return row

    async def create_session(self, request: SessionCreateRequest, caller: Caller) -> AgentSession:
        if isinstance(caller, WorkerCaller):
            raise Forbidden("Worker credentials are not accepted on this route.")
        now = self.clock()
        row = AgentSession(
            owner_id=caller.account_id,
            name=request.name,
            data=request.data,
            produced_by_task_id=caller.task_id if isinstance(caller, TaskCaller) else None,
            created=now,
            updated=now,
        )
        self.session.add(row)
        await self.session.flush()
        return row

    async def update_session(
        self, session_id: uuid.UUID, data: dict[str, object], caller: Caller
    ) -> AgentSession:
        row = await self.get_session(session_id, caller)
        row.data = data
        row.updated = self.clock()
        self.session.add(row)
        await self.session.flush()
        return row

    async def create_blob(self, content: bytes, caller: Caller) -> Blob:
        if isinstance(caller, WorkerCaller):
            raise Forbidden("Worker credentials are not accepted on this route.")
        if len(content) > self.settings.max_blob_size_bytes:
            raise PayloadTooLarge("The blob is larger than the server accepts.")
        now = self.clock()
        blob = Blob(
            owner_id=caller.account_id,
            content=content,
            sha256=hashlib.sha256(content).hexdigest(),
            size=len(content),
            produced_by_task_id=caller.task_id if isinstance(caller, TaskCaller) else None,
            created=now,
            updated=now,
        )
        self.session.add(blob)
        await self.session.flush()
        return blob

    async def get_blob(self, blob_id: uuid.UUID, caller: Caller) -> Blob:
        blob = await self.session.get(Blob, blob_id)
        if blob is None:
            if isinstance(caller, TaskCaller | WorkerCaller):
                raise NotAccessible("Blob", blob_id)
            raise _not_found("Blob", blob_id)
        self._check(caller, "Blob", blob, _grants(caller, "blobs"))
        return blob


def _grants(caller: Caller, kind: str) -> frozenset[uuid.UUID]:
    if isinstance(caller, TaskCaller):
        return caller.sessions if kind == "sessions" else caller.blobs
    return frozenset()
