"""Model version queries and the list declaration: numbering under the model's row
lock, finding a version by name, number or stage, and its model's row."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any

from sqlalchemy import Select, bindparam, func
from sqlalchemy import select as sa_select
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import core_execute
from shared.listing import (
    Condition,
    Field,
    Kind,
    Listing,
    ListSpec,
    SortKey,
    column_field,
    fetch_page,
    name_or_id,
)
from tracking.core.listing import page_scope, scoped_fields, scoped_sort_keys
from tracking.core.repository import ScopedRepository, rendered_columns
from tracking.model_version.schemas import ModelStages
from tracking.models import Model, ModelVersion
from tracking.run_metadata.listing import metadata_field
from tracking.tag.repository import tag_ids_column, tags_field, tags_sort

TAG_RESOURCE = "model_version"
METADATA_RESOURCE = "model_version"
V = ModelVersion

MODEL_VERSIONS = ListSpec(
    resource="model_version",
    id_column=col(V.id),
    fields=[
        *scoped_fields(V),
        column_field("number", col(V.number), Kind.INT),
        column_field("stage", col(V.stage), Kind.ENUM, enum=ModelStages),
        tags_field(TAG_RESOURCE, col(V.id)),
        metadata_field(
            METADATA_RESOURCE, col(V.id), "'key:value' or 'key:operator:value' on the metadata"
        ),
    ],
    sort_keys=[
        *scoped_sort_keys(V),
        SortKey("number", col(V.number)),
        SortKey("stage", col(V.stage)),
        tags_sort(TAG_RESOURCE, col(V.id)),
    ],
)


def version_fields(version_id: Any) -> list[Field]:
    """The reference's ``model_version_id`` and ``model`` (name or id) filters of rows
    whose ``version_id`` column points at their model version (runs, steps)."""
    model = name_or_id(
        "model",
        col(V.model_id),
        target_id=col(Model.id),
        target_names=[col(Model.name)],
    )

    def of_model(cond: Condition) -> ColumnElement[bool]:
        return version_id.in_(sa_select(col(V.id)).where(model.sql(cond)))  # type: ignore[no-any-return]

    return [
        column_field("model_version_id", version_id, Kind.UUID),
        Field(name="model", kind=Kind.STRING, build=of_model, description="Model name or id"),
    ]


_SCOPES: dict[bool, tuple[ColumnElement[bool], ...]] = {}


def _scope(by_user: bool) -> tuple[ColumnElement[bool], ...]:
    """A page's scope: the project, the model (``scope_model``) and, ``by_user``, the
    creator (built once each, so unfiltered pages are prebuilt statements)."""
    found = _SCOPES.get(by_user)
    if found is None:
        table = V.__table__  # type: ignore[attr-defined]
        model = table.c.model_id == bindparam("scope_model", type_=table.c.model_id.type)
        found = _SCOPES[by_user] = (*page_scope(table, by_user), model)
    return found


_MODEL_COLUMNS = sa_select(*rendered_columns(Model.__table__))  # type: ignore[attr-defined]


class ModelVersionRepository(ScopedRepository[ModelVersion]):
    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, ModelVersion)

    def _columns(self) -> Select[Any]:
        return super()._columns().add_columns(tag_ids_column(TAG_RESOURCE, col(V.id)))

    async def models(self, model_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, Any]:
        """The models' rows (to render nested in their versions), by id."""
        if not model_ids:
            return {}
        query = _MODEL_COLUMNS.where(col(Model.id).in_(model_ids))
        return {row.id: row for row in (await core_execute(self.session, query)).all()}

    async def read_many(self, ids: Collection[uuid.UUID]) -> list[Any]:
        if not ids:
            return []
        query = self.columns().where(col(V.id).in_(ids))
        return list((await core_execute(self.session, query)).all())

    async def next_number(self, model_id: uuid.UUID) -> int:
        """The model's next version number (the caller holds the model's row lock)."""
        query = sa_select(func.coalesce(func.max(col(V.number)), 0) + 1).where(
            col(V.model_id) == model_id
        )
        return int((await core_execute(self.session, query)).scalar_one())

    async def find(
        self,
        model_id: uuid.UUID,
        *,
        name: str | None = None,
        number: int | None = None,
        stage: str | None = None,
        producer_run_id: uuid.UUID | None = None,
    ) -> uuid.UUID | None:
        """The id of the model's version of that name, number or stage, the numbered
        one the run made; given none of those, its highest-numbered one (``latest``)."""
        query = sa_select(col(V.id)).where(col(V.model_id) == model_id)
        if name is not None:
            query = query.where(col(V.name) == name)
        if number is not None:
            query = query.where(col(V.number) == number)
        if stage is not None:
            query = query.where(col(V.stage) == stage)
        if producer_run_id is not None:
            query = query.where(col(V.producer_run_id_if_numeric) == producer_run_id)
        query = query.order_by(col(V.number).desc()).limit(1)
        return (await core_execute(self.session, query)).scalar_one_or_none()

    async def in_stage(self, model_id: uuid.UUID, stage: str) -> ModelVersion | None:
        query = select(V).where(col(V.model_id) == model_id, col(V.stage) == stage).limit(1)
        return (await self.session.exec(query)).first()

    async def page_of_model(
        self,
        listing: Listing,
        project_id: uuid.UUID,
        model_id: uuid.UUID | None,
        scope_user: uuid.UUID | None,
    ) -> tuple[int, list[Any]]:
        """A page of one model's versions (``None``: of no model, an empty page)."""
        params = {"scope_project": project_id, "scope_model": model_id}
        if scope_user is not None:
            params["scope_user"] = scope_user
        return await fetch_page(
            self.session,
            MODEL_VERSIONS,
            listing,
            self.columns(),
            scope=_scope(scope_user is not None),
            params=params,
            core=True,
        )
