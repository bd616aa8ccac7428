"""Deployment queries and the list declaration."""

from __future__ import annotations

from sqlalchemy import select as sa_select
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import Condition, Field, Kind, ListSpec, SortKey, column_field
from tracking.core.listing import scoped_fields, scoped_sort_keys
from tracking.core.repository import ScopedRepository
from tracking.models import Deployment, Pipeline, PipelineSnapshot
from tracking.pipeline_snapshot.repository import SNAPSHOT_PIPELINE
from tracking.tag.repository import tags_field, tags_sort

TAG_RESOURCE = "deployment"


def _pipeline(cond: Condition) -> ColumnElement[bool]:
    """Deployments whose snapshot belongs to the pipeline (name or id)."""
    snapshots = sa_select(col(PipelineSnapshot.id)).where(SNAPSHOT_PIPELINE.sql(cond))
    return col(Deployment.snapshot_id).in_(snapshots)


_snapshot_name = (
    sa_select(col(PipelineSnapshot.name))
    .where(col(PipelineSnapshot.id) == col(Deployment.snapshot_id))
    .scalar_subquery()
)
_pipeline_name = (
    sa_select(col(Pipeline.name))
    .join(PipelineSnapshot, col(PipelineSnapshot.pipeline_id) == col(Pipeline.id))
    .where(col(PipelineSnapshot.id) == col(Deployment.snapshot_id))
    .scalar_subquery()
)

DEPLOYMENTS = ListSpec(
    resource="deployment",
    id_column=col(Deployment.id),
    fields=[
        *scoped_fields(Deployment),
        column_field("url", col(Deployment.url), Kind.STRING),
        column_field("status", col(Deployment.status), Kind.STRING),
        column_field("snapshot_id", col(Deployment.snapshot_id), Kind.UUID),
        column_field("deployer_id", col(Deployment.deployer_id), Kind.UUID),
        Field(
            name="pipeline",
            kind=Kind.STRING,
            build=_pipeline,
            description="The snapshot's pipeline: name or id (filter syntax)",
        ),
        tags_field(TAG_RESOURCE, col(Deployment.id)),
    ],
    sort_keys=[
        *scoped_sort_keys(Deployment),
        SortKey("url", col(Deployment.url)),
        SortKey("status", col(Deployment.status)),
        SortKey("snapshot", _snapshot_name),
        SortKey("pipeline", _pipeline_name),
        tags_sort(TAG_RESOURCE, col(Deployment.id)),
    ],
)


class DeploymentRepository(ScopedRepository[Deployment]):
    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, Deployment)
