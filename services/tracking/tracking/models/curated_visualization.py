"""Curated visualizations: an artifact version's visualization shown on a resource's page
(a deployment, model, pipeline, run, snapshot or project)."""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import ForeignKey, Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from shared.db import new_id, utcnow


class CuratedVisualization(SQLModel, table=True):
    """``resource_id`` has no foreign key: it points into the table ``resource_type``
    names (its rows' deletion leaves the link, as the reference's)."""

    __tablename__ = "curated_visualizations"
    __table_args__ = (
        UniqueConstraint(
            "artifact_visualization_id",
            "resource_id",
            "resource_type",
            name="uq_curated_visualizations_resource_link",
        ),
        Index("ix_curated_visualizations_resource", "resource_type", "resource_id"),
    )

    id: uuid.UUID = Field(default_factory=new_id, primary_key=True)
    project_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("projects.id", ondelete="CASCADE")], nullable=False
    )
    artifact_visualization_id: uuid.UUID = Field(
        sa_column_args=[ForeignKey("artifact_visualizations.id", ondelete="CASCADE")],
        nullable=False,
    )
    display_name: str | None = None
    display_order: int | None = None
    layout_size: str = Field(max_length=32)
    resource_id: uuid.UUID
    resource_type: str = Field(max_length=32)
    user_id: uuid.UUID | None = None
    created: dt.datetime = Field(default_factory=utcnow)
    updated: dt.datetime = Field(default_factory=utcnow)
