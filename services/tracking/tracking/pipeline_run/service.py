"""Business rules for runs and steps: a run belongs to an existing snapshot of its project;
a step to an existing run; the artifact versions a step links to exist in that project.

A run the client announces (``initializing``) is taken by the orchestrator that runs it
(``POST /runs`` with its orchestrator run id and a running status), as in the reference;
a static pipeline's run then follows its steps' statuses (:func:`derived_status`)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Collection, Sequence
from typing import Any

from pydantic import ValidationError
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import utcnow
from shared.errors import BadRequest, Conflict, Forbidden, NotFound
from shared.listing import Listing
from tracking.artifact_version.schemas import version_response
from tracking.artifact_version.service import ArtifactVersionService
from tracking.core.errors import NameTaken, ScopedNotFound
from tracking.core.repository import ScopedRepository
from tracking.core.schemas import ScopedListQuery
from tracking.core.service import ScopedService
from tracking.logs.entries import LogEntry
from tracking.logs.schemas import LogsRequest
from tracking.logs.service import LogsService
from tracking.models import PipelineRun, StepRun
from tracking.pipeline.service import Snapshot, SnapshotNotFound, SnapshotService
from tracking.pipeline_run.dag import dag_fields
from tracking.pipeline_run.repository import (
    RUNS,
    STEPS,
    TAG_RESOURCE,
    RunRepository,
    StepRepository,
)
from tracking.pipeline_run.schemas import (
    PLACEHOLDER,
    ExceptionInfo,
    ExecutionStatus,
    PipelineRunRequest,
    PipelineRunUpdate,
    PipelineSnapshotRunRequest,
    RunItem,
    RunListQuery,
    StepItem,
    StepLogsQuery,
    StepRunRequest,
    StepRunUpdate,
    as_links,
    derived_status,
    in_progress,
    substitutions,
)
from tracking.project.repository import ProjectRef
from tracking.run_metadata.repository import RunMetadataRepository
from tracking.run_metadata.schemas import MetadataResourceTypes
from tracking.store import ArtifactStores
from tracking.tag.schemas import TaggableResourceTypes, TagSpec
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
REUSED = frozenset({ExecutionStatus.CACHED, ExecutionStatus.SKIPPED})
"""The statuses of a step that reuses its original's run: it shows the original's metadata."""
VERSION_TAG_RESOURCE = TaggableResourceTypes.ARTIFACT_VERSION.value
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
        self.tags = TagService(session)
        self.metadata = RunMetadataRepository(session)

    async def list_page(self, listing: Listing, query: RunListQuery) -> tuple[int, list[RunItem]]:
        project = await self.project(query.project)
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
        project = await self.project(request.project)
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
            exception_info=_info(request.exception_info),
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
        run = PipelineRun(
            project_id=project.id,
            snapshot_id=snapshot.snapshot.id,
            pipeline_id=pipeline_id,
            index=await self.runs.runs_of(pipeline_id) + 1,
            **fields,
        )
        await self.insert(run, project)
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
            run.exception_info = _info(update.exception_info)
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


def _info(info: ExceptionInfo | None) -> dict[str, Any] | None:
    return info.model_dump(mode="json") if info is not None else None


class StepService:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.steps = StepRepository(session)
        self.pages = ScopedRepository(session, StepRun)
        self.runs = RunService(session)
        self.versions = ArtifactVersionService(session)
        self.logs = LogsService(session)

    async def list_page(
        self, listing: Listing, query: ScopedListQuery
    ) -> tuple[int, list[StepItem]]:
        project = await self.runs.project(query.project)
        total, rows = await self.pages.page(STEPS, listing, project.id, query.scope_user)
        return total, await self.items(rows, hydrate=listing.hydrate)

    async def get(self, step_id: uuid.UUID) -> StepItem:
        step = await self.steps.read(step_id)
        if step is None:
            raise StepNotFound(step_id)
        (item,) = await self.items([step])
        return item

    async def items(self, steps: Sequence[Any], *, hydrate: bool = True) -> list[StepItem]:
        """Each step with its run's snapshot, its logs, the artifact versions it read
        and produced and, hydrated, its metadata, read for all the steps at once."""
        runs = {
            item.run.id: item
            for item in await self.runs.items_of({step.pipeline_run_id for step in steps})
        }
        step_ids = [step.id for step in steps]
        logs = await self.logs.of_steps(step_ids)
        metadata = {}
        if hydrate:
            metadata = await self.runs.metadata.values(MetadataResourceTypes.STEP_RUN, step_ids)
        links = await self.steps.links_of([step.id for step in steps])
        version_ids = {link.artifact_version_id for found in links.values() for link in found}
        versions = await self.versions.many(list(version_ids))
        # Nested versions are body-only, as in the reference.
        rendered = {
            item.version.id: {**version_response(item, False, None), "resources": None}
            for item in versions
        }
        items = []
        for step in steps:
            by_direction: dict[str, dict[str, list[dict[str, Any]]]] = {INPUT: {}, OUTPUT: {}}
            for link in links[step.id]:
                nested = dict(rendered[link.artifact_version_id])
                named = by_direction[link.direction].setdefault(link.name, [])
                if link.direction == INPUT:
                    nested.update(
                        input_type="step_output",
                        index=len(named),
                        chunk_index=None,
                        chunk_size=None,
                    )
                named.append(nested)
            run = runs.get(step.pipeline_run_id)
            snapshot = run.snapshot if run is not None else None
            start = run.run.start_time if run is not None else None
            items.append(
                StepItem(
                    step,
                    snapshot,
                    start,
                    by_direction[INPUT],
                    by_direction[OUTPUT],
                    logs[step.id],
                    metadata.get(step.id, {}),
                )
            )
        return items

    async def log_entries(
        self, step_id: uuid.UUID, query: StepLogsQuery, stores: ArtifactStores
    ) -> list[LogEntry]:
        """The entries of the step's logs of one source (the first such logs) or of one
        id, read from the artifact store they were written to."""
        query.check()
        if await self.steps.read(step_id) is None:
            raise StepNotFound(step_id)
        collection = (await self.logs.of_steps([step_id]))[step_id]
        return await self.logs.entries(collection, query, f"step {step_id}", stores)

    async def create(self, request: StepRunRequest, user_id: uuid.UUID) -> StepItem:
        run = await self.runs.repository.read(request.pipeline_run_id)
        if run is None:
            raise RunNotFound(request.pipeline_run_id)
        links = {INPUT: request.links(INPUT), OUTPUT: request.links(OUTPUT)}
        await self._check_versions(links, run.project_id)
        if request.original_step_run_id is not None:
            original = await self.steps.read(request.original_step_run_id)
            if original is None or original.project_id != run.project_id:
                raise StepNotFound(request.original_step_run_id)
        parents = request.parent_step_ids or await self._upstream_steps(run, request.name)
        dynamic = request.dynamic_config.model_dump() if request.dynamic_config else None
        step = StepRun(
            project_id=run.project_id,
            pipeline_run_id=run.id,
            name=request.name,
            status=request.status,
            start_time=request.start_time,
            end_time=request.end_time,
            cache_key=request.cache_key,
            cache_expires_at=request.cache_expires_at,
            code_hash=request.code_hash,
            docstring=request.docstring,
            source_code=request.source_code,
            original_step_run_id=request.original_step_run_id,
            parent_step_ids=[str(parent) for parent in parents],
            exception_info=_info(request.exception_info),
            dynamic_config=dynamic,
            dag_config=dag_fields(dynamic) if dynamic is not None else None,
            user_id=user_id,
        )
        await self.steps.insert(
            step,
            Conflict(
                f"Unable to create step '{request.name}': A step with this name already "
                f"exists in the pipeline run with ID '{run.id}'."
            ),
        )
        await self._link(step.id, links)
        if request.status in REUSED:
            if request.original_step_run_id is not None:
                await self.runs.metadata.copy(
                    MetadataResourceTypes.STEP_RUN, request.original_step_run_id, step.id, user_id
                )
            await self._cascade_tags(run, links[OUTPUT], user_id)
        if isinstance(request.logs, LogsRequest):
            await self.logs.create(request.logs, user_id, step_id=step.id)
        elif request.logs is not None:
            await self.logs.attach([request.logs], step_id=step.id)
        await self.runs.follow_steps(run.id)
        return await self.get(step.id)

    async def _cascade_tags(
        self, run: Any, outputs: dict[str, list[uuid.UUID]], user_id: uuid.UUID
    ) -> None:
        """The pipeline configuration's cascading tags go on a reused step's outputs, as
        the reference puts them (the client tags the outputs of the steps it runs)."""
        snapshot = (
            await self.runs.snapshots.snapshots.read(run.snapshot_id) if run.snapshot_id else None
        )
        configured = ((snapshot.pipeline_configuration or {}) if snapshot else {}).get("tags")
        cascading = []
        for tag in configured if isinstance(configured, list) else []:
            if isinstance(tag, dict) and tag.get("cascade"):
                try:
                    cascading.append(TagSpec.model_validate(tag))
                except ValidationError:
                    continue  # not a tag the client could have sent
        if not cascading:
            return
        for version_id in dict.fromkeys(v for ids in outputs.values() for v in ids):
            await self.runs.tags.attach(VERSION_TAG_RESOURCE, version_id, cascading, user_id)

    async def _upstream_steps(self, run: Any, name: str) -> list[uuid.UUID]:
        """The run's steps that the snapshot's spec puts upstream of step ``name`` (the
        reference's parents of a step the client names none for)."""
        if run.snapshot_id is None:
            return []
        snapshot = await self.runs.snapshots.snapshots.read(run.snapshot_id)
        configured = (snapshot.step_configurations or {}).get(name) if snapshot else None
        upstream = ((configured or {}).get("spec") or {}).get("upstream_steps") or []
        return await self.steps.ids_by_name(run.id, [str(u) for u in upstream])

    async def update(
        self, step_id: uuid.UUID, update: StepRunUpdate, user_id: uuid.UUID
    ) -> StepItem:
        """New outputs, a new status (a finished one ends the step unless an end is
        given), an exception, the cache's expiry, more logs; then the run follows."""
        step = await self.session.get(StepRun, step_id)
        if step is None:
            raise StepNotFound(step_id)
        outputs = {OUTPUT: as_links(update.outputs)}
        await self._check_versions(outputs, step.project_id)
        step.updated = utcnow()
        if update.status is not None:
            step.status = update.status
            if not in_progress(update.status) and update.end_time is None:
                step.end_time = step.end_time or step.updated
        if update.end_time is not None:
            step.end_time = update.end_time
        if update.exception_info is not None:
            step.exception_info = _info(update.exception_info)
        if update.cache_expires_at is not None:
            step.cache_expires_at = update.cache_expires_at
        await self.session.flush()
        await self._link(step_id, outputs, known=await self.steps.links(step_id))
        for logs in update.add_logs or []:
            await self.logs.create(logs, user_id, step_id=step_id)
        await self.runs.follow_steps(step.pipeline_run_id)
        return await self.get(step_id)

    async def _check_versions(
        self, links: dict[str, dict[str, list[uuid.UUID]]], project_id: uuid.UUID
    ) -> None:
        wanted = [v for by_name in links.values() for ids in by_name.values() for v in ids]
        found = await self.steps.versions_in(wanted, project_id)
        missing = [v for v in wanted if v not in found]
        if missing:
            raise NotFound(
                f"Unable to get artifact version with ID '{missing[0]}': No artifact version "
                f"with this ID found in the run's project"
            )

    async def _link(
        self,
        step_id: uuid.UUID,
        links: dict[str, dict[str, list[uuid.UUID]]],
        known: Sequence[Any] = (),
    ) -> None:
        """Link the versions not linked yet (``known``: the step's links)."""
        have = {(k.direction, k.name, k.artifact_version_id) for k in known}
        await self.steps.link(
            [
                {
                    "step_id": step_id,
                    "direction": direction,
                    "name": name,
                    "artifact_version_id": version_id,
                }
                for direction, by_name in links.items()
                for name, ids in by_name.items()
                for version_id in dict.fromkeys(ids)
                if (direction, name, version_id) not in have
            ]
        )
