"""Business rules for artifacts: names, tags, and the project they live in."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import utcnow
from shared.errors import BadRequest
from shared.listing import Listing
from tracking.artifact.repository import (
    ARTIFACTS,
    TAG_RESOURCE,
    ArtifactRepository,
    TaggedArtifact,
)
from tracking.artifact.schemas import ArtifactRequest, ArtifactUpdate
from tracking.artifact_version.repository import TAG_RESOURCE as VERSION_TAG_RESOURCE
from tracking.artifact_version.repository import ArtifactVersionRepository
from tracking.core.errors import NameTaken, ScopedNotFound
from tracking.core.repository import new_row
from tracking.core.rows import ScopedRow
from tracking.core.schemas import ScopedListQuery
from tracking.core.service import ScopedService
from tracking.models import Artifact
from tracking.tag.service import TagService

BANNED_NAME_CHARACTERS = "\t\n\r\v\f"


class ArtifactNotFound(ScopedNotFound):
    resource = "artifact"


class ArtifactAlreadyExists(NameTaken):
    resource = "artifact"


class InvalidArtifactName(BadRequest):
    """The reference's ``validate_name`` messages (a ValueError there: 400)."""

    def __init__(self, name: str, model: str) -> None:
        if not name:
            message = (
                f"The class `{model}` has no attribute `name` or it is set to `None`. "
                "Cannot validate the name."
            )
        else:
            banned = "".join(c for c in BANNED_NAME_CHARACTERS if c in name)
            label = model.removesuffix("Request")
            message = (
                f"The name `{name}` of the `{label}` contains the following forbidden "
                f"characters: `{banned}`."
            )
        super().__init__(message)


def check_name(name: str, model: str) -> None:
    if not name or any(c in name for c in BANNED_NAME_CHARACTERS):
        raise InvalidArtifactName(name, model)


class ArtifactService(ScopedService[Artifact]):
    not_found = ArtifactNotFound
    name_taken = ArtifactAlreadyExists

    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, ArtifactRepository(session))
        self.tags = TagService(session)

    async def list_page(
        self, listing: Listing, query: ScopedListQuery
    ) -> tuple[int, list[TaggedArtifact]]:
        total, rows = await self.list_rows(ARTIFACTS, listing, query)
        return total, await self._with_tags(rows)

    async def get(self, artifact_id: uuid.UUID) -> TaggedArtifact:
        (item,) = await self._with_tags([await self.read_row(artifact_id)])
        return item

    async def create(self, request: ArtifactRequest, user_id: uuid.UUID) -> TaggedArtifact:
        check_name(request.name, "ArtifactRequest")
        project = await self.project(request.project)
        artifact = new_row(
            Artifact,
            project_id=project.id,
            name=request.name,
            has_custom_name=request.has_custom_name,
            user_id=user_id,
        )
        await self.insert(artifact, project)
        if not request.tags:
            return TaggedArtifact(artifact)
        await self.tags.attach(TAG_RESOURCE, artifact.id, request.tags, user_id)
        return await self.get(artifact.id)

    async def update(
        self, artifact_id: uuid.UUID, update: ArtifactUpdate, user_id: uuid.UUID
    ) -> TaggedArtifact:
        artifact = await self.get_row(artifact_id)
        if update.name:
            check_name(update.name, "ArtifactUpdate")
            # As the reference: naming an artifact makes its name custom, unless the
            # update itself says otherwise.
            artifact.has_custom_name = True
        if update.has_custom_name is not None:
            artifact.has_custom_name = update.has_custom_name
        artifact.updated = utcnow()
        if update.name:
            await self.rename(artifact, update.name)
        await self.tags.attach(TAG_RESOURCE, artifact.id, update.add_tags or [], user_id)
        await self.tags.detach(TAG_RESOURCE, artifact.id, update.remove_tags or [])
        await self.session.flush()
        return await self.get(artifact.id)

    async def delete(self, artifact_id: uuid.UUID) -> None:
        """The artifact and, as the reference, all its versions (used or not) with their
        tags and metadata."""
        versions = ArtifactVersionRepository(self.session)
        version_ids = await versions.ids_of(artifact_id)
        await self.tags.detach_all(VERSION_TAG_RESOURCE, version_ids)
        await versions.delete_versions(version_ids)
        artifact = await self.delete_row(artifact_id)
        await self.tags.detach_all(TAG_RESOURCE, [artifact.id])

    async def _with_tags(self, artifacts: Sequence[ScopedRow]) -> list[TaggedArtifact]:
        """Every artifact's tags (read rows carry their tags' ids) in one query."""
        tags = await self.tags.for_rows(artifacts)
        return [TaggedArtifact(a, t) for a, t in zip(artifacts, tags, strict=True)]
