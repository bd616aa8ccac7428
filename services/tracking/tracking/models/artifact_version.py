from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import BigInteger, Column, ForeignKey, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class ArtifactVersionCount(SQLModel, table=True):
    """How many versions a project has, in slots summed on reading: kept by triggers on
    ``artifact_versions`` (migration 0008), never written by the service."""

    __tablename__ = "artifact_version_counts"

    project_id: uuid.UUID = Field(primary_key=True)
    slot: int = Field(primary_key=True)
    versions: int = Field(sa_column=Column(BigInteger, nullable=False))


class ArtifactVersion(SQLModel, table=True):
    """One stored version of an artifact. ``materializer`` and ``data_type`` hold the
    Source as JSON text, as the reference stores them (their filters match that text)."""

    __tablename__ = "artifact_versions"
    __table_args__ = (
        UniqueConstraint("artifact_id", "version", name="uq_artifact_versions_artifact_version"),
        # The list's scope and default order; the filters most used narrow from there.
        Index("ix_artifact_versions_project_created", "project_id", "created", "id"),
        # One artifact's versions in order; with the list's project scope and the filters
        # most used on them, so counting and paging them reads the index alone, and a
        # page in that order (filtered or not) stops at its end instead of sorting every
        # match.
        Index(
            "ix_artifact_versions_artifact_created",
            "artifact_id",
            "created",
            "id",
            "project_id",
            "type",
            "version_number",
        ),
        Index("ix_artifact_versions_artifact_number", "artifact_id", "version_number"),
        Index("ix_artifact_versions_project_type_created", "project_id", "type", "created"),
        # An artifact's versions of a type in a range of numbers, and what the page's
        # order and scope need: the count and the page's ids without reading a row.
        Index(
            "ix_artifact_versions_artifact_type_number",
            "artifact_id",
            "type",
            "version_number",
            "created",
            "id",
            "project_id",
        ),
    )

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("projects.id", ondelete="CASCADE")], nullable=False
    )
    artifact_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("artifacts.id", ondelete="CASCADE")], nullable=False
    )
    version: str = Field(max_length=255)
    version_number: int | None = None
    type: str = Field(max_length=64)
    uri: str = Field(sa_column=Column(Text, nullable=False))
    materializer: str = Field(sa_column=Column(Text, nullable=False))
    data_type: str = Field(sa_column=Column(Text, nullable=False))
    save_type: str = Field(max_length=32)
    artifact_store_id: uuid.UUID | None = Field(
        default=None,
        sa_column_args=[ForeignKey("stack_components.id", ondelete="SET NULL")],
        index=True,
    )
    content_hash: str | None = Field(default=None, max_length=255)
    item_count: int | None = None
    user_id: uuid.UUID | None = Field(default=None, index=True)
    created: dt.datetime = Field(default_factory=utcnow)
    updated: dt.datetime = Field(default_factory=utcnow)


class ArtifactVisualization(SQLModel, table=True):
    """A visualization of a version, kept in the order the request listed them."""

    __tablename__ = "artifact_visualizations"
    __table_args__ = (
        Index("ix_artifact_visualizations_version", "artifact_version_id", "position"),
    )

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    artifact_version_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("artifact_versions.id", ondelete="CASCADE")], nullable=False
    )
    position: int
    type: str = Field(max_length=16)
    uri: str = Field(sa_column=Column(Text, nullable=False))
    created: dt.datetime = Field(default_factory=utcnow)
    updated: dt.datetime = Field(default_factory=utcnow)


class RunMetadata(SQLModel, table=True):
    """A metadata value of a resource (artifact versions here). ``value`` holds the JSON
    text of the value, which the ``run_metadata`` filter matches."""

    __tablename__ = "run_metadata"
    __table_args__ = (
        UniqueConstraint("resource_type", "resource_id", "key", name="uq_run_metadata_key"),
        Index("ix_run_metadata_key", "key", "resource_type"),
    )

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    resource_type: str = Field(max_length=32)
    resource_id: uuid.UUID
    key: str = Field(max_length=255)
    value: str = Field(sa_column=Column(Text, nullable=False))
    user_id: uuid.UUID | None = None
    created: dt.datetime = Field(default_factory=utcnow)
