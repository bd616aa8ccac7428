"""Business rules for hook invocations: recorded by the client as a run's or a step's
hooks run; each names its run (and step), the artifact versions it produced and its logs."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import flush_unique
from shared.errors import Conflict
from shared.listing import Listing
from tracking.artifact_version.schemas import version_response
from tracking.artifact_version.service import ArtifactVersionNotFound, ArtifactVersionService
from tracking.core.errors import ScopedNotFound
from tracking.hook_invocation.repository import HOOK_INVOCATIONS, HookInvocationRepository
from tracking.hook_invocation.schemas import (
    HookInvocationItem,
    HookInvocationListQuery,
    HookInvocationRequest,
)
from tracking.logs.repository import LogsRepository
from tracking.logs.schemas import nested_logs
from tracking.models import HookInvocation, PipelineRun, StepRun
from tracking.pipeline_run.service import RunNotFound
from tracking.project.scope import resolve_project_ref
from tracking.step_run.service import StepNotFound


class HookInvocationNotFound(ScopedNotFound):
    resource = "hook invocation"


class HookInvocationExists(Conflict):
    def __init__(self, invocation_id: uuid.UUID) -> None:
        super().__init__(f"A hook invocation with ID '{invocation_id}' already exists.")


class HookInvocationService:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.repository = HookInvocationRepository(session)
        self.versions = ArtifactVersionService(session)

    async def list_page(
        self, listing: Listing, query: HookInvocationListQuery
    ) -> tuple[int, list[HookInvocationItem]]:
        project = await resolve_project_ref(self.session, query.project)
        total, rows = await self.repository.page(
            HOOK_INVOCATIONS, listing, project.id, query.scope_user
        )
        return total, await self._items(rows)

    async def get(self, invocation_id: uuid.UUID) -> HookInvocationItem:
        row = await self.repository.read(invocation_id)
        if row is None:
            raise HookInvocationNotFound(invocation_id)
        (item,) = await self._items([row])
        return item

    async def create(
        self, request: HookInvocationRequest, user_id: uuid.UUID
    ) -> HookInvocationItem:
        """The run, the step and every output must exist (404)."""
        project = await resolve_project_ref(self.session, request.project)
        if await self.session.get(PipelineRun, request.pipeline_run_id) is None:
            raise RunNotFound(request.pipeline_run_id)
        step_id = request.step_run_id
        if step_id is not None and await self.session.get(StepRun, step_id) is None:
            raise StepNotFound(step_id)
        wanted = {v for versions in request.outputs.values() for v in versions}
        found = {item.version.id for item in await self.versions.many(list(wanted))}
        if missing := sorted(wanted - found):
            raise ArtifactVersionNotFound(missing[0])
        invocation = HookInvocation(
            id=request.id,
            project_id=project.id,
            pipeline_run_id=request.pipeline_run_id,
            step_run_id=request.step_run_id,
            hook_type=request.hook_type,
            name=request.name,
            status=request.status,
            start_time=request.start_time,
            end_time=request.end_time,
            source=request.source,
            exception_info=(
                request.exception_info.model_dump(mode="json") if request.exception_info else None
            ),
            user_id=user_id,
        )
        self.session.add(invocation)
        await flush_unique(self.session, HookInvocationExists(request.id))
        await self.repository.add_outputs(invocation.id, request.outputs)
        if request.logs_id is not None:
            await self.repository.take_logs(invocation.id, request.logs_id)
        return await self.get(invocation.id)

    async def delete(self, invocation_id: uuid.UUID) -> None:
        invocation = await self.repository.get(invocation_id)
        if invocation is None:
            raise HookInvocationNotFound(invocation_id)
        await self.repository.delete(invocation)

    async def _items(self, rows: Sequence[Any]) -> list[HookInvocationItem]:
        """Each invocation's outputs (body-only versions) and logs, read for the page."""
        ids = [row.id for row in rows]
        outputs = await self.repository.outputs_of(ids)
        logs = await LogsRepository(self.session).of("hook_invocation_id", ids)
        version_ids = {o.artifact_version_id for found in outputs.values() for o in found}
        rendered = {
            item.version.id: {**version_response(item, False, None), "resources": None}
            for item in await self.versions.many(list(version_ids))
        }
        items = []
        for row in rows:
            named: dict[str, list[dict[str, Any]]] = {}
            for output in outputs[row.id]:
                named.setdefault(output.name, []).append(rendered[output.artifact_version_id])
            items.append(HookInvocationItem(row, named, [nested_logs(log) for log in logs[row.id]]))
        return items
