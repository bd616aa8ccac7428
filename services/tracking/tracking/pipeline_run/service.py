"""Business rules for runs and steps: a run belongs to an existing snapshot of its project;
a step to an existing run; the artifact versions a step links to exist in that project."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import utcnow
from shared.errors import BadRequest, Conflict, NotFound
from shared.listing import Listing
from tracking.artifact_version.schemas import version_response
from tracking.artifact_version.service import ArtifactVersionService
from tracking.core.errors import NameTaken, ScopedNotFound
from tracking.core.schemas import ScopedListQuery
from tracking.core.service import ScopedService
from tracking.models import PipelineRun, StepRun
from tracking.pipeline.service import Snapshot, SnapshotNotFound, SnapshotService
from tracking.pipeline_run.repository import RUNS, RunRepository, StepRepository
from tracking.pipeline_run.schemas import (
    ExecutionStatus,
    PipelineRunRequest,
    PipelineRunUpdate,
    PipelineSnapshotRunRequest,
    RunItem,
    StepItem,
    StepRunRequest,
    in_progress,
)
from tracking.project.repository import ProjectRef

INPUT = "input"
MAX_RUN_NAME = 255
OUTPUT = "output"


class RunNotFound(ScopedNotFound):
    resource = "pipeline run"


class RunAlreadyExists(NameTaken):
    resource = "pipeline run"


class StepNotFound(NotFound):
    def __init__(self, step_id: object) -> None:
        super().__init__(
            f"Unable to get step run with ID '{step_id}': No step run with this ID found"
        )


class RunService(ScopedService[PipelineRun]):
    not_found = RunNotFound
    name_taken = RunAlreadyExists

    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, RunRepository(session))
        self.runs = RunRepository(session)
        self.snapshots = SnapshotService(session)

    async def list_page(
        self, listing: Listing, query: ScopedListQuery
    ) -> tuple[int, list[RunItem]]:
        total, rows = await self.list_rows(RUNS, listing, query)
        return total, await self._items(rows)

    async def get(self, run_id: uuid.UUID) -> RunItem:
        (item,) = await self._items([await self.read_row(run_id)])
        return item

    async def _items(self, runs: Sequence[Any]) -> list[RunItem]:
        """Each run with its snapshot and the snapshot's pipeline, read for all the runs at
        once (a run whose snapshot is gone shows none)."""
        wanted = {run.snapshot_id for run in runs if run.snapshot_id is not None}
        snapshots = await self.runs.snapshots(wanted)
        items = []
        for run in runs:
            snapshot, pipeline = snapshots.get(run.snapshot_id, (None, None))
            items.append(RunItem(run, snapshot, pipeline))
        return items

    async def get_or_create(
        self, request: PipelineRunRequest, user_id: uuid.UUID
    ) -> tuple[RunItem, bool]:
        """The reference's ``POST /runs``: the run of that name in the project if there is
        one (``False``), else a new one (``True``)."""
        project = await self.project(request.project)
        existing = await self.runs.by_name(project.id, request.name)
        if existing is not None:
            return await self.get(existing), False
        try:
            snapshot = await self.snapshots.get(request.snapshot)
        except SnapshotNotFound:
            snapshot = None
        if snapshot is None or snapshot.snapshot.project_id != project.id:
            raise NotFound(
                f"The pipeline snapshot with ID {request.snapshot} referenced by the pipeline "
                f"run being created was not found in the '{project.id}' project"
            )
        run_id = await self._create(
            project,
            snapshot,
            name=request.name,
            status=request.status,
            status_reason=request.status_reason,
            orchestrator_run_id=request.orchestrator_run_id,
            start_time=request.start_time or utcnow(),
            end_time=request.end_time,
            user_id=user_id,
        )
        return await self.get(run_id), True

    async def run_snapshot(
        self,
        snapshot_id: uuid.UUID,
        request: PipelineSnapshotRunRequest,
        user_id: uuid.UUID | None,
    ) -> RunItem:
        """A new run of the snapshot, in the reference's initial status (``initializing``)
        and named by the snapshot's run name template; for a trigger execution that asked
        before, the run it got then."""
        trigger = request.trigger_execution
        if trigger is not None:
            earlier = await self.of_trigger_execution(snapshot_id, trigger.id)
            if earlier is not None:
                return earlier
        snapshot = await self.snapshots.get(snapshot_id)
        project = await self.project(snapshot.snapshot.project_id)
        start = utcnow()
        run_id = await self._create(
            project,
            snapshot,
            name=run_name(snapshot.snapshot, start),
            status=ExecutionStatus.INITIALIZING,
            start_time=start,
            user_id=user_id,
            trigger_execution_id=trigger.id if trigger is not None else None,
            trigger_execution_info=trigger.info() if trigger is not None else None,
        )
        return await self.get(run_id)

    async def of_trigger_execution(
        self, snapshot_id: uuid.UUID, execution_id: uuid.UUID
    ) -> RunItem | None:
        """The run a trigger execution got (409 when it was of another snapshot)."""
        found = await self.runs.by_trigger_execution(execution_id)
        if found is None:
            return None
        run = await self.get(found)
        if run.run.snapshot_id != snapshot_id:
            raise Conflict(
                f"The trigger execution with ID '{execution_id}' already ran the pipeline "
                f"snapshot with ID '{run.run.snapshot_id}'."
            )
        return run

    async def _create(self, project: ProjectRef, snapshot: Snapshot, **fields: Any) -> uuid.UUID:
        """Insert a run of ``snapshot``, numbered after its pipeline's runs (409 when the
        name, or the trigger execution, already has one)."""
        pipeline_id = snapshot.snapshot.pipeline_id
        run = PipelineRun(
            project_id=project.id,
            snapshot_id=snapshot.snapshot.id,
            pipeline_id=pipeline_id,
            index=await self.runs.runs_of(pipeline_id) + 1,
            **fields,
        )
        await self.insert(run, project)
        return run.id

    async def update(self, run_id: uuid.UUID, update: PipelineRunUpdate) -> RunItem:
        """A run that reaches a finished status ends now (``end_time``), which starts the
        leeway of the workload tokens scoped to it; one that leaves it (resumed) has not
        ended."""
        run = await self.get_row(run_id)
        run.updated = utcnow()
        if update.status is not None:
            if not in_progress(update.status):
                if in_progress(run.status) or run.end_time is None:
                    run.end_time = run.updated
            else:
                run.end_time = None
            run.status = update.status
        if update.status_reason is not None:
            run.status_reason = update.status_reason
        if update.orchestrator_run_id is not None:
            run.orchestrator_run_id = update.orchestrator_run_id
        await self.session.flush()
        return await self.get(run_id)

    async def delete(self, run_id: uuid.UUID) -> None:
        """The run with its steps and their links to artifact versions (the versions stay)."""
        await self.delete_row(run_id)


def run_name(snapshot: Any, start: dt.datetime) -> str:
    """The snapshot's run name template filled in as the reference does: the pipeline
    configuration's ``substitutions``, and ``{date}`` and ``{time}`` of ``start`` unless
    those name them (400 when the template cannot be filled)."""
    template: str = snapshot.run_name_template
    configured = (snapshot.pipeline_configuration or {}).get("substitutions")
    values = dict(configured) if isinstance(configured, dict) else {}
    values.setdefault("date", start.strftime("%Y_%m_%d"))
    values.setdefault("time", start.strftime("%H_%M_%S_%f"))
    try:
        name = template.format_map(values)
    except (KeyError, IndexError, ValueError, AttributeError) as exc:
        raise BadRequest(
            f"The run name template '{template}' of the pipeline snapshot with ID "
            f"'{snapshot.id}' cannot be filled in: {exc!r}"
        ) from None
    if not 0 < len(name) <= MAX_RUN_NAME:
        raise BadRequest(
            f"The run name template '{template}' of the pipeline snapshot with ID "
            f"'{snapshot.id}' gives a run name of {len(name)} characters (1 to "
            f"{MAX_RUN_NAME} allowed)."
        )
    return name


class StepService:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.steps = StepRepository(session)
        self.runs = RunService(session)
        self.versions = ArtifactVersionService(session)

    async def get(self, step_id: uuid.UUID) -> StepItem:
        step = await self.steps.read(step_id)
        if step is None:
            raise StepNotFound(step_id)
        run = await self.runs.read_row(step.pipeline_run_id)
        links = await self.steps.links(step_id)
        versions = await self.versions.many([link.artifact_version_id for link in links])
        items = {item.version.id: item for item in versions}
        rendered: dict[str, dict[str, list[dict[str, Any]]]] = {INPUT: {}, OUTPUT: {}}
        for link in links:
            nested = version_response(items[link.artifact_version_id], False, None)
            if link.direction == INPUT:
                nested["input_type"] = "step_output"
            rendered[link.direction].setdefault(link.name, []).append(nested)
        snapshot_id = getattr(run, "snapshot_id", None)
        return StepItem(step, snapshot_id, rendered[INPUT], rendered[OUTPUT])

    async def create(self, request: StepRunRequest, user_id: uuid.UUID) -> StepItem:
        run = await self.runs.repository.read(request.pipeline_run_id)
        if run is None:
            raise RunNotFound(request.pipeline_run_id)
        links = {INPUT: request.links(INPUT), OUTPUT: request.links(OUTPUT)}
        wanted = [v for by_name in links.values() for ids in by_name.values() for v in ids]
        found = await self.steps.versions_in(wanted, run.project_id)
        missing = [v for v in wanted if v not in found]
        if missing:
            raise NotFound(
                f"Unable to get artifact version with ID '{missing[0]}': No artifact version "
                f"with this ID found in the run's project"
            )
        step = StepRun(
            project_id=run.project_id,
            pipeline_run_id=run.id,
            name=request.name,
            status=request.status,
            start_time=request.start_time,
            end_time=request.end_time,
            user_id=user_id,
        )
        await self.steps.insert(
            step,
            Conflict(
                f"Unable to create step '{request.name}': A step with this name already "
                f"exists in the pipeline run with ID '{run.id}'."
            ),
        )
        await self.steps.link(
            [
                {
                    "step_id": step.id,
                    "direction": direction,
                    "name": name,
                    "artifact_version_id": version_id,
                }
                for direction, by_name in links.items()
                for name, ids in by_name.items()
                for version_id in dict.fromkeys(ids)
            ]
        )
        return await self.get(step.id)
