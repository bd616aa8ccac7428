"""Pipeline and snapshot queries and the pipeline list declaration."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import replace
from typing import Any

from sqlalchemy import func
from sqlalchemy import select as sa_select
from sqlalchemy.dialects.postgresql import distinct_on
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import Kind, ListSpec, SortKey, column_field
from shared.users import user_field
from tracking.core.listing import scoped_fields, scoped_sort_keys
from tracking.core.repository import ScopedRepository
from tracking.models import Pipeline, PipelineRun, PipelineSnapshot
from tracking.tag.repository import tags_field, tags_sort

# When the pipeline last ran (when it was made, if never), as the reference orders by
# ``latest_run``: one look-up in the runs' (pipeline_id, created) index per pipeline.
LATEST_RUN = func.coalesce(
    sa_select(func.max(col(PipelineRun.created)))
    .where(col(PipelineRun.pipeline_id) == col(Pipeline.id))
    .correlate(Pipeline)
    .scalar_subquery(),
    col(Pipeline.created),
)


def _of_latest_run(column: Any) -> Any:
    """``column`` of the pipeline's newest run (the same index look-up)."""
    return (
        sa_select(column)
        .where(col(PipelineRun.pipeline_id) == col(Pipeline.id))
        .order_by(col(PipelineRun.created).desc())
        .limit(1)
        .correlate(Pipeline)
        .scalar_subquery()
    )


PIPELINES = ListSpec(
    resource="pipeline",
    id_column=col(Pipeline.id),
    fields=[
        *scoped_fields(Pipeline),
        tags_field("pipeline", col(Pipeline.id)),
        column_field(
            "latest_run_status",
            _of_latest_run(col(PipelineRun.status)),
            Kind.STRING,
            description="The status of the pipeline's latest run",
        ),
        replace(
            user_field(_of_latest_run(col(PipelineRun.user_id))),
            name="latest_run_user",
            description="Who ran the pipeline's latest run: user name, full name or id",
        ),
    ],
    sort_keys=[
        *scoped_sort_keys(Pipeline),
        tags_sort("pipeline", col(Pipeline.id)),
        SortKey("latest_run", LATEST_RUN),
    ],
)


class PipelineRepository(ScopedRepository[Pipeline]):
    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, Pipeline)

    async def latest_runs(self, pipeline_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, Any]:
        """Each pipeline's newest run (id, status, creator), in one query."""
        if not pipeline_ids:
            return {}
        query = (
            sa_select(
                col(PipelineRun.pipeline_id),
                col(PipelineRun.id),
                col(PipelineRun.status),
                col(PipelineRun.user_id),
            )
            .where(col(PipelineRun.pipeline_id).in_(list(pipeline_ids)))
            .ext(distinct_on(col(PipelineRun.pipeline_id)))
            .order_by(col(PipelineRun.pipeline_id), col(PipelineRun.created).desc())
        )
        rows = (await self.session.exec(query)).all()  # type: ignore[call-overload]
        return {row.pipeline_id: row for row in rows}

    async def dependents(self, pipeline_id: uuid.UUID) -> tuple[list[Any], list[Any]]:
        """The ids of the pipeline's snapshots and of its runs (they go with it)."""
        snapshots = sa_select(col(PipelineSnapshot.id)).where(
            col(PipelineSnapshot.pipeline_id) == pipeline_id
        )
        runs = sa_select(col(PipelineRun.id)).where(col(PipelineRun.pipeline_id) == pipeline_id)
        found = [
            list((await self.session.exec(query)).scalars().all())  # type: ignore[call-overload]
            for query in (snapshots, runs)
        ]
        return found[0], found[1]
