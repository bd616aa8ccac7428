"""Models, their versions, and the links of a version to artifact versions and runs
(the reference's model control plane). A run or step run points at its model version
(``model_version_id`` on ``pipeline_runs`` and ``step_runs``, see 0015)."""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import Column, ForeignKey, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


def _text() -> str | None:
    return Field(default=None, sa_column=Column(Text, nullable=True))  # type: ignore[no-any-return]


class Model(SQLModel, table=True):
    __tablename__ = "models"
    __table_args__ = (
        UniqueConstraint("project_id", "name", name="uq_models_project_name"),
        Index("ix_models_project_created", "project_id", "created", "id"),
    )

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("projects.id", ondelete="CASCADE")], nullable=False
    )
    name: str = Field(max_length=255)
    license: str | None = _text()
    description: str | None = _text()
    audience: str | None = _text()
    use_cases: str | None = _text()
    limitations: str | None = _text()
    trade_offs: str | None = _text()
    ethics: str | None = _text()
    save_models_to_registry: bool = True
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow)
    updated: dt.datetime = Field(default_factory=utcnow)


class ModelVersion(SQLModel, table=True):
    """``number`` counts a model's versions from 1 without gaps (taken under the
    model's row lock); ``producer_run_id_if_numeric`` is the run that made a numbered
    version (one per run and model), else the version's own id."""

    __tablename__ = "model_versions"
    __table_args__ = (
        UniqueConstraint("model_id", "number", name="uq_model_versions_model_number"),
        UniqueConstraint("model_id", "name", name="uq_model_versions_model_name"),
        UniqueConstraint(
            "model_id", "producer_run_id_if_numeric", name="uq_model_versions_model_producer"
        ),
        Index("ix_model_versions_project_created", "project_id", "created", "id"),
    )

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("projects.id", ondelete="CASCADE")], nullable=False
    )
    model_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("models.id", ondelete="CASCADE")], nullable=False
    )
    name: str = Field(max_length=255)
    number: int
    description: str | None = _text()
    stage: str | None = Field(default=None, max_length=255)
    producer_run_id_if_numeric: uuid.UUID
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow)
    updated: dt.datetime = Field(default_factory=utcnow)


class ModelVersionArtifact(SQLModel, table=True):
    __tablename__ = "model_version_artifacts"
    __table_args__ = (
        UniqueConstraint(
            "model_version_id", "artifact_version_id", name="uq_model_version_artifacts_link"
        ),
        Index("ix_model_version_artifacts_artifact_version", "artifact_version_id"),
    )

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    model_version_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("model_versions.id", ondelete="CASCADE")], nullable=False
    )
    artifact_version_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("artifact_versions.id", ondelete="CASCADE")],
        nullable=False,
    )
    created: dt.datetime = Field(default_factory=utcnow)
    updated: dt.datetime = Field(default_factory=utcnow)


class ModelVersionRun(SQLModel, table=True):
    __tablename__ = "model_version_runs"
    __table_args__ = (
        UniqueConstraint("model_version_id", "pipeline_run_id", name="uq_model_version_runs_link"),
        Index("ix_model_version_runs_run", "pipeline_run_id"),
    )

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    model_version_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("model_versions.id", ondelete="CASCADE")], nullable=False
    )
    pipeline_run_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("pipeline_runs.id", ondelete="CASCADE")], nullable=False
    )
    created: dt.datetime = Field(default_factory=utcnow)
    updated: dt.datetime = Field(default_factory=utcnow)
