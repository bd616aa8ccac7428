"""Whether a workload token's object still accepts it: the rule, kept here only.

Tracking owns the pipeline runs, schedules and deployments that workload tokens are bound
to, so it alone decides (see :mod:`shared.auth.workload`): its own requests read the
database through :class:`LocalScopeSource`, other services ask the internal route.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.auth import ScopeKind, ScopeState, WorkloadScope
from shared.db import SessionMaker, session_scope, utcnow
from tracking.deployment.repository import DeploymentRepository
from tracking.pipeline_run.repository import RunRepository
from tracking.pipeline_run.schemas import in_progress
from tracking.schedule.repository import ScheduleRepository


def _aware(value: dt.datetime) -> dt.datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


class WorkloadScopeService:
    def __init__(self, session: AsyncSession, leeway: dt.timedelta) -> None:
        self.session = session
        self.leeway = leeway

    async def state(self, scope: WorkloadScope) -> ScopeState | None:
        """The object's state; ``None`` when it does not exist."""
        match scope.kind:
            case ScopeKind.SCHEDULE:
                schedule: Any = await ScheduleRepository(self.session).read(scope.id)
                if schedule is None:
                    return None
                active = bool(schedule.active)
                return ScopeState(kind=scope.kind, id=scope.id, active=active, usable=active)
            case ScopeKind.PIPELINE_RUN:
                return await self._run(scope.id)
            case ScopeKind.DEPLOYMENT:
                deployment = await DeploymentRepository(self.session).read(scope.id)
                if deployment is None:
                    return None
                return ScopeState(kind=scope.kind, id=scope.id, active=True, usable=True)

    async def _run(self, run_id: uuid.UUID) -> ScopeState | None:
        run: Any = await RunRepository(self.session).read(run_id)
        if run is None:
            return None
        running = in_progress(run.status)
        ended: dt.datetime | None = run.end_time
        if running or self.leeway < dt.timedelta(0):
            usable = True
        else:
            # A finished run without an end time has no leeway to give (as the reference).
            usable = ended is not None and utcnow() <= _aware(ended) + self.leeway
        # Runs here have no parent runs: each is its own root.
        return ScopeState(
            kind=ScopeKind.PIPELINE_RUN,
            id=run_id,
            active=running,
            usable=usable,
            root_run_id=run_id,
        )


class LocalScopeSource:
    """Tracking's own :class:`~shared.auth.ScopeSource`: one short read transaction."""

    def __init__(self, sessionmaker: SessionMaker, leeway: dt.timedelta) -> None:
        self._sessionmaker = sessionmaker
        self._leeway = leeway

    async def state(self, scope: WorkloadScope) -> ScopeState | None:
        async with session_scope(self._sessionmaker) as session:
            return await WorkloadScopeService(session, self._leeway).state(scope)
