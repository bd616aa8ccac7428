"""Business rules for artifact versions: numbering, the artifact they belong to, their
store, visualizations, metadata, tags, and when they may be deleted."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import flush_unique, new_id, utcnow
from shared.errors import BadRequest, Conflict, DoesNotExist, Forbidden, NotFound, PlatformError
from shared.listing import Listing
from tracking.artifact.service import ArtifactNotFound, check_name
from tracking.artifact_version.repository import (
    METADATA_RESOURCE,
    TAG_RESOURCE,
    ArtifactVersionRepository,
)
from tracking.artifact_version.schemas import (
    ArtifactVersionRequest,
    ArtifactVersionUpdate,
    LoadedVisualization,
    VersionItem,
    VisualizationType,
)
from tracking.core.schemas import ScopedListQuery
from tracking.models import Artifact, ArtifactVisualization, RunMetadata, StackComponent
from tracking.project.repository import ProjectRef
from tracking.project.scope import resolve_project_ref
from tracking.store import ARTIFACT_STORE, ArtifactStore, ArtifactStores, Entry
from tracking.tag.service import TagService


class VersionListQuery(ScopedListQuery):
    only_unused: bool = False


class ArtifactVersionNotFound(NotFound):
    def __init__(self, version_id: object) -> None:
        super().__init__(
            f"Unable to get artifact version with ID '{version_id}': "
            "No artifact version with this ID found"
        )


class VersionAlreadyExists(Conflict):
    def __init__(self, artifact_name: str, version: str, operation: str = "create") -> None:
        super().__init__(
            f"Unable to {operation} artifact version {artifact_name} (version {version}): "
            "An artifact with the same name and version already exists."
        )


class StoreNotFound(NotFound):
    def __init__(self, store_id: uuid.UUID) -> None:
        super().__init__(
            f"The artifact store with ID {store_id} referenced by the artifact version being "
            "created was not found"
        )


class NoArtifactStore(NotFound):
    def __init__(self, version_id: uuid.UUID) -> None:
        super().__init__(f"Artifact version {version_id} has no artifact store")


class VersionInUse(BadRequest):
    def __init__(self) -> None:
        super().__init__(
            "The metadata of artifact versions that are used in runs cannot be deleted. "
            "Please delete all runs that use this artifact version first."
        )


class DataNotDeleted(PlatformError):
    """The store failed to delete the data (the reference's 500 RuntimeError)."""


def version_number(version: str) -> int | None:
    try:
        return int(version)
    except ValueError:
        return None


@dataclass
class _Seen:
    """What one batch has already resolved."""

    projects: dict[uuid.UUID, ProjectRef] = field(default_factory=dict)
    artifacts: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    stores: set[uuid.UUID] = field(default_factory=set)


@dataclass(frozen=True)
class Download:
    """What the data endpoint streams: the entries of one version's data, as walked
    when their size was checked."""

    store: ArtifactStore
    entries: list[Entry]
    filename: str


class ArtifactVersionService:
    def __init__(self, session: AsyncSession, stores: ArtifactStores | None = None) -> None:
        """``stores`` opens artifact stores, for the methods that read or delete data."""
        self.session = session
        self.stores = stores
        self.repository = ArtifactVersionRepository(session)
        self.tags = TagService(session)

    # --- reading --------------------------------------------------------------------------

    async def list_page(
        self, listing: Listing, query: VersionListQuery
    ) -> tuple[int, list[VersionItem]]:
        project = await resolve_project_ref(self.session, query.project)
        total, rows = await self.repository.page(
            listing, project.id, query.scope_user, query.only_unused
        )
        return total, await self._items(rows, hydrate=listing.hydrate)

    async def get(self, version_id: uuid.UUID) -> VersionItem:
        row = await self.repository.read(version_id)
        if row is None:
            raise ArtifactVersionNotFound(version_id)
        (item,) = await self._items([row], hydrate=True)
        return item

    async def many(self, ids: Sequence[uuid.UUID]) -> list[VersionItem]:
        """The versions (body and resources) in ``ids``' order."""
        rows = {row.id: row for row in await self.repository.read_many(ids)}
        return await self._items([rows[i] for i in dict.fromkeys(ids) if i in rows], hydrate=False)

    async def _items(self, rows: Sequence[Any], *, hydrate: bool) -> list[VersionItem]:
        """Every version's artifact and tags (and, hydrated, visualizations and metadata),
        one query each for the whole page; their rendering shared (``VersionItem.memo``)."""
        if not rows:
            return []
        ids = [row.id for row in rows]
        artifacts = await self.repository.artifacts({row.artifact_id for row in rows})
        tags = await self.tags.for_resources(TAG_RESOURCE, ids)
        memo: dict[tuple[str, Any], Any] = {}
        if not hydrate:
            return [
                VersionItem(row, artifacts[row.artifact_id], tags.get(row.id, ()), memo=memo)
                for row in rows
            ]
        visualizations = await self.repository.visualizations(ids)
        metadata = await self.repository.run_metadata(ids)
        return [
            VersionItem(
                row,
                artifacts[row.artifact_id],
                tags.get(row.id, ()),
                visualizations.get(row.id, ()),
                {k: json.loads(v) for k, v in metadata.get(row.id, {}).items()},
                memo,
            )
            for row in rows
        ]

    # --- creating -------------------------------------------------------------------------

    async def create(self, request: ArtifactVersionRequest, user_id: uuid.UUID) -> VersionItem:
        version_id = await self._create(request, user_id)
        return await self.get(version_id)

    async def create_many(
        self, requests: Sequence[ArtifactVersionRequest], user_id: uuid.UUID
    ) -> list[VersionItem]:
        """All in the request's one transaction: any failure leaves none created. Projects,
        artifacts and stores named again in the batch are looked up (and locked) once."""
        seen = _Seen()
        ids = [await self._create(request, user_id, seen) for request in requests]
        rows = {row.id: row for row in await self.repository.read_many(ids)}
        return await self._items([rows[i] for i in ids], hydrate=True)

    async def _create(
        self, request: ArtifactVersionRequest, user_id: uuid.UUID, seen: _Seen | None = None
    ) -> uuid.UUID:
        seen = seen or _Seen()
        project = seen.projects.get(request.project)
        if project is None:
            project = await resolve_project_ref(self.session, request.project)
            seen.projects[request.project] = project
        key = (project.id, request.artifact_id, request.artifact_name, request.has_custom_name)
        artifact = seen.artifacts.get(key)
        if artifact is None:
            artifact = await self._artifact_for(request, project, user_id)
            seen.artifacts[key] = artifact
        store_id = request.artifact_store_id
        if store_id is not None and store_id not in seen.stores:
            await self._check_store(store_id)
            seen.stores.add(store_id)
        if request.version is None:
            number: int | None = await self.repository.next_number(artifact.id)
            version = str(number)
        else:
            version = str(request.version)
            number = version_number(version)
        now = utcnow()
        version_id = new_id()
        await self.repository.insert_version(
            {
                "id": version_id,
                "project_id": project.id,
                "artifact_id": artifact.id,
                "version": version,
                "version_number": number,
                "type": request.type,
                "uri": request.uri,
                "materializer": request.materializer.model_dump_json(),
                "data_type": request.data_type.model_dump_json(),
                "save_type": request.save_type,
                "artifact_store_id": request.artifact_store_id,
                "content_hash": request.content_hash,
                "item_count": request.item_count,
                "user_id": user_id,
                "created": now,
                "updated": now,
            },
            VersionAlreadyExists(artifact.name, version),
        )
        await self.repository.insert_rows(
            ArtifactVisualization,
            [
                {
                    "id": new_id(),
                    "artifact_version_id": version_id,
                    "position": position,
                    "type": visualization.type,
                    "uri": visualization.uri,
                    "created": now,
                    "updated": now,
                }
                for position, visualization in enumerate(request.visualizations or [])
            ],
        )
        await self.repository.insert_rows(
            RunMetadata,
            [
                {
                    "id": new_id(),
                    "resource_type": METADATA_RESOURCE,
                    "resource_id": version_id,
                    "key": key,
                    "value": json.dumps(value),
                    "user_id": user_id,
                    "created": now,
                }
                for key, value in (request.metadata or {}).items()
            ],
        )
        await self.tags.attach(TAG_RESOURCE, version_id, request.tags or [], user_id)
        return version_id

    async def _artifact_for(
        self, request: ArtifactVersionRequest, project: ProjectRef, user_id: uuid.UUID
    ) -> Any:
        """The version's artifact, locked (see ``lock_artifact``); a name not taken yet
        creates it (a concurrent request creating the same one is harmless)."""
        if request.artifact_id is not None:
            artifact_id = request.artifact_id
        else:
            name = request.artifact_name or ""
            check_name(name, "ArtifactRequest")
            await self._ensure_artifact(project, name, request.has_custom_name, user_id)
            found = await self.repository.artifact_by_name(project.id, name)
            if found is None:  # deleted by a concurrent request since
                raise NotFound(f"Unable to get artifact with name '{name}'.")
            artifact_id = found
        artifact = await self.repository.lock_artifact(artifact_id)
        if artifact is None or artifact.project_id != project.id:
            raise ArtifactNotFound(artifact_id)
        if request.has_custom_name and not artifact.has_custom_name:
            row = await self.session.get(Artifact, artifact.id)
            assert row is not None
            row.has_custom_name = True
            await self.session.flush()
        return artifact

    async def _ensure_artifact(
        self, project: ProjectRef, name: str, custom: bool, user_id: uuid.UUID
    ) -> None:
        now = utcnow()
        values = {
            "id": new_id(),
            "project_id": project.id,
            "name": name,
            "has_custom_name": custom,
            "user_id": user_id,
            "created": now,
            "updated": now,
        }
        await self.repository.insert_artifact_if_new(values)

    async def _check_store(self, store_id: uuid.UUID) -> StackComponent:
        component = await self.session.get(StackComponent, store_id)
        if component is None:
            raise StoreNotFound(store_id)
        if component.type != ARTIFACT_STORE:
            raise BadRequest(
                f"The stack component with ID {store_id} is a {component.type}, "
                "not an artifact store."
            )
        return component

    # --- changing -------------------------------------------------------------------------

    async def update(
        self, version_id: uuid.UUID, update: ArtifactVersionUpdate, user_id: uuid.UUID
    ) -> VersionItem:
        version = await self.repository.get(version_id)
        if version is None:
            raise ArtifactVersionNotFound(version_id)
        version.updated = utcnow()
        if update.name and update.name != version.version:
            artifact = await self.session.get(Artifact, version.artifact_id)
            assert artifact is not None
            clash = VersionAlreadyExists(artifact.name, update.name, "update")
            version.version = update.name
            version.version_number = version_number(update.name)
            self.session.add(version)
            await flush_unique(self.session, clash)
        await self.tags.attach(TAG_RESOURCE, version_id, update.add_tags or [], user_id)
        await self.tags.detach(TAG_RESOURCE, version_id, update.remove_tags or [])
        await self.session.flush()
        return await self.get(version_id)

    async def delete(
        self,
        version_id: uuid.UUID,
        *,
        delete_metadata: bool = True,
        delete_from_store: bool = False,
    ) -> None:
        """The rules: metadata only of a version no run uses; data only from its store.
        Everything is checked before anything is deleted."""
        version = await self.repository.read(version_id)
        if version is None:
            raise ArtifactVersionNotFound(version_id)
        if delete_metadata and await self.repository.used(version_id):
            raise VersionInUse()
        store: ArtifactStore | None = None
        if delete_from_store:
            if version.artifact_store_id is None:
                raise BadRequest("Artifact version has no artifact store, cannot delete data.")
            store = await self._store(version.artifact_store_id, version_id)
            await store.check(version.uri)  # 403 before anything goes when it leaves the root
        if delete_metadata:
            await self.tags.detach_all(TAG_RESOURCE, [version_id])
            await self.repository.delete_versions([version_id])
            await self.session.flush()
        if store is not None:
            try:
                await store.delete(version.uri)
            except OSError as exc:
                raise DataNotDeleted(
                    f"Artifact data at '{version.uri}' could not be deleted. "
                    f"Check the artifact store's permissions: {exc.strerror or exc}"
                ) from None

    async def prune(self, project_name_or_id: str, *, only_versions: bool) -> None:
        """Delete the project's versions no run uses (metadata only: the store is never
        touched), then, unless ``only_versions``, the project's artifacts left without
        versions."""
        project = await resolve_project_ref(self.session, project_name_or_id)
        unused = await self.repository.unused_in(project.id)
        await self.tags.detach_all(TAG_RESOURCE, unused)
        await self.repository.delete_versions(unused)
        if not only_versions:
            empty = await self.repository.empty_artifacts(project.id)
            await self.tags.detach_all("artifact", empty)
            await self.repository.delete_artifacts(empty)
        await self.session.flush()

    # --- data -----------------------------------------------------------------------------

    async def _store(self, store_id: uuid.UUID, version_id: uuid.UUID) -> ArtifactStore:
        component = await self.session.get(StackComponent, store_id)
        if component is None:
            raise NoArtifactStore(version_id)
        if self.stores is None:
            raise RuntimeError("this ArtifactVersionService was made without stores")
        return await self.stores.open(component, self.session)

    async def _version_store(self, version_id: uuid.UUID) -> tuple[Any, ArtifactStore]:
        version = await self.repository.read(version_id)
        if version is None:
            raise ArtifactVersionNotFound(version_id)
        if version.artifact_store_id is None:
            raise NoArtifactStore(version_id)
        return version, await self._store(version.artifact_store_id, version_id)

    async def visualize(self, version_id: uuid.UUID, index: int, limit: int) -> BaseModel:
        _, store = await self._version_store(version_id)
        visualizations = (await self.repository.visualizations([version_id])).get(version_id, [])
        if not visualizations:
            raise DoesNotExist(f"Artifact '{version_id}' has no visualizations.")
        if not 0 <= index < len(visualizations):
            raise DoesNotExist(
                f"Artifact '{version_id}' only has {len(visualizations)} visualizations, "
                f"but index {index} was requested."
            )
        chosen = visualizations[index]
        data = await store.read_bytes(chosen.uri, limit)
        kind = VisualizationType(chosen.type)
        if kind is VisualizationType.IMAGE:
            value = base64.b64encode(data).decode()
        else:
            value = data.decode("utf-8", errors="replace")
        return LoadedVisualization(type=kind, value=value)

    async def download(self, version_id: uuid.UUID, limit: int) -> Download:
        """The version's data, checked: in its store, present, at most ``limit`` bytes."""
        version, store = await self._version_store(version_id)
        # One walk both finds the data (nothing there: no member) and sizes it; on S3 a
        # separate existence check repeated the walk's HEAD and LIST requests.
        entries = [entry async for entry in store.walk(version.uri)]
        if not entries:
            raise NotFound(f"The artifact URI '{version.uri}' does not exist.")
        size = sum(entry.size for entry in entries)
        if size > limit:
            raise Forbidden(
                f"The artifact '{version.uri}' is too large to be downloaded "
                f"({size} bytes; the limit is {limit} bytes)."
            )
        artifacts = await self.repository.artifacts([version.artifact_id])
        name = artifacts[version.artifact_id].name
        return Download(store, entries, f"{name}-{version.version}.tar.gz")
