"""What the dashboard's step page and a running step ask of a step beyond the step
itself: its status, its configuration, and the step's heartbeat (which answers the run's
status, so a step of a run being stopped learns it)."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import utcnow
from shared.errors import Forbidden
from shared.types import naive_utc
from tracking.models import PipelineRun, StepRun
from tracking.pipeline_run.schemas import (
    in_progress,
    step_config,
    step_spec,
)
from tracking.pipeline_run.service import StepNotFound, StepService
from tracking.step_run.schemas import StepHeartbeatResponse


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
        item = await self.steps.get(step_id)
        spec = step_spec(item.step, item.snapshot)
        return StepHeartbeatResponse(
            id=step.id,
            status=step.status,
            latest_heartbeat=naive_utc(step.latest_heartbeat).replace(tzinfo=dt.UTC),
            pipeline_run_status=run.status if run is not None else None,
            heartbeat_enabled=bool(spec.get("enable_heartbeat")),
        )
