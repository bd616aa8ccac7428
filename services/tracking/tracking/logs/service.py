"""Business rules for logs: they belong to a project; the run, step and store components
they name exist (in that project for runs and steps); a log belongs to one run or one
step at most. What they point at is the client's to read: the server keeps the
reference only."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import utcnow
from shared.errors import NotFound
from tracking.logs.entries import LogEntry, read_entries
from tracking.logs.repository import LogsRepository
from tracking.logs.schemas import LogsRequest, LogsUpdate
from tracking.models import HookInvocation, PipelineRun, StackComponent, StepRun
from tracking.project.scope import resolve_project_ref
from tracking.store import ArtifactStores, StoreUnsupported


class LogsNotFound(NotFound):
    def __init__(self, logs_id: object) -> None:
        super().__init__(f"Unable to get logs with ID '{logs_id}': No logs with this ID found")


_OWNERS: dict[str, tuple[Any, str]] = {
    "pipeline_run_id": (PipelineRun, "pipeline run"),
    "step_run_id": (StepRun, "step run"),
    "hook_invocation_id": (HookInvocation, "hook invocation"),
}


class LogsService:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.logs = LogsRepository(session)

    async def get(self, logs_id: uuid.UUID) -> Any:
        row = await self.logs.read(logs_id)
        if row is None:
            raise LogsNotFound(logs_id)
        return row

    async def _owner_project(self, field: str, owner_id: uuid.UUID) -> uuid.UUID:
        model, what = _OWNERS[field]
        found = await self.logs.project_of(model, owner_id)
        if found is None:
            raise NotFound(
                f"Unable to get {what} with ID '{owner_id}': No {what} with this ID found"
            )
        return found

    async def _check_components(self, request: LogsRequest) -> None:
        for component_id in (request.artifact_store_id, request.log_store_id):
            if component_id is not None and (
                await self.session.get(StackComponent, component_id) is None
            ):
                raise NotFound(
                    f"Unable to get stack component with ID '{component_id}': "
                    "No stack component with this ID found"
                )

    async def create(
        self,
        request: LogsRequest,
        user_id: uuid.UUID,
        *,
        run_id: uuid.UUID | None = None,
        step_id: uuid.UUID | None = None,
    ) -> Any:
        """The new logs; ``run_id`` or ``step_id`` (a run's or step's own logs, sent with
        it) take the place of what the request names."""
        owners = {
            "pipeline_run_id": run_id or (None if step_id else request.pipeline_run_id),
            "step_run_id": step_id or (None if run_id else request.step_run_id),
            "hook_invocation_id": request.hook_invocation_id,
        }
        project_id = request.project
        for field, owner_id in owners.items():
            if owner_id is not None:
                owner_project = await self._owner_project(field, owner_id)
                if project_id is not None and owner_project != project_id:
                    _, what = _OWNERS[field]
                    raise NotFound(
                        f"The {what} with ID '{owner_id}' is not in the project with ID "
                        f"'{project_id}'."
                    )
                project_id = owner_project
        project = await resolve_project_ref(self.session, project_id)
        await self._check_components(request)
        now = utcnow()
        await self.logs.insert(
            {
                "id": request.id,
                "project_id": project.id,
                "uri": request.uri,
                "source": request.source,
                "artifact_store_id": request.artifact_store_id,
                "log_store_id": request.log_store_id,
                **owners,
                "user_id": user_id,
                "created": now,
                "updated": now,
            }
        )
        return await self.get(request.id)

    async def update(self, logs_id: uuid.UUID, update: LogsUpdate) -> Any:
        """Attach the logs to a run or a step of their project."""
        logs = await self.get(logs_id)
        for field in ("pipeline_run_id", "step_run_id"):
            owner_id = getattr(update, field)
            if owner_id is None:
                continue
            if await self._owner_project(field, owner_id) != logs.project_id:
                _, what = _OWNERS[field]
                raise NotFound(
                    f"The {what} with ID '{owner_id}' is not in the project of the logs "
                    f"with ID '{logs_id}'."
                )
            await self.attach(
                [logs_id],
                run_id=update.pipeline_run_id,
                step_id=update.step_run_id,
            )
        return await self.get(logs_id)

    async def attach(
        self,
        ids: Sequence[uuid.UUID],
        *,
        run_id: uuid.UUID | None = None,
        step_id: uuid.UUID | None = None,
    ) -> None:
        """Make existing logs a run's or a step's (404 for an id that is not logs)."""
        for logs_id in ids:
            await self.get(logs_id)
        await self.logs.attach(ids, run_id=run_id, step_id=step_id)

    async def of_runs(self, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, list[Any]]:
        return await self.logs.of("pipeline_run_id", ids)

    async def of_steps(self, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, list[Any]]:
        return await self.logs.of("step_run_id", ids)

    async def entries(
        self, collection: Sequence[Any], query: Any, owner: str, stores: ArtifactStores
    ) -> list[LogEntry]:
        """The entries of the logs of ``collection`` (a run's or a step's, ``owner``) that
        ``query`` names by ``source`` (the first such logs) or ``logs_id``, read from the
        artifact store they were written to (501 for a log store)."""
        if not collection:
            raise NotFound(f"No logs found for {owner}.")
        if query.source is not None:
            found = [logs for logs in collection if logs.source == query.source]
            missing = f"No logs found for source '{query.source}' in {owner}"
        else:
            found = [logs for logs in collection if logs.id == query.logs_id]
            missing = f"No logs found for ID '{query.logs_id}' in {owner}"
        if not found:
            raise NotFound(missing)
        logs = found[0]
        component = None
        if logs.artifact_store_id is not None and logs.uri:
            component = await self.session.get(StackComponent, logs.artifact_store_id)
        if component is None:
            raise StoreUnsupported(
                f"The logs with ID '{logs.id}' are in a log store, which this server cannot read."
            )
        return await read_entries(await stores.open(component, self.session), logs.uri)
