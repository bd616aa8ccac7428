"""The minimal pipelines, snapshots, runs, step runs and schedules that artifact versions
and deployments refer to."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, Column, ForeignKey, Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


def _project_fk() -> Any:
    return Field(sa_column_args=[ForeignKey("projects.id", ondelete="CASCADE")], nullable=False)


class Pipeline(SQLModel, table=True):
    __tablename__ = "pipelines"
    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_pipelines_project_name"),)

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = _project_fk()
    name: str = Field(max_length=255, index=True)
    description: str | None = None
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)


class PipelineSnapshot(SQLModel, table=True):
    __tablename__ = "pipeline_snapshots"

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = _project_fk()
    name: str | None = Field(default=None, max_length=255)
    description: str | None = None
    run_name_template: str = Field(max_length=255)
    pipeline_configuration: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    is_dynamic: bool = False
    runnable: bool = False
    deployable: bool = False
    pipeline_id: uuid.UUID | None = Field(
        default=None,
        sa_column_args=[ForeignKey("pipelines.id", ondelete="CASCADE")],
        index=True,
    )
    stack_id: uuid.UUID | None = Field(
        default=None, sa_column_args=[ForeignKey("stacks.id", ondelete="SET NULL")]
    )
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)


class PipelineRun(SQLModel, table=True):
    __tablename__ = "pipeline_runs"
    __table_args__ = (
        UniqueConstraint("project_id", "name", name="uq_pipeline_runs_project_name"),
        UniqueConstraint("trigger_execution_id", name="uq_pipeline_runs_trigger_execution"),
    )

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = _project_fk()
    name: str = Field(max_length=255, index=True)
    status: str = Field(max_length=32)
    snapshot_id: uuid.UUID | None = Field(
        default=None, sa_column_args=[ForeignKey("pipeline_snapshots.id", ondelete="SET NULL")]
    )
    pipeline_id: uuid.UUID | None = Field(
        default=None,
        sa_column_args=[ForeignKey("pipelines.id", ondelete="CASCADE")],
        index=True,
    )
    orchestrator_run_id: str | None = Field(default=None, max_length=255)
    status_reason: str | None = None
    index: int = 1
    start_time: dt.datetime | None = None
    end_time: dt.datetime | None = None
    user_id: uuid.UUID | None = Field(default=None, index=True)
    # A run a trigger asked for (``POST /pipeline_snapshots/{id}/runs``): the asking
    # trigger execution (one run each, whatever the retries) and what the reference
    # records about it (``TriggerExecutionInfo``, e.g. the webhook event).
    trigger_execution_id: uuid.UUID | None = None
    trigger_execution_info: dict[str, Any] | None = Field(
        default=None, sa_column=Column(JSON, nullable=True)
    )
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)


class StepRun(SQLModel, table=True):
    __tablename__ = "step_runs"
    __table_args__ = (UniqueConstraint("pipeline_run_id", "name", name="uq_step_runs_run_name"),)

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = _project_fk()
    pipeline_run_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("pipeline_runs.id", ondelete="CASCADE")], nullable=False
    )
    name: str = Field(max_length=255)
    status: str = Field(max_length=32)
    start_time: dt.datetime | None = None
    end_time: dt.datetime | None = None
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow)
    updated: dt.datetime = Field(default_factory=utcnow)


class StepRunArtifact(SQLModel, table=True):
    """An artifact version a step read (``input``) or produced (``output``)."""

    __tablename__ = "step_run_artifacts"
    __table_args__ = (Index("ix_step_run_artifacts_version", "artifact_version_id"),)

    step_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("step_runs.id", ondelete="CASCADE")], primary_key=True
    )
    direction: str = Field(max_length=8, primary_key=True)
    name: str = Field(max_length=255, primary_key=True)
    artifact_version_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("artifact_versions.id", ondelete="CASCADE")],
        primary_key=True,
    )


class Schedule(SQLModel, table=True):
    __tablename__ = "schedules"
    __table_args__ = (UniqueConstraint("project_id", "name", name="uq_schedules_project_name"),)

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = _project_fk()
    name: str = Field(max_length=255, index=True)
    active: bool = True
    cron_expression: str | None = Field(default=None, max_length=255)
    start_time: dt.datetime | None = None
    end_time: dt.datetime | None = None
    interval_second: float | None = None
    catchup: bool = False
    run_once_start_time: dt.datetime | None = None
    orchestrator_id: uuid.UUID | None = Field(
        default=None, sa_column_args=[ForeignKey("stack_components.id", ondelete="SET NULL")]
    )
    pipeline_id: uuid.UUID | None = Field(
        default=None, sa_column_args=[ForeignKey("pipelines.id", ondelete="CASCADE")]
    )
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)
