"""Pipelines, their snapshots, runs and step runs (what a ``zenml`` client's pipeline run
records), and the schedules that snapshots and runs refer to."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Column, ForeignKey, Index, UniqueConstraint, true
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
        default=None, sa_column_args=[ForeignKey("stacks.id", ondelete="SET NULL")], index=True
    )
    # What the client compiled and the orchestrator runs from (kept as sent): each step's
    # spec and configuration by invocation id, the pipeline's spec and the environment.
    step_configurations: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False, server_default="{}")
    )
    pipeline_spec: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    client_environment: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False, server_default="{}")
    )
    client_version: str | None = Field(default=None, max_length=255)
    server_version: str | None = Field(default=None, max_length=255)
    pipeline_version_hash: str | None = Field(default=None, max_length=255)
    source_code: str | None = None
    code_path: str | None = None
    build_id: uuid.UUID | None = Field(
        default=None, sa_column_args=[ForeignKey("pipeline_builds.id", ondelete="SET NULL")]
    )
    schedule_id: uuid.UUID | None = Field(
        default=None, sa_column_args=[ForeignKey("schedules.id", ondelete="SET NULL")]
    )
    template_id: uuid.UUID | None = Field(default=None, index=True)
    source_snapshot_id: uuid.UUID | None = None
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)


class PipelineRunCount(SQLModel, table=True):
    """How many runs a project has, in slots summed on reading: kept by triggers on
    ``pipeline_runs`` (migration 0012), never written by the service."""

    __tablename__ = "pipeline_run_counts"

    project_id: uuid.UUID = Field(primary_key=True)
    slot: int = Field(primary_key=True)
    runs: int = Field(sa_column=Column(BigInteger, nullable=False))


class PipelineRun(SQLModel, table=True):
    __tablename__ = "pipeline_runs"
    __table_args__ = (
        UniqueConstraint("project_id", "name", name="uq_pipeline_runs_project_name"),
        UniqueConstraint("trigger_execution_id", name="uq_pipeline_runs_trigger_execution"),
        # A pipeline's newest run, for the pipelines list's ``latest_run`` order.
        Index("ix_pipeline_runs_pipeline_created", "pipeline_id", "created"),
        # A project's runs page by page, newest first (the runs list's order), without
        # walking other projects' newer runs.
        Index("ix_pipeline_runs_project_created", "project_id", "created", "id"),
    )

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = _project_fk()
    name: str = Field(max_length=255, index=True)
    status: str = Field(max_length=32)
    snapshot_id: uuid.UUID | None = Field(
        default=None,
        sa_column_args=[ForeignKey("pipeline_snapshots.id", ondelete="SET NULL")],
        index=True,
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
    # The trigger whose execution that was (the run statistics' ``trigger`` groups).
    trigger_id: uuid.UUID | None = None
    trigger_execution_info: dict[str, Any] | None = Field(
        default=None, sa_column=Column(JSON, nullable=True)
    )
    model_version_id: uuid.UUID | None = Field(
        default=None,
        sa_column_args=[ForeignKey("model_versions.id", ondelete="SET NULL")],
        index=True,
    )
    orchestrator_environment: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False, server_default="{}")
    )
    exception_info: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    # Whether its steps' heartbeats are watched: the snapshot's ``enable_heartbeat``
    # (unset: yes) until ``PUT /runs/{id}/disable_heartbeat`` switches it off.
    enable_heartbeat: bool = Field(
        default=True, sa_column=Column(Boolean, nullable=False, server_default=true())
    )
    created: dt.datetime = Field(default_factory=utcnow, index=True)
    updated: dt.datetime = Field(default_factory=utcnow)


class StepRun(SQLModel, table=True):
    __tablename__ = "step_runs"
    __table_args__ = (
        UniqueConstraint("pipeline_run_id", "name", name="uq_step_runs_run_name"),
        Index("ix_step_runs_project_cache_key", "project_id", "cache_key"),
    )

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = _project_fk()
    pipeline_run_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("pipeline_runs.id", ondelete="CASCADE")], nullable=False
    )
    name: str = Field(max_length=255)
    status: str = Field(max_length=32)
    start_time: dt.datetime | None = None
    end_time: dt.datetime | None = None
    # The client looks a step's cache key up (``GET /steps?cache_key=``) to reuse an
    # earlier completed run of the step.
    cache_key: str | None = Field(default=None, max_length=255)
    cache_expires_at: dt.datetime | None = None
    code_hash: str | None = Field(default=None, max_length=255)
    docstring: str | None = None
    source_code: str | None = None
    original_step_run_id: uuid.UUID | None = Field(
        default=None, sa_column_args=[ForeignKey("step_runs.id", ondelete="SET NULL")]
    )
    parent_step_ids: list[str] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False, server_default="[]")
    )
    exception_info: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    # A dynamic pipeline's step is compiled as it runs: its spec and configuration come
    # with it (the client's ``dynamic_config``), not with the snapshot.
    dynamic_config: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    # The part of it the run's DAG draws (:func:`tracking.pipeline_run.dag.dag_fields`):
    # a full configuration is kilobytes, and decoding a thousand of them for one DAG
    # cost more than everything else the DAG does.
    dag_config: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    latest_heartbeat: dt.datetime | None = None
    # The minutes a step may go without a heartbeat (its configuration's
    # ``heartbeat_healthy_threshold``) while its heartbeats are watched (its spec's and its
    # run's ``enable_heartbeat``), else null: kept on the step, as the reference keeps it,
    # so a heartbeat reads no configuration; a run's switch clears it on all its steps.
    heartbeat_threshold: int | None = None
    model_version_id: uuid.UUID | None = Field(
        default=None,
        sa_column_args=[ForeignKey("model_versions.id", ondelete="SET NULL")],
        index=True,
    )
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow, index=True)
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
