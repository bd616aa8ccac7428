"""Business rules for a model version's links: made once (asking again answers the
link there is), listed, and deleted one by one (by id or by the linked resource's name)
or all at once, optionally with the linked artifact versions."""

from __future__ import annotations

import uuid
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.errors import NotFound
from shared.listing import Listing
from tracking.artifact_version.repository import TAG_RESOURCE as VERSION_TAG_RESOURCE
from tracking.artifact_version.repository import ArtifactVersionRepository
from tracking.artifact_version.schemas import version_response
from tracking.artifact_version.service import ArtifactVersionNotFound, ArtifactVersionService
from tracking.model_version.service import ModelVersionService
from tracking.model_version_link.repository import (
    ARTIFACT_LINK,
    RUN_LINK,
    LinkKind,
    LinkRepository,
    artifact_kinds,
)
from tracking.model_version_link.schemas import ArtifactLinkListQuery, LinkItem
from tracking.pipeline_run.schemas import run_response
from tracking.pipeline_run.service import RunNotFound, RunService
from tracking.tag.service import TagService


class LinkNotFound(NotFound):
    def __init__(self, name_or_id: str, what: str = "name or ID") -> None:
        super().__init__(
            f"Unable to delete model version link with {what} `{name_or_id}`: No model "
            "version link with this name found."
        )


class LinkService:
    def __init__(self, session: AsyncSession, kind: LinkKind) -> None:
        self.session = session
        self.kind = kind
        self.links = LinkRepository(session, kind)
        self.versions = ModelVersionService(session)

    async def create(
        self, model_version_id: uuid.UUID, target_id: uuid.UUID
    ) -> tuple[LinkItem, bool]:
        """The link (404 when either end does not exist) and whether it is new (the
        reference answers a new one hydrated, one already there not)."""
        await self.versions.get_row(model_version_id)
        (target,) = await self._targets([target_id], missing_raises=True)
        made = await self.links.insert_new(model_version_id, target_id)
        link = await self.links.find(model_version_id, target_id)
        return LinkItem(link, target, self._field), made

    async def list_page(
        self, listing: Listing, query: ArtifactLinkListQuery | None = None
    ) -> tuple[int, list[LinkItem]]:
        scope = []
        if query is not None:
            scope = artifact_kinds(
                data=query.only_data_artifacts,
                model=query.only_model_artifacts,
                deployment=query.only_deployment_artifacts,
                custom_name=query.has_custom_name,
            )
        total, rows = await self.links.page(listing, scope)
        targets = await self._targets([getattr(row, self.kind.target) for row in rows])
        return total, [
            LinkItem(row, target, self._field) for row, target in zip(rows, targets, strict=True)
        ]

    async def delete(self, model_version_id: uuid.UUID, name_or_id: str) -> None:
        await self.versions.get_row(model_version_id)
        if not await self.links.delete_one(model_version_id, name_or_id):
            what = "name or ID" if self.kind is ARTIFACT_LINK else "name"
            raise LinkNotFound(name_or_id, what)

    async def delete_all(self, model_version_id: uuid.UUID, *, only_links: bool) -> None:
        """Every link of the version; not ``only_links``: the linked artifact versions
        too (with their tags and metadata), as the reference."""
        await self.versions.get_row(model_version_id)
        if not only_links:
            ids = await self.links.targets(model_version_id)
            await TagService(self.session).detach_all(VERSION_TAG_RESOURCE, ids)
            await ArtifactVersionRepository(self.session).delete_versions(ids)
        await self.links.delete_all(model_version_id)

    @property
    def _field(self) -> str:
        return "artifact_version" if self.kind is ARTIFACT_LINK else "pipeline_run"

    async def _targets(
        self, ids: list[uuid.UUID], *, missing_raises: bool = False
    ) -> list[dict[str, Any] | None]:
        """The linked resources rendered as the reference nests them (body only)."""
        if self.kind is ARTIFACT_LINK:
            versions = {
                i.version.id: i for i in await ArtifactVersionService(self.session).many(ids)
            }
            rendered = {k: version_response(v, False, None) for k, v in versions.items()}
        else:
            runs = {i.run.id: i for i in await RunService(self.session).items_of(ids)}
            rendered = {k: run_response(v, False, None) for k, v in runs.items()}
        if missing_raises and (absent := [i for i in ids if i not in rendered]):
            if self.kind is ARTIFACT_LINK:
                raise ArtifactVersionNotFound(absent[0])
            raise RunNotFound(absent[0])
        return [rendered[i] | {"resources": None} if i in rendered else None for i in ids]


def artifact_links(session: AsyncSession) -> LinkService:
    return LinkService(session, ARTIFACT_LINK)


def run_links(session: AsyncSession) -> LinkService:
    return LinkService(session, RUN_LINK)
