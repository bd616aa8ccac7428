"""Business rules for runs: a run belongs to an existing snapshot of its project (a
run's steps have theirs in :mod:`tracking.step_run.service`).

A run the client announces (``initializing``) is taken by the orchestrator that runs it
(``POST /runs`` with its orchestrator run id and a running status), as in the reference;
a static pipeline's run then follows its steps' statuses (:func:`derived_status`)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Collection, Sequence
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import utcnow
from shared.errors import BadRequest, Conflict, Forbidden, NotFound
from shared.listing import Listing
from tracking.core.errors import NameTaken, ScopedNotFound
from tracking.core.service import ScopedService
from tracking.logs.schemas import LogsRequest
from tracking.logs.service import LogsService
from tracking.model_version.schemas import nested_model_version
from tracking.model_version.service import ModelVersionService
from tracking.model_version_link.repository import RUN_LINK, LinkRepository
from tracking.models import PipelineRun
from tracking.pipeline_run.repository import (
    RUNS,
    TAG_RESOURCE,
    RunRepository,
)
from tracking.pipeline_run.schemas import (
    PLACEHOLDER,
    ExecutionStatus,
    PipelineRunRequest,
    PipelineRunUpdate,
    PipelineSnapshotRunRequest,
    RunItem,
    RunListQuery,
    derived_status,
    exception_info_json,
    in_progress,
    substitutions,
)
from tracking.pipeline_snapshot.schemas import Snapshot
from tracking.pipeline_snapshot.service import SnapshotNotFound, SnapshotService
from tracking.project.repository import ProjectRef
from tracking.run_metadata.repository import RunMetadataRepository
from tracking.run_metadata.schemas import MetadataResourceTypes
from tracking.run_wait_condition.repository import RunWaitConditionRepository
from tracking.run_wait_condition.schemas import nested_wait_condition
from tracking.tag.service import TagService

STEP_ONLY = frozenset(
    {
        ExecutionStatus.CACHED,
        ExecutionStatus.SKIPPED,
        ExecutionStatus.RETRYING,
        ExecutionStatus.RETRIED,
    }
)
"""Statuses a step may have and a run may not (the reference refuses them, 403)."""
RESUMABLE = frozenset({ExecutionStatus.PAUSED, ExecutionStatus.FAILED})
"""The statuses a run may be resumed from."""
STOPPING_OR_STOPPED = frozenset({ExecutionStatus.STOPPING, ExecutionStatus.STOPPED})
MAX_RUN_NAME = 255


class RunNotFound(ScopedNotFound):
    resource = "pipeline run"


class RunAlreadyExists(NameTaken):
    resource = "pipeline run"


class RunService(ScopedService[PipelineRun]):
    not_found = RunNotFound
    name_taken = RunAlreadyExists

    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, RunRepository(session))
        self.runs = RunRepository(session)
        self.snapshots = SnapshotService(session)
        self.tags = TagService(session)
        self.metadata = RunMetadataRepository(session)

    async def list_page(self, listing: Listing, query: RunListQuery) -> tuple[int, list[RunItem]]:
        project = await self.project(query.project_name_or_id or query.project)
        kept = None
        if not listing.conditions and query.scope_user is None:
            kept = await self.runs.count_of(project.id)
        total, rows = await self.runs.page(RUNS, listing, project.id, query.scope_user, kept)
        return total, await self._items(
            rows, hydrate=listing.hydrate, full=query.include_full_metadata
        )

    async def get(self, run_id: uuid.UUID, *, full: bool = False) -> RunItem:
        (item,) = await self._items([await self.read_row(run_id)], full=full)
        return item

    async def items_of(self, run_ids: Collection[uuid.UUID]) -> list[RunItem]:
        """The runs of ``run_ids`` that exist, as :meth:`get` renders them unhydrated."""
        return await self._items(await self.runs.read_many(run_ids), hydrate=False)

    async def _items(
        self, runs: Sequence[Any], *, hydrate: bool = True, full: bool = False
    ) -> list[RunItem]:
        """Each run with its snapshot, the snapshot's pipeline and stack, its logs and
        tags and, hydrated, its metadata (``full``: its steps' and schedule's too), read
        for all the runs at once (a run whose snapshot is gone shows none)."""
        wanted = {run.snapshot_id for run in runs if run.snapshot_id is not None}
        snapshots = await self.runs.snapshots(wanted)
        stack_ids = {s.stack_id for s, _ in snapshots.values() if s.stack_id is not None}
        stacks = await self.runs.stacks(stack_ids)
        ids = [run.id for run in runs]
        logs = await LogsService(self.session).of_runs(ids)
        tags = await self.tags.for_resources(TAG_RESOURCE, ids)
        metadata = await self._metadata(runs, snapshots, full) if hydrate else {}
        model_versions = await ModelVersionService(self.session).items_of(
            [run.model_version_id for run in runs if run.model_version_id is not None]
        )
        waiting = await RunWaitConditionRepository(self.session).pending_of_runs(ids)
        items = []
        for run in runs:
            snapshot, pipeline = snapshots.get(run.snapshot_id, (None, None))
            stack = stacks.get(snapshot.stack_id) if snapshot is not None else None
            items.append(
                RunItem(
                    run,
                    snapshot,
                    pipeline,
                    stack,
                    logs[run.id],
                    tags.get(run.id, ()),
                    metadata.get(run.id, {}),
                    nested_model_version(model_versions.get(run.model_version_id)),
                    _nested(waiting.get(run.id)),
                )
            )
        return items

    async def _metadata(
        self, runs: Sequence[Any], snapshots: dict[uuid.UUID, tuple[Any, Any]], full: bool
    ) -> dict[uuid.UUID, dict[str, Any]]:
        """Each run's metadata; ``full``: then its steps' (``step::key``) and its
        snapshot's schedule's (``schedule:key``), as the reference merges them."""
        ids = [run.id for run in runs]
        found = await self.metadata.values(MetadataResourceTypes.PIPELINE_RUN, ids)
        if not full:
            return found
        of_steps = await self.metadata.of_steps(ids)
        schedule_of = {
            run.id: snapshots[run.snapshot_id][0].schedule_id
            for run in runs
            if run.snapshot_id in snapshots
        }
        schedules = await self.metadata.values(
            MetadataResourceTypes.SCHEDULE, {s for s in schedule_of.values() if s is not None}
        )
        for run_id in ids:
            values = found.setdefault(run_id, {})
            values.update(of_steps.get(run_id, {}))
            schedule = schedules.get(schedule_of.get(run_id))  # type: ignore[arg-type]
            values.update({f"schedule:{k}": v for k, v in (schedule or {}).items()})
        return found

    async def get_or_create(
        self, request: PipelineRunRequest, user_id: uuid.UUID
    ) -> tuple[RunItem, bool]:
        """The reference's ``POST /runs``: the run this orchestrator run already has
        (``False``); else the snapshot's announced run, now taken by the orchestrator
        (``True``); else the run of that name for the same snapshot (``False``); else a
        new one (``True``)."""
        project = await self.project(request.project_ref())
        snapshot = await self._snapshot_of(request.snapshot, project)
        if request.orchestrator_run_id:
            started = await self.runs.by_orchestrator_run(
                snapshot.snapshot.id, request.orchestrator_run_id
            )
            if started is not None:
                return await self.get(started), False
        if request.status not in PLACEHOLDER and request.orchestrator_run_id:
            announced = await self.runs.placeholder(
                snapshot.snapshot.id, request.orchestrator_run_id
            )
            if announced is not None:
                await self._take(announced, request)
                await self.tags.attach(TAG_RESOURCE, announced.id, request.tags or [], user_id)
                return await self.get(announced.id), True
        existing = await self.runs.by_name(project.id, request.name)
        if existing is not None:
            item = await self.get(existing)
            if item.run.snapshot_id != snapshot.snapshot.id:
                raise RunAlreadyExists(request.name, project.name)
            return item, False
        run_id = await self._create(
            project,
            snapshot,
            name=request.name,
            status=request.status,
            status_reason=request.status_reason,
            orchestrator_run_id=request.orchestrator_run_id,
            orchestrator_environment=request.orchestrator_environment,
            exception_info=exception_info_json(request.exception_info),
            start_time=request.start_time or utcnow(),
            end_time=request.end_time,
            user_id=user_id,
        )
        await self._run_logs(request.logs, run_id, user_id)
        await self.tags.attach(TAG_RESOURCE, run_id, request.tags or [], user_id)
        return await self.get(run_id), True

    async def _snapshot_of(self, snapshot_id: uuid.UUID, project: ProjectRef) -> Snapshot:
        try:
            snapshot = await self.snapshots.get(snapshot_id)
        except SnapshotNotFound:
            snapshot = None
        if snapshot is None or snapshot.snapshot.project_id != project.id:
            raise NotFound(
                f"The pipeline snapshot with ID {snapshot_id} referenced by the pipeline "
                f"run being created was not found in the '{project.id}' project"
            )
        return snapshot

    async def _take(self, run: PipelineRun, request: PipelineRunRequest) -> None:
        """The orchestrator's run replaces the announced one (its id, name and start
        stay)."""
        run.orchestrator_run_id = request.orchestrator_run_id
        run.orchestrator_environment = request.orchestrator_environment
        run.status = request.status
        run.updated = utcnow()
        if not in_progress(request.status):
            run.end_time = request.end_time or run.updated
        await self.session.flush()

    async def _run_logs(
        self, logs: uuid.UUID | LogsRequest | None, run_id: uuid.UUID, user_id: uuid.UUID
    ) -> None:
        """The logs a run or a step came with: existing ones (an id) or new ones."""
        service = LogsService(self.session)
        if isinstance(logs, LogsRequest):
            await service.create(logs, user_id, run_id=run_id)
        elif logs is not None:
            await service.attach([logs], run_id=run_id)

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
            trigger_id=trigger.trigger_id if trigger is not None else None,
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
        configuration = snapshot.snapshot.pipeline_configuration or {}
        heartbeat = configuration.get("enable_heartbeat")
        run = PipelineRun(
            project_id=project.id,
            snapshot_id=snapshot.snapshot.id,
            pipeline_id=pipeline_id,
            index=await self.runs.runs_of(pipeline_id) + 1,
            # As the reference: unset means on.
            enable_heartbeat=True if heartbeat is None else bool(heartbeat),
            **fields,
        )
        configured = configuration.get("model")
        if isinstance(configured, dict):
            # As the reference at run creation: the configured model's version (made
            # when new, numbered for this run), linked to the run.
            run.model_version_id = await ModelVersionService(self.session).for_run(
                configured,
                substitutions(snapshot.snapshot, run.start_time),
                run.id,
                project.id,
                run.user_id,
            )
        await self.insert(run, project)
        if run.model_version_id is not None:
            await LinkRepository(self.session, RUN_LINK).insert_new(run.model_version_id, run.id)
        return run.id

    async def update(
        self, run_id: uuid.UUID, update: PipelineRunUpdate, user_id: uuid.UUID
    ) -> RunItem:
        """A run that reaches a finished status ends now (``end_time``), which starts the
        leeway of the workload tokens scoped to it; one that leaves it (resumed) has not
        ended. ``provisioning`` applies only to an announced run (the orchestrator may
        have taken it first); a static pipeline's run follows its steps. As in the
        reference, only a paused or failed run is resumed, and a finished run keeps its
        status (403), but for a failed one resumed."""
        status = update.status
        run = await self.get_row(run_id)
        if status in STEP_ONLY:
            raise Forbidden(f"Execution status `{status.value}` is not valid for pipeline runs.")
        current = ExecutionStatus(run.status)
        if status == ExecutionStatus.RESUMING and current not in RESUMABLE:
            raise Forbidden("Only failed or paused runs can be resumed.")
        run.updated = utcnow()
        if status == ExecutionStatus.PROVISIONING and current != ExecutionStatus.INITIALIZING:
            status = None
        if status is not None:
            new = await self._derived(run, status)
            resumed = current == ExecutionStatus.FAILED and new == ExecutionStatus.RESUMING
            if not in_progress(current) and new != current and not resumed:
                raise Forbidden("Cannot update the status of a finished run.")
            self._set_status(run, new)
        if update.status_reason is not None:
            run.status_reason = update.status_reason
        if update.orchestrator_run_id is not None:
            run.orchestrator_run_id = update.orchestrator_run_id
        if update.exception_info is not None:
            run.exception_info = exception_info_json(update.exception_info)
        await self.session.flush()
        for logs in update.add_logs or []:
            await LogsService(self.session).create(logs, user_id, run_id=run_id)
        await self.tags.attach(TAG_RESOURCE, run_id, update.add_tags or [], user_id)
        await self.tags.detach(TAG_RESOURCE, run_id, update.remove_tags or [])
        return await self.get(run_id)

    async def _derived(self, run: PipelineRun, requested: ExecutionStatus) -> ExecutionStatus:
        """The status a run of a static pipeline gets from its steps' (a snapshot with
        no step configurations, or a dynamic one, keeps what it is told, but for a
        dynamic run stopping or stopped that fails: it is stopped)."""
        snapshot = await self.snapshots.snapshots.read(run.snapshot_id) if run.snapshot_id else None
        steps = len(snapshot.step_configurations or {}) if snapshot is not None else 0
        if snapshot is not None and snapshot.is_dynamic:
            if requested == ExecutionStatus.FAILED and run.status in STOPPING_OR_STOPPED:
                return ExecutionStatus.STOPPED
            return requested
        if snapshot is None or steps == 0:
            return requested
        return derived_status(requested, await self.runs.step_statuses(run.id), steps)

    @staticmethod
    def _set_status(run: PipelineRun, status: ExecutionStatus) -> None:
        if not in_progress(status):
            if in_progress(run.status) or run.end_time is None:
                run.end_time = run.updated
        else:
            run.end_time = None
        run.status = status

    async def follow_steps(self, run_id: uuid.UUID) -> None:
        """After a step of the run changed: the run's status from its steps'. A finished
        run stays as it ended."""
        run = await self.get_row(run_id)
        if not in_progress(run.status):
            return
        status = await self._derived(run, ExecutionStatus(run.status))
        if status != run.status:
            run.updated = utcnow()
            self._set_status(run, status)
            await self.session.flush()

    async def delete(self, run_id: uuid.UUID) -> None:
        """The run with its steps, their links to artifact versions (the versions stay),
        their metadata and the run's tags (the tags stay)."""
        await self.tags.detach_all(TAG_RESOURCE, [run_id])
        await self.metadata.delete_of_runs([run_id])
        await self.delete_row(run_id)


def _nested(condition: Any | None) -> dict[str, Any] | None:
    return nested_wait_condition(condition) if condition is not None else None


def run_name(snapshot: Any, start: dt.datetime) -> str:
    """The snapshot's run name template filled in as the reference does: the pipeline
    configuration's ``substitutions``, and ``{date}`` and ``{time}`` of ``start`` unless
    those name them (400 when the template cannot be filled)."""
    template: str = snapshot.run_name_template
    values = substitutions(snapshot, start)
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
