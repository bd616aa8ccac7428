"""What tracking's data shows of the onboarding checklist: one statement of ``EXISTS``
tests, each stopping at the first row it finds."""

from __future__ import annotations

import uuid
from typing import NamedTuple

from sqlalchemy import Select, exists
from sqlalchemy import select as sa_select
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import core_execute
from tracking.component.flavors import StackComponentType
from tracking.models import (
    Deployment,
    PipelineRun,
    PipelineSnapshot,
    Project,
    StackComponent,
    StackComposition,
)
from tracking.pipeline_run.schemas import FINISHED


class Flavors(NamedTuple):
    """The flavors that keep a component of one type local."""

    component_type: StackComponentType
    local: frozenset[str]


class OnboardingFacts(NamedTuple):
    project: bool
    remote_orchestrator_stack: bool
    remote_artifact_store_stack: bool
    finished_run: bool
    finished_run_remote_orchestrator: bool
    finished_run_remote_artifact_store: bool
    deployment: bool


def _remote_stacks(flavors: Flavors) -> Select[uuid.UUID]:
    """The stacks with a component of the type that is not of a local flavor."""
    return (
        sa_select(col(StackComposition.stack_id))
        .join(StackComponent, col(StackComponent.id) == col(StackComposition.component_id))
        .where(
            col(StackComponent.type) == flavors.component_type.value,
            col(StackComponent.flavor).not_in(flavors.local),
        )
    )


def _finished_runs() -> Select[uuid.UUID]:
    """Finished runs: a finished status and an end time, what the reference waits for
    before it records a run's steps."""
    return sa_select(col(PipelineRun.id)).where(
        col(PipelineRun.status).in_([status.value for status in FINISHED]),
        col(PipelineRun.end_time).is_not(None),
    )


def _finished_run_on(flavors: Flavors) -> ColumnElement[bool]:
    """A finished run whose snapshot's stack has a component of the type that is not
    local (the stack as it is now, as the reference reads it when the run ends).

    The few stacks lead: their snapshots are collected first (a CTE kept ``MATERIALIZED``)
    and runs are looked for among those alone. Left to itself the planner walks the runs
    and looks up each one's snapshot, hoping to meet a match early, which reads every run
    (~0.5 s on 100,000) exactly when none ran on such a stack, the usual state when a
    remote stack has just been made. With ``pipeline_snapshots.stack_id`` and
    ``pipeline_runs.snapshot_id`` indexed (migration 0013), the plan reads only the
    remote stacks' snapshots and their runs."""
    snapshots = (
        sa_select(col(PipelineSnapshot.id))
        .where(col(PipelineSnapshot.stack_id).in_(_remote_stacks(flavors)))
        .cte(f"snapshots_on_remote_{flavors.component_type.value}")
        .prefix_with("MATERIALIZED")
    )
    return exists(_finished_runs().where(col(PipelineRun.snapshot_id).in_(sa_select(snapshots))))


class OnboardingRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def facts(self, orchestrators: Flavors, artifact_stores: Flavors) -> OnboardingFacts:
        """Every fact in one round trip."""
        statement = sa_select(
            exists(sa_select(col(Project.id))),
            exists(_remote_stacks(orchestrators)),
            exists(_remote_stacks(artifact_stores)),
            exists(_finished_runs()),
            _finished_run_on(orchestrators),
            _finished_run_on(artifact_stores),
            exists(sa_select(col(Deployment.id))),
        )
        row = (await core_execute(self.session, statement)).one()
        return OnboardingFacts._make(row)
