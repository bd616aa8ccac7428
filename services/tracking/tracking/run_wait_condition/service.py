"""Business rules for wait conditions, as the reference's: only a dynamic pipeline's run
waits; one pending condition per run; the same create again (same type, question and
schema) answers the existing condition; a result is checked against the condition's JSON
schema; its poller holds a lease. What a resolution or a released lease does to the run:
an abort stops it; a release while pending pauses it ("Waiting for input."); a
``continue`` nobody polls for (no live lease, or a lease abandoned) would resume it from
the server, which needs a workload manager this server does not have, so the run pauses
"Waiting for manual resume." as the reference's does when it cannot resume."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

import jsonschema
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import utcnow
from shared.errors import BadRequest, Conflict, Forbidden
from shared.listing import Listing
from tracking.core.errors import ScopedNotFound
from tracking.core.repository import ScopedRepository
from tracking.core.schemas import ScopedListQuery
from tracking.models import RunWaitCondition
from tracking.pipeline_run.schemas import ExecutionStatus, PipelineRunUpdate, in_progress
from tracking.pipeline_run.service import RunService
from tracking.project.scope import resolve_project_ref
from tracking.run_metadata.repository import RunMetadataRepository
from tracking.run_metadata.schemas import MetadataResourceTypes
from tracking.run_wait_condition.repository import (
    RUN_WAIT_CONDITIONS,
    ConditionItem,
    RunWaitConditionRepository,
)
from tracking.run_wait_condition.schemas import (
    RunWaitConditionLeaseMode,
    RunWaitConditionLeaseUpdate,
    RunWaitConditionRequest,
    RunWaitConditionResolution,
    RunWaitConditionResolveRequest,
    RunWaitConditionStatus,
)

TEXT_FIELD_MAX_LENGTH = 65535
WAIT_CONDITION = MetadataResourceTypes.WAIT_CONDITION
PENDING = RunWaitConditionStatus.PENDING.value


class RunWaitConditionNotFound(ScopedNotFound):
    resource = "run wait condition"


class RunWaitConditionService:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.conditions = RunWaitConditionRepository(session)
        self.runs = RunService(session)
        self.metadata = RunMetadataRepository(session)

    async def list_page(
        self, listing: Listing, query: ScopedListQuery, hydrate: bool
    ) -> tuple[int, list[ConditionItem]]:
        project = await resolve_project_ref(self.session, query.project)
        scope = ScopedRepository(self.session, RunWaitCondition)
        total, rows = await scope.page(RUN_WAIT_CONDITIONS, listing, project.id, query.scope_user)
        return total, await self._items(rows, hydrate)

    async def get(self, condition_id: uuid.UUID, hydrate: bool = True) -> ConditionItem:
        row = await self.conditions.read(condition_id)
        if row is None:
            raise RunWaitConditionNotFound(condition_id)
        (item,) = await self._items([row], hydrate)
        return item

    async def create(self, request: RunWaitConditionRequest, user_id: uuid.UUID) -> ConditionItem:
        run = await self.runs.get(request.run)
        await self.conditions.lock_run(run.run.id)
        if run.snapshot is None or not run.snapshot.is_dynamic:
            raise Forbidden("Wait conditions are only supported for dynamic pipelines.")
        existing = await self.conditions.of_run(run.run.id, request.name)
        if existing is not None:
            same = (
                existing.type == request.type.value
                and existing.question == request.question
                and existing.data_schema == request.data_schema
            )
            if not same:
                raise Conflict(
                    "A run wait condition with this name already exists for the run, but "
                    "with different configuration."
                )
            return await self.get(existing.id)
        if await self.conditions.pending_of(run.run.id):
            raise Forbidden(
                "Only one pending wait condition is allowed per run. Resolve the existing "
                "pending wait condition before creating a new one."
            )
        condition = RunWaitCondition(
            run_id=run.run.id,
            project_id=run.run.project_id,
            user_id=user_id,
            name=request.name,
            type=request.type.value,
            status=PENDING,
            question=request.question,
            data_schema=request.data_schema,
        )
        self.session.add(condition)
        await self.session.flush()
        values = {key: json.dumps(value) for key, value in request.metadata.items()}
        kept = {k: v for k, v in values.items() if len(v) <= TEXT_FIELD_MAX_LENGTH}
        await self.metadata.put([(WAIT_CONDITION, condition.id)], kept, user_id)
        return await self.get(condition.id)

    async def _locked(self, condition_id: uuid.UUID) -> RunWaitCondition:
        condition = await self.conditions.locked(condition_id)
        if condition is None:
            raise RunWaitConditionNotFound(condition_id)
        return condition

    async def resolve(
        self, condition_id: uuid.UUID, request: RunWaitConditionResolveRequest, user_id: uuid.UUID
    ) -> ConditionItem:
        condition = await self._locked(condition_id)
        now = utcnow()
        leased = condition.poller_lease_expires_at is not None and (
            condition.poller_lease_expires_at > now
        )
        if condition.status != PENDING:
            raise Forbidden("Wait condition has already been resolved.")
        result = _checked_result(condition, request.resolution, request.result)
        condition.status = RunWaitConditionStatus.RESOLVED.value
        condition.resolution = request.resolution.value
        condition.result = result
        condition.resolved_at = condition.updated = now
        condition.resolved_by_user_id = user_id
        await self.session.flush()
        if request.resolution is RunWaitConditionResolution.ABORT:
            await self._run_to(
                condition.run_id, ExecutionStatus.STOPPED, "Wait condition was aborted.", user_id
            )
        elif not leased:
            await self._not_resumed(condition.run_id, user_id)
        return await self.get(condition_id)

    async def lease(
        self, condition_id: uuid.UUID, update: RunWaitConditionLeaseUpdate, user_id: uuid.UUID
    ) -> RunWaitConditionStatus:
        condition = await self._locked(condition_id)
        now = utcnow()
        condition.last_polled_at = condition.updated = now
        status = RunWaitConditionStatus(condition.status)
        if update.mode is RunWaitConditionLeaseMode.REFRESH:
            if status is RunWaitConditionStatus.PENDING:
                condition.poller_instance_id = update.poller_instance_id
                condition.poller_lease_expires_at = update.poller_lease_expires_at
            await self.session.flush()
            return status
        condition.poller_instance_id = None
        condition.poller_lease_expires_at = now
        await self.session.flush()
        if status is RunWaitConditionStatus.PENDING:
            await self._run_to(
                condition.run_id, ExecutionStatus.PAUSED, "Waiting for input.", user_id
            )
        abandoned = update.mode is RunWaitConditionLeaseMode.ABANDON
        if abandoned and condition.resolution == RunWaitConditionResolution.CONTINUE.value:
            await self._not_resumed(condition.run_id, user_id)
        return status

    async def _not_resumed(self, run_id: uuid.UUID, user_id: uuid.UUID) -> None:
        """The reference resumes the run from its server; without a workload manager it
        cannot, and leaves the run paused."""
        await self._run_to(run_id, ExecutionStatus.PAUSED, "Waiting for manual resume.", user_id)

    async def _run_to(
        self, run_id: uuid.UUID, status: ExecutionStatus, reason: str, user_id: uuid.UUID
    ) -> None:
        """Move a run still in progress to ``status`` (a finished run stays as it ended)."""
        run = await self.runs.get_row(run_id)
        if not in_progress(run.status):
            return
        update = PipelineRunUpdate(status=status, status_reason=reason)
        await self.runs.update(run_id, update, user_id)

    async def _items(self, rows: Sequence[Any], hydrate: bool) -> list[ConditionItem]:
        runs = await self.runs.runs.rows_by_id({row.run_id for row in rows})
        metadata: dict[uuid.UUID, dict[str, Any]] = {}
        if hydrate:
            metadata = await self.metadata.values(WAIT_CONDITION, [row.id for row in rows])
        return [ConditionItem(row, runs[row.run_id], metadata.get(row.id, {})) for row in rows]


def _checked_result(
    condition: RunWaitCondition, resolution: RunWaitConditionResolution, result: Any
) -> Any:
    """The result kept: none for an abort; for a ``continue``, one that matches the
    condition's schema (none allowed without a schema)."""
    if resolution is not RunWaitConditionResolution.CONTINUE:
        return None
    if not condition.data_schema:
        if result is not None:
            raise Forbidden("Wait conditions without a schema do not accept a result.")
        return None
    try:
        jsonschema.validate(instance=result, schema=condition.data_schema)
    except jsonschema.ValidationError:
        raise BadRequest(f"Value `{result}` does not match expected schema.") from None
    except jsonschema.SchemaError:
        raise BadRequest("The wait condition's data schema is not a valid JSON schema.") from None
    return result
