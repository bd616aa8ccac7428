"""Artifact queries and the list declaration."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Select, func
from sqlalchemy import select as sa_select
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import Kind, ListSpec, SortKey, column_field
from tracking.core.listing import scoped_fields, scoped_sort_keys
from tracking.core.repository import ScopedRepository
from tracking.core.rows import ScopedRow
from tracking.models import Artifact, ArtifactVersion
from tracking.tag.repository import tag_ids_column, tags_field, tags_sort
from tracking.tag.schemas import TagRow

TAG_RESOURCE = "artifact"


def _latest(column: Any) -> Any:
    """``column`` of the artifact's newest version (by ``created``, then id), if any; the
    (artifact_id, created, id) index finds it in one step."""
    return (
        sa_select(column)
        .where(col(ArtifactVersion.artifact_id) == col(Artifact.id))
        .order_by(col(ArtifactVersion.created).desc(), col(ArtifactVersion.id).desc())
        .limit(1)
        .scalar_subquery()
    )


ARTIFACTS = ListSpec(
    resource="artifact",
    id_column=col(Artifact.id),
    fields=[
        *scoped_fields(Artifact),
        column_field("has_custom_name", col(Artifact.has_custom_name), Kind.BOOL),
        tags_field(TAG_RESOURCE, col(Artifact.id)),
    ],
    sort_keys=[
        *scoped_sort_keys(Artifact),
        SortKey("has_custom_name", col(Artifact.has_custom_name)),
        tags_sort(TAG_RESOURCE, col(Artifact.id)),
        # The newest version's `created`, or the artifact's own when it has none.
        SortKey(
            "latest_version",
            func.coalesce(_latest(col(ArtifactVersion.created)), col(Artifact.created)),
        ),
    ],
)


class TaggedArtifact(NamedTuple):
    """An artifact with its tags (sorted by name)."""

    artifact: ScopedRow
    tags: Sequence[TagRow] = ()

    @property
    def user_id(self) -> uuid.UUID | None:
        return self.artifact.user_id


class ArtifactRepository(ScopedRepository[Artifact]):
    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, Artifact)

    def _columns(self) -> Select[Any]:
        """The artifact's columns, its latest version's id and ``version`` and its tags' ids."""
        return (
            super()
            ._columns()
            .add_columns(
                _latest(col(ArtifactVersion.id)).label("latest_version_id"),
                _latest(col(ArtifactVersion.version)).label("latest_version_name"),
                tag_ids_column(TAG_RESOURCE, col(Artifact.id)),
            )
        )
