"""Model queries and the list declaration."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Select, func
from sqlalchemy import select as sa_select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import core_execute
from shared.listing import ListSpec, SortKey
from tracking.core.listing import scoped_fields, scoped_sort_keys
from tracking.core.repository import ScopedRepository
from tracking.core.rows import ScopedRow
from tracking.models import Model, ModelVersion
from tracking.tag.repository import tag_ids_column, tags_field, tags_sort
from tracking.tag.schemas import TagRow

TAG_RESOURCE = "model"


def _latest(column: Any) -> Any:
    """``column`` of the model's highest-numbered version, if any (as the reference)."""
    return (
        sa_select(column)
        .where(col(ModelVersion.model_id) == col(Model.id))
        .order_by(col(ModelVersion.number).desc())
        .limit(1)
        .scalar_subquery()
    )


MODELS = ListSpec(
    resource="model",
    id_column=col(Model.id),
    fields=[
        *scoped_fields(Model),
        tags_field(TAG_RESOURCE, col(Model.id)),
    ],
    sort_keys=[
        *scoped_sort_keys(Model),
        tags_sort(TAG_RESOURCE, col(Model.id)),
        # The newest version's `created`, or the model's own when it has none.
        SortKey(
            "latest_version",
            func.coalesce(
                sa_select(func.max(col(ModelVersion.created)))
                .where(col(ModelVersion.model_id) == col(Model.id))
                .scalar_subquery(),
                col(Model.created),
            ),
        ),
    ],
)


class TaggedModel(NamedTuple):
    """A model with its tags (sorted by name)."""

    model: ScopedRow
    tags: Sequence[TagRow] = ()

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.model.user_id


class ModelRepository(ScopedRepository[Model]):
    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, Model)

    def _columns(self) -> Select[Any]:
        """The model's columns, its latest version's id and name and its tags' ids."""
        return (
            super()
            ._columns()
            .add_columns(
                _latest(col(ModelVersion.id)).label("latest_version_id"),
                _latest(col(ModelVersion.name)).label("latest_version_name"),
                tag_ids_column(TAG_RESOURCE, col(Model.id)),
            )
        )

    async def id_named(self, project_id: uuid.UUID, name: str) -> uuid.UUID | None:
        query = sa_select(col(Model.id)).where(
            col(Model.project_id) == project_id, col(Model.name) == name
        )
        return (await core_execute(self.session, query)).scalar_one_or_none()

    async def lock(self, model_id: uuid.UUID) -> Model | None:
        """The model's row, locked until the transaction ends (its versions are
        numbered one request at a time)."""
        query = select(Model).where(col(Model.id) == model_id).with_for_update()
        return (await self.session.exec(query)).first()

    async def insert_if_new(self, row: Model) -> None:
        """Write ``row`` unless its project has a model of its name already."""
        table = self._table()
        values = {c.name: getattr(row, c.name) for c in table.columns}
        statement = postgresql_insert(table).values(values).on_conflict_do_nothing()
        await core_execute(self.session, statement)

    async def version_ids(self, model_id: uuid.UUID) -> list[uuid.UUID]:
        query = sa_select(col(ModelVersion.id)).where(col(ModelVersion.model_id) == model_id)
        return list((await core_execute(self.session, query)).scalars())
