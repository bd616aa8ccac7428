"""Task and session queries: the pending tasks a worker may claim, and the task and
session lists (kitaru's filter fields that this server's tasks and sessions hold, sorted by
``created``, kitaru's only sort key, or ``updated``)."""

from __future__ import annotations

import uuid

from sqlalchemy import or_
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from agent_accounts.core.listing import CursorSpec, ListQuery, fetch_page
from agent_accounts.models import AgentSession, Blob, Task
from agent_accounts.task.schemas import TaskStatus
from agent_accounts.worker.schemas import TaskKind
from shared.listing import Kind

TASKS = CursorSpec(
    id_column=col(Task.id),
    fields={
        "id": (col(Task.id), Kind.UUID),
        # Each task is its own job (TaskResponse): kitaru's job filter is the task's id.
        "job_id": (col(Task.id), Kind.UUID),
        "kind": (col(Task.kind), Kind.ENUM),
        "status": (col(Task.status), Kind.ENUM),
        "worker_id": (col(Task.worker_id), Kind.UUID),
        "owner_id": (col(Task.owner_id), Kind.UUID),
        "created": (col(Task.created), Kind.DATETIME),
    },
    sorts={
        "created": (col(Task.created), Kind.DATETIME),
        "updated": (col(Task.updated), Kind.DATETIME),
    },
    enums={"kind": TaskKind, "status": TaskStatus},
)

SESSIONS = CursorSpec(
    id_column=col(AgentSession.id),
    fields={
        "id": (col(AgentSession.id), Kind.UUID),
        "task_id": (col(AgentSession.produced_by_task_id), Kind.UUID),
        "name": (col(AgentSession.name), Kind.STRING),
        "owner_id": (col(AgentSession.owner_id), Kind.UUID),
        "created": (col(AgentSession.created), Kind.DATETIME),
    },
    sorts={
        "created": (col(AgentSession.created), Kind.DATETIME),
        "updated": (col(AgentSession.updated), Kind.DATETIME),
    },
)


class TaskRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def existing(
        self, model: type[AgentSession] | type[Blob], ids: list[uuid.UUID]
    ) -> set[uuid.UUID]:
        """Which of ``ids`` are rows of ``model``."""
        return set((await self.session.exec(select(model.id).where(col(model.id).in_(ids)))).all())

    async def claimable(self, kinds: list[str], owner_id: uuid.UUID, limit: int) -> list[Task]:
        """Up to ``limit`` pending tasks of ``kinds``, oldest first, locked (skipping those
        another worker is claiming); of the agent kind, only ``owner_id``'s."""
        query = (
            select(Task)
            .where(
                col(Task.status) == TaskStatus.PENDING,
                col(Task.kind).in_(kinds),
                or_(col(Task.kind) != TaskKind.AGENT, col(Task.owner_id) == owner_id),
            )
            .order_by(col(Task.created), col(Task.id))
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        return list((await self.session.exec(query)).all())

    async def list_tasks(self, query: ListQuery) -> tuple[list[Task], str | None]:
        return await fetch_page(self.session, select(Task), query, TASKS)

    async def list_sessions(
        self, query: ListQuery, *, produced_by: uuid.UUID | None
    ) -> tuple[list[AgentSession], str | None]:
        scope: list[ColumnElement[bool]] = []
        if produced_by is not None:
            scope.append(col(AgentSession.produced_by_task_id) == produced_by)
        return await fetch_page(self.session, select(AgentSession), query, SESSIONS, scope=scope)
