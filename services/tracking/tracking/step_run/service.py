"""Business rules for steps: a step belongs to an existing run; the artifact versions it
links to exist in that run's project; its run follows its status. And what the
dashboard's step page and a running step ask of a step beyond the step itself
(:class:`StepPageService`): its status, its configuration, and the step's heartbeat
(which answers the run's status, so a step of a run being stopped learns it)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import utcnow
from shared.errors import Conflict, Forbidden, NotFound
from shared.listing import Listing
from shared.types import naive_utc
from tracking.artifact_version.schemas import version_response
from tracking.artifact_version.service import ArtifactVersionService
from tracking.core.repository import ScopedRepository
from tracking.core.schemas import ScopedListQuery
from tracking.logs.entries import LogEntry
from tracking.logs.schemas import LogsRequest
from tracking.logs.service import LogsService
from tracking.model_version.schemas import nested_model_version
from tracking.model_version.service import ModelVersionService
from tracking.model_version_link.repository import RUN_LINK, LinkRepository
from tracking.models import PipelineRun, StepRun
from tracking.pipeline_run.dag import dag_fields
from tracking.pipeline_run.schemas import (
    ExecutionStatus,
    as_datetime,
    exception_info_json,
    in_progress,
    substitutions,
)
from tracking.pipeline_run.service import RunNotFound, RunService
from tracking.run_metadata.schemas import MetadataResourceTypes
from tracking.step_run.repository import STEPS, StepRepository
from tracking.step_run.schemas import (
    StepHeartbeatResponse,
    StepItem,
    StepLogsQuery,
    StepRunRequest,
    StepRunUpdate,
    as_links,
    heartbeat_threshold,
    step_config,
    step_configuration,
)
from tracking.store import ArtifactStores
from tracking.tag.schemas import TaggableResourceTypes, TagSpec

REUSED = frozenset({ExecutionStatus.CACHED, ExecutionStatus.SKIPPED})
"""The statuses of a step that reuses its original's run: it shows the original's metadata."""
VERSION_TAG_RESOURCE = TaggableResourceTypes.ARTIFACT_VERSION.value
INPUT = "input"
OUTPUT = "output"


class StepNotFound(NotFound):
    def __init__(self, step_id: object) -> None:
        super().__init__(
            f"Unable to get step run with ID '{step_id}': No step run with this ID found"
        )


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
        model_versions = await ModelVersionService(self.session).items_of(
            [step.model_version_id for step in steps if step.model_version_id is not None]
        )
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
                    nested_model_version(model_versions.get(step.model_version_id)),
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
        run: Any = await self.runs.repository.read(request.pipeline_run_id)
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
        snapshot = (
            await self.runs.snapshots.snapshots.read(run.snapshot_id) if run.snapshot_id else None
        )
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
            exception_info=exception_info_json(request.exception_info),
            dynamic_config=dynamic,
            dag_config=dag_fields(dynamic) if dynamic is not None else None,
            user_id=user_id,
        )
        step.heartbeat_threshold = heartbeat_threshold(step, snapshot, run.enable_heartbeat)
        step.model_version_id = await self._model_version(run, step, snapshot)
        await self.steps.insert(
            step,
            Conflict(
                f"Unable to create step '{request.name}': A step with this name already "
                f"exists in the pipeline run with ID '{run.id}'."
            ),
        )
        await self._link(step.id, links)
        if step.model_version_id is not None:
            await LinkRepository(self.session, RUN_LINK).insert_new(step.model_version_id, run.id)
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

    async def _model_version(self, run: Any, step: StepRun, snapshot: Any) -> uuid.UUID | None:
        """As the reference at step creation: the version of the step's own configured
        model, the run's numbered one when it names no version."""
        found = step_configuration(step, snapshot)
        # The step's own model only: the reference does not propagate its pipeline's
        # model into a step's configuration (the run has that one).
        configured = (found.get("config") or found.get("step_config_overrides") or {}).get("model")
        if not isinstance(configured, dict):
            return None
        filled = substitutions(snapshot, as_datetime(run.start_time)) if snapshot else {}
        return await ModelVersionService(self.session).for_run(
            configured, filled, run.id, run.project_id, step.user_id
        )

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
            step.exception_info = exception_info_json(update.exception_info)
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


class StepPageService:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.steps = StepService(session)

    async def status(self, step_id: uuid.UUID) -> str:
        step = await self.steps.steps.read(step_id)
        if step is None:
            raise StepNotFound(step_id)
        return str(step.status)

    async def configuration(self, step_id: uuid.UUID) -> dict[str, Any]:
        return step_config(await self.steps.get(step_id))

    async def run_of(self, step_id: uuid.UUID) -> uuid.UUID:
        """The run the step belongs to (whose workload token may beat its heart)."""
        step = await self.steps.steps.read(step_id)
        if step is None:
            raise StepNotFound(step_id)
        return step.pipeline_run_id  # type: ignore[no-any-return]

    async def heartbeat(self, step_id: uuid.UUID) -> StepHeartbeatResponse:
        """Record that the step is alive, now; a finished step has no heart to beat
        (403, as the reference)."""
        step = await self.session.get(StepRun, step_id, with_for_update=True)
        if step is None:
            raise StepNotFound(step_id)
        if not in_progress(step.status):
            raise Forbidden("Can not update heartbeat for finished steps.")
        run = await self.session.get(PipelineRun, step.pipeline_run_id)
        step.latest_heartbeat = utcnow()
        await self.session.flush()
        return StepHeartbeatResponse(
            id=step.id,
            status=step.status,
            latest_heartbeat=naive_utc(step.latest_heartbeat).replace(tzinfo=dt.UTC),
            pipeline_run_status=run.status if run is not None else None,
            heartbeat_enabled=step.heartbeat_threshold is not None,
        )
