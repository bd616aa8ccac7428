"""Queries of a model version's links to artifact versions and to runs, and their list
declarations (the reference's filters: by the link's ends, the artifact's name, kind
and naming, the run's name, and the creator of what is linked)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, delete, true
from sqlalchemy import select as sa_select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import core_execute, new_id, utcnow
from shared.listing import Kind, Listing, ListSpec, SortKey, base_fields, column_field, fetch_page
from shared.users import user_field
from tracking.core.repository import rendered_columns
from tracking.models import (
    Artifact,
    ArtifactVersion,
    ModelVersionArtifact,
    ModelVersionRun,
    PipelineRun,
)

A = ModelVersionArtifact
R = ModelVersionRun


def _artifact_of_version(column: Any) -> Any:
    """``column`` of the linked artifact version's artifact."""
    return (
        sa_select(column)
        .join(ArtifactVersion, col(ArtifactVersion.artifact_id) == col(Artifact.id))
        .where(col(ArtifactVersion.id) == col(A.artifact_version_id))
        .scalar_subquery()
    )


def _of_version(column: Any) -> Any:
    return (
        sa_select(column)
        .where(col(ArtifactVersion.id) == col(A.artifact_version_id))
        .scalar_subquery()
    )


def _of_run(column: Any) -> Any:
    return sa_select(column).where(col(PipelineRun.id) == col(R.pipeline_run_id)).scalar_subquery()


def _sort_keys(model: Any) -> list[SortKey]:
    return [SortKey(name, col(getattr(model, name))) for name in ("created", "updated", "id")]


ARTIFACT_LINKS = ListSpec(
    resource="model_version_artifact",
    id_column=col(A.id),
    fields=[
        *base_fields(col(A.id), col(A.created), col(A.updated)),
        column_field("model_version_id", col(A.model_version_id), Kind.UUID),
        column_field("artifact_version_id", col(A.artifact_version_id), Kind.UUID),
        column_field("artifact_name", _artifact_of_version(col(Artifact.name)), Kind.STRING),
        user_field(_of_version(col(ArtifactVersion.user_id))),
    ],
    sort_keys=_sort_keys(A),
)

RUN_LINKS = ListSpec(
    resource="model_version_pipeline_run",
    id_column=col(R.id),
    fields=[
        *base_fields(col(R.id), col(R.created), col(R.updated)),
        column_field("model_version_id", col(R.model_version_id), Kind.UUID),
        column_field("pipeline_run_id", col(R.pipeline_run_id), Kind.UUID),
        column_field("pipeline_run_name", _of_run(col(PipelineRun.name)), Kind.STRING),
        user_field(_of_run(col(PipelineRun.user_id))),
    ],
    sort_keys=_sort_keys(R),
)

_MODEL_ARTIFACT = "ModelArtifact"
_SERVICE_ARTIFACT = "ServiceArtifact"


def artifact_kinds(
    *, data: bool, model: bool, deployment: bool, custom_name: bool | None
) -> list[ColumnElement[bool]]:
    """The reference's ``only_*_artifacts`` and ``has_custom_name`` switches."""
    kind = _of_version(col(ArtifactVersion.type))
    found: list[ColumnElement[bool]] = []
    if data:
        found.append(kind.not_in([_MODEL_ARTIFACT, _SERVICE_ARTIFACT]))
    if model:
        found.append(kind == _MODEL_ARTIFACT)
    if deployment:
        found.append(kind == _SERVICE_ARTIFACT)
    if custom_name is not None:
        found.append(_artifact_of_version(col(Artifact.has_custom_name)) == custom_name)
    return found


@dataclass(frozen=True)
class LinkKind:
    """One kind of link: its table and the column naming what it links to."""

    model: Any
    target: str
    spec: ListSpec
    name: Any
    """The name a link is also found by (its artifact's, its run's)."""

    @property
    def table(self) -> Table:
        return self.model.__table__  # type: ignore[no-any-return]


ARTIFACT_LINK = LinkKind(
    A, "artifact_version_id", ARTIFACT_LINKS, _artifact_of_version(col(Artifact.name))
)
RUN_LINK = LinkKind(R, "pipeline_run_id", RUN_LINKS, _of_run(col(PipelineRun.name)))


class LinkRepository:
    def __init__(self, session: AsyncSession, kind: LinkKind) -> None:
        self.session = session
        self.kind = kind

    def _select(self) -> Any:
        return sa_select(*rendered_columns(self.kind.table))

    async def find(self, model_version_id: uuid.UUID, target_id: uuid.UUID) -> Any:
        table = self.kind.table
        query = self._select().where(
            table.c.model_version_id == model_version_id, table.c[self.kind.target] == target_id
        )
        return (await core_execute(self.session, query)).first()

    async def insert_new(self, model_version_id: uuid.UUID, target_id: uuid.UUID) -> bool:
        """Make the link unless it exists (then ``False``)."""
        now = utcnow()
        values = {
            "id": new_id(),
            "model_version_id": model_version_id,
            self.kind.target: target_id,
            "created": now,
            "updated": now,
        }
        statement = postgresql_insert(self.kind.table).values(values).on_conflict_do_nothing()
        made = await core_execute(self.session, statement)
        return bool(made.rowcount)  # type: ignore[attr-defined]

    async def page(
        self, listing: Listing, scope: Sequence[ColumnElement[bool]]
    ) -> tuple[int, list[Any]]:
        return await fetch_page(
            self.session,
            self.kind.spec,
            listing,
            self._select(),
            scope=scope or [true()],
            core=True,
        )

    async def delete_one(self, model_version_id: uuid.UUID, name_or_id: str) -> bool:
        """One of the version's links, by its id or by the name of what it links to
        (as the reference, the first found); ``False`` when none is."""
        table = self.kind.table
        query = sa_select(table.c.id).where(table.c.model_version_id == model_version_id)
        try:
            query = query.where(table.c.id == uuid.UUID(name_or_id))
        except ValueError:
            query = query.where(self.kind.name == name_or_id)
        found = (await core_execute(self.session, query.limit(1))).scalar_one_or_none()
        if found is None:
            return False
        await core_execute(self.session, delete(table).where(table.c.id == found))
        return True

    async def delete_all(self, model_version_id: uuid.UUID) -> None:
        table = self.kind.table
        await core_execute(
            self.session, delete(table).where(table.c.model_version_id == model_version_id)
        )

    async def targets(self, model_version_id: uuid.UUID) -> list[uuid.UUID]:
        table = self.kind.table
        query = sa_select(table.c[self.kind.target]).where(
            table.c.model_version_id == model_version_id
        )
        return list((await core_execute(self.session, query)).scalars())
