"""Artifact queries and the list declaration."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import NamedTuple

from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.listing import Kind, ListSpec, SortKey, column_field
from tracking.core.scoped import ScopedRepository, ScopedRow, scoped_fields, scoped_sort_keys
from tracking.models import Artifact
from tracking.tag.schemas import TagRow
from tracking.tag.service import tags_field, tags_sort

TAG_RESOURCE = "artifact"

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
        # The newest version's `created` once artifact versions exist; until then every
        # artifact has none, and the reference falls back to the artifact's own.
        SortKey("latest_version", col(Artifact.created)),
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
