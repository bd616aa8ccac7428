"""What the dashboard's run page reads of a run and asks of it beyond the run itself: its
DAG, its steps, status, configuration and logs, a stop and its heartbeat switch.

The server runs nothing, so it asks no orchestrator: a stop marks the run ``stopping``
(its steps see that at their next heartbeat, and the run is ``stopped`` once they have
all finished), and a refresh, which would ask the orchestrator for the run's status,
answers 501 as the reference does for an orchestrator that cannot tell it."""

from __future__ import annotations

import uuid
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.errors import BadRequest, Forbidden, PlatformError
from shared.listing import Listing
from tracking.core.schemas import ScopedListQuery
from tracking.logs.entries import LogEntry
from tracking.logs.service import LogsService
from tracking.pipeline_run.dag import build_dag
from tracking.pipeline_run.repository import RunRepository
from tracking.pipeline_run.schemas import (
    ExecutionStatus,
    PipelineRunUpdate,
    run_config,
    substitutions,
)
from tracking.pipeline_run.service import RunService
from tracking.run_metadata.schemas import MetadataResourceTypes
from tracking.step_run.repository import StepRepository
from tracking.step_run.schemas import StepItem, StepLogsQuery
from tracking.step_run.service import StepService
from tracking.store import ArtifactStores

STOP_REASON = "Manual stop requested."


class RunStatusUnavailable(PlatformError):
    status_code = 501
    wire_name = "NotImplementedError"


class RunPageService:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.runs = RunService(session)
        self.repository = RunRepository(session)

    async def dag(self, run_id: uuid.UUID, metadata_keys: list[str] | None) -> dict[str, Any]:
        """The run's DAG from the run, its snapshot, its steps and their links: four
        queries (five with step metadata), whatever the number of steps."""
        run = await self.runs.get_row(run_id)
        snapshot = (
            await self.runs.snapshots.snapshots.read(run.snapshot_id) if run.snapshot_id else None
        )
        steps = await self.repository.dag_steps(run_id)
        links = await self.repository.dag_links(run_id) if steps else []
        is_dynamic = bool(snapshot is not None and snapshot.is_dynamic)
        configurations = snapshot.step_configurations if snapshot is not None else None
        if is_dynamic or not isinstance(configurations, dict):
            configurations = {}
        step_metadata: dict[str, dict[str, Any]] = {}
        if metadata_keys and steps:
            keys = set(metadata_keys)
            found = await self.runs.metadata.values(
                MetadataResourceTypes.STEP_RUN, [uuid.UUID(step.id) for step in steps]
            )
            for step_id, values in found.items():
                wanted = {k: v for k, v in values.items() if k in keys}
                if wanted:
                    step_metadata[str(step_id)] = wanted
        return build_dag(
            run.id,
            run.status,
            configurations,
            is_dynamic,
            substitutions(snapshot, run.start_time) if snapshot is not None else {},
            steps,
            links,
            step_metadata,
        )

    async def status(self, run_id: uuid.UUID) -> str:
        run = await self.runs.get_row(run_id)
        return str(run.status)

    async def configuration(self, run_id: uuid.UUID) -> dict[str, Any]:
        """The run's pipeline configuration, substitutions filled in from its start."""
        item = await self.runs.get(run_id)
        return run_config(item.snapshot, item.pipeline, item.run.start_time)

    async def steps(
        self, run_id: uuid.UUID, listing: Listing, query: ScopedListQuery
    ) -> tuple[int, list[StepItem]]:
        """The run's steps; of ``query.project`` (404 when there is none such) and by
        ``query.scope_user`` when given (the run's project and any user otherwise)."""
        await self.runs.get_row(run_id)
        project = await self.runs.project(query.project) if query.project else None
        total, rows = await StepRepository(self.session).page_of_run(
            listing, run_id, project.id if project else None, query.scope_user
        )
        return total, await StepService(self.session).items(rows, hydrate=listing.hydrate)

    async def log_entries(
        self, run_id: uuid.UUID, query: StepLogsQuery, stores: ArtifactStores
    ) -> list[LogEntry]:
        """The entries of the run's own logs (the orchestrator's, the client's) of one
        source or one id."""
        query.check()
        await self.runs.get_row(run_id)
        logs = LogsService(self.session)
        collection = (await logs.of_runs([run_id]))[run_id]
        return await logs.entries(collection, query, f"run {run_id}", stores)

    async def stop(self, run_id: uuid.UUID, user_id: uuid.UUID) -> None:
        """Mark the run ``stopping`` (or ``stopped``, when none of its steps still runs),
        refused as the reference refuses it (403)."""
        run = await self.runs.get_row(run_id)
        snapshot = (
            await self.runs.snapshots.snapshots.read(run.snapshot_id) if run.snapshot_id else None
        )
        if snapshot is None or snapshot.stack_id is None:
            raise BadRequest(
                "The stack that this pipeline run response was executed on is either not "
                "accessible or has been deleted."
            )
        refused = {
            ExecutionStatus.COMPLETED: "Cannot stop a run that is already completed.",
            ExecutionStatus.STOPPED: "Run is already stopped.",
            ExecutionStatus.STOPPING: "Run is already being stopped.",
        }.get(ExecutionStatus(run.status))
        if refused is None and not run.orchestrator_run_id:
            refused = "Cannot stop a pipeline run that has no orchestrator run id yet."
        if refused is not None:
            raise Forbidden(refused)
        update = PipelineRunUpdate(status=ExecutionStatus.STOPPING, status_reason=STOP_REASON)
        await self.runs.update(run_id, update, user_id)

    async def disable_heartbeat(self, run_id: uuid.UUID) -> None:
        """Stop watching the run's steps' heartbeats, as the reference's per-run switch:
        the run answers ``enable_heartbeat: false`` and its steps' heartbeats answer
        ``heartbeat_enabled: false`` from now on (``updated`` is left, as there)."""
        run = await self.runs.get_row(run_id)
        run.enable_heartbeat = False
        self.session.add(run)
        await StepRepository(self.session).stop_watching(run_id)
        await self.session.flush()

    async def refresh(self, run_id: uuid.UUID) -> None:
        await self.runs.get_row(run_id)
        raise RunStatusUnavailable(
            "This server does not reach orchestrators, so it cannot fetch a run's status "
            "from one: the run's status is the one its orchestrator and steps report."
        )
