"""Run metadata queries: which resources exist, writing values, reading them back."""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Mapping
from typing import Any

from sqlalchemy import bindparam, delete, or_
from sqlalchemy import select as sa_select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import core_execute, new_id, utcnow
from tracking.models import (
    ArtifactVersion,
    ModelVersion,
    PipelineRun,
    RunMetadata,
    RunWaitCondition,
    Schedule,
    StepRun,
)
from tracking.run_metadata.schemas import MetadataResourceTypes

HELD: dict[MetadataResourceTypes, Any] = {
    MetadataResourceTypes.PIPELINE_RUN: PipelineRun,
    MetadataResourceTypes.STEP_RUN: StepRun,
    MetadataResourceTypes.ARTIFACT_VERSION: ArtifactVersion,
    MetadataResourceTypes.SCHEDULE: Schedule,
    MetadataResourceTypes.MODEL_VERSION: ModelVersion,
    MetadataResourceTypes.WAIT_CONDITION: RunWaitCondition,
}
"""The resources with metadata that tracking holds;
``run_metadata.resource_type`` is the type's value."""

_VALUES = (
    sa_select(col(RunMetadata.resource_id), col(RunMetadata.key), col(RunMetadata.value))
    .where(
        col(RunMetadata.resource_type) == bindparam("resource_type"),
        col(RunMetadata.resource_id).in_(bindparam("ids", expanding=True)),
    )
    .order_by(col(RunMetadata.key))
)

_OF_STEPS = (
    sa_select(
        col(StepRun.pipeline_run_id),
        col(StepRun.name),
        col(RunMetadata.key),
        col(RunMetadata.value),
    )
    .join(StepRun, col(StepRun.id) == col(RunMetadata.resource_id))
    .where(
        col(RunMetadata.resource_type) == MetadataResourceTypes.STEP_RUN.value,
        col(StepRun.pipeline_run_id).in_(bindparam("ids", expanding=True)),
    )
    .order_by(col(StepRun.created), col(RunMetadata.key))
)


class RunMetadataRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def existing(
        self, resource_type: MetadataResourceTypes, ids: Collection[uuid.UUID]
    ) -> set[uuid.UUID]:
        model = HELD.get(resource_type)
        if model is None or not ids:
            return set()
        query = sa_select(col(model.id)).where(col(model.id).in_(list(ids)))
        return set((await self.session.exec(query)).scalars().all())  # type: ignore[call-overload]

    async def put(
        self,
        resources: Collection[tuple[MetadataResourceTypes, uuid.UUID]],
        values: Mapping[str, str],
        user_id: uuid.UUID,
    ) -> None:
        """Set each key of each resource (a key set again takes its new value)."""
        now = utcnow()
        rows = [
            {
                "id": new_id(),
                "resource_type": kind.value,
                "resource_id": resource_id,
                "key": key,
                "value": value,
                "user_id": user_id,
                "created": now,
            }
            for kind, resource_id in resources
            for key, value in values.items()
        ]
        if not rows:
            return
        insert = postgresql_insert(RunMetadata)
        await self.session.exec(
            insert.values(rows).on_conflict_do_update(
                constraint="uq_run_metadata_key",
                set_={
                    "value": insert.excluded.value,
                    "user_id": insert.excluded.user_id,
                    "created": insert.excluded.created,
                },
            )
        )

    async def values(
        self, resource_type: MetadataResourceTypes, ids: Collection[uuid.UUID]
    ) -> dict[uuid.UUID, dict[str, Any]]:
        """Each resource's metadata by key (the values decoded), for its ``run_metadata``."""
        found: dict[uuid.UUID, dict[str, Any]] = {}
        if not ids:
            return found
        params = {"resource_type": resource_type.value, "ids": list(ids)}
        for row in (await core_execute(self.session, _VALUES, params)).all():
            found.setdefault(row.resource_id, {})[row.key] = json.loads(row.value)
        return found

    async def copy(
        self,
        resource_type: MetadataResourceTypes,
        source_id: uuid.UUID,
        target_id: uuid.UUID,
        user_id: uuid.UUID,
    ) -> None:
        """Set on ``target_id`` the values ``source_id`` has (a cached step shows its
        original's)."""
        params = {"resource_type": resource_type.value, "ids": [source_id]}
        rows = (await core_execute(self.session, _VALUES, params)).all()
        await self.put([(resource_type, target_id)], {r.key: r.value for r in rows}, user_id)

    async def of_steps(self, run_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, dict[str, Any]]:
        """Each run's steps' metadata, keyed ``step::key`` (the reference's full metadata
        of a run)."""
        found: dict[uuid.UUID, dict[str, Any]] = {}
        if not run_ids:
            return found
        for row in (await core_execute(self.session, _OF_STEPS, {"ids": list(run_ids)})).all():
            values = found.setdefault(row.pipeline_run_id, {})
            values[f"{row.name}::{row.key}"] = json.loads(row.value)
        return found

    async def delete_of_runs(self, run_ids: Collection[uuid.UUID]) -> None:
        """The metadata of the runs and of their steps (they go with their runs)."""
        steps = sa_select(col(StepRun.id)).where(col(StepRun.pipeline_run_id).in_(list(run_ids)))
        await self.session.exec(
            delete(RunMetadata).where(
                or_(
                    (col(RunMetadata.resource_type) == MetadataResourceTypes.PIPELINE_RUN.value)
                    & col(RunMetadata.resource_id).in_(list(run_ids)),
                    (col(RunMetadata.resource_type) == MetadataResourceTypes.STEP_RUN.value)
                    & col(RunMetadata.resource_id).in_(steps),
                )
            )
        )

    async def delete_of(
        self, resource_type: MetadataResourceTypes, ids: Collection[uuid.UUID]
    ) -> None:
        """The metadata of resources of one type (that are going)."""
        await self.session.exec(
            delete(RunMetadata).where(
                col(RunMetadata.resource_type) == resource_type.value,
                col(RunMetadata.resource_id).in_(list(ids)),
            )
        )
