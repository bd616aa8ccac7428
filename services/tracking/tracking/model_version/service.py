"""Business rules for model versions: numbering (unique and gapless: taken under the
model's row lock), names, stages and their promotion, tags; and the version a run's or
a step's configured model resolves to (made when it is new), as the reference does at
run and step creation."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import utcnow
from shared.errors import BadRequest, Conflict, NotFound, PlatformError
from shared.listing import Listing
from tracking.artifact.service import check_name
from tracking.core.errors import ScopedNotFound
from tracking.core.repository import new_row
from tracking.core.service import ScopedService
from tracking.model.repository import ModelRepository
from tracking.model.schemas import ModelRequest
from tracking.model.service import ModelService
from tracking.model_version.repository import (
    MODEL_VERSIONS,
    TAG_RESOURCE,
    ModelVersionRepository,
)
from tracking.model_version.schemas import (
    STAGES,
    ModelStages,
    ModelVersionListQuery,
    ModelVersionRequest,
    ModelVersionUpdate,
    VersionItem,
)
from tracking.models import Model, ModelVersion
from tracking.run_metadata.repository import RunMetadataRepository
from tracking.run_metadata.schemas import MetadataResourceTypes
from tracking.tag.service import TagService


class ModelVersionNotFound(ScopedNotFound):
    resource = "model version"


class ModelVersionAlreadyExists(Conflict):
    def __init__(self, model: str, version: str) -> None:
        super().__init__(
            f"Unable to create model version {model} (version {version}): A model with "
            "the same name and version already exists."
        )


class ModelVersionNameTaken(Conflict):
    def __init__(self, model: str, version: str) -> None:
        super().__init__(
            f"Unable to update model version {model} (version {version}): Found another "
            "existing model version with the same name."
        )


class VersionNotFound(NotFound):
    """A run's configured version that does not exist (the reference's KeyError)."""


class StageTaken(PlatformError):
    """Another version holds the stage and ``force`` is off: the reference's 500
    RuntimeError, which the client's ``zenml model version update`` catches to ask
    whether to force it."""

    def __init__(self, holder: str, stage: str) -> None:
        super().__init__(f"Model version {holder} is in {stage}, but `force` flag is False.")


def check_version_name(name: str) -> None:
    """The reference's rules for a version's own name (400)."""
    check_name(name, "ModelVersionRequest")
    if name.isnumeric():
        raise BadRequest("Can't create model version with custom numeric model version name.")
    if name.lower() in STAGES:
        raise BadRequest(
            "Can't create model version with a name that is used as a model version stage "
            f"({[stage.value for stage in ModelStages]})."
        )


class ModelVersionService(ScopedService[ModelVersion]):
    not_found = ModelVersionNotFound

    def __init__(self, session: AsyncSession) -> None:
        self.versions = ModelVersionRepository(session)
        super().__init__(session, self.versions)
        self.models = ModelRepository(session)
        self.tags = TagService(session)

    # --- reading --------------------------------------------------------------------------

    async def list_page(
        self, listing: Listing, query: ModelVersionListQuery
    ) -> tuple[int, list[VersionItem]]:
        """``query.model`` (name or id) scopes the list; a model the project lacks has
        no versions."""
        project = await self.project(query.project)
        if query.model is None:
            total, rows = await self.versions.page(
                MODEL_VERSIONS, listing, project.id, query.scope_user
            )
        else:
            # A model the project lacks (None) has no versions: `model_id = NULL` holds
            # for no row.
            model_id = await self._model_named(query.model, project.id)
            total, rows = await self.versions.page_of_model(
                listing, project.id, model_id, query.scope_user
            )
        return total, await self._items(rows, hydrate=listing.hydrate)

    async def _model_named(self, name_or_id: str, project_id: uuid.UUID) -> uuid.UUID | None:
        try:
            return uuid.UUID(name_or_id)
        except ValueError:
            return await self.models.id_named(project_id, name_or_id)

    async def get(self, version_id: uuid.UUID, *, hydrate: bool = True) -> VersionItem:
        (item,) = await self._items([await self.read_row(version_id)], hydrate=hydrate)
        return item

    async def items_of(self, version_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, VersionItem]:
        """The versions of ``version_ids`` that exist (body and resources), by id."""
        rows = await self.versions.read_many(set(version_ids))
        return {item.version.id: item for item in await self._items(rows, hydrate=False)}

    async def _items(self, rows: Sequence[Any], *, hydrate: bool) -> list[VersionItem]:
        """Every version's model and tags (hydrated: its metadata), one query each."""
        if not rows:
            return []
        models = await self.versions.models({row.model_id for row in rows})
        tags = await self.tags.for_rows(rows)
        metadata: dict[uuid.UUID, dict[str, Any]] = {}
        if hydrate:
            metadata = await RunMetadataRepository(self.session).values(
                MetadataResourceTypes.MODEL_VERSION, [row.id for row in rows]
            )
        return [
            VersionItem(row, models[row.model_id], t, metadata.get(row.id, {}))
            for row, t in zip(rows, tags, strict=True)
        ]

    # --- creating -------------------------------------------------------------------------

    async def create(
        self,
        request: ModelVersionRequest,
        user_id: uuid.UUID | None,
        project_name_or_id: str | None = None,
        model_id: uuid.UUID | None = None,
    ) -> VersionItem:
        """The deprecated path's project and model win over the body's."""
        project = await self.project(project_name_or_id or request.project)
        request.project = project.id
        if model_id is not None:
            request.model = model_id
        version_id = await self._create(request, user_id)
        return await self.get(version_id)

    async def _create(
        self,
        request: ModelVersionRequest,
        user_id: uuid.UUID | None,
        producer_run_id: uuid.UUID | None = None,
    ) -> uuid.UUID:
        """A new version numbered after the model's highest: the model's row is locked
        until the transaction ends, so concurrent creations number one after another."""
        if request.name:
            check_version_name(request.name)
        model = await self._locked_model(request.model)
        if request.name and await self.versions.find(model.id, name=request.name):
            raise ModelVersionAlreadyExists(model.name, request.name)
        number = await self.versions.next_number(model.id)
        version_id = uuid.uuid4()
        numeric = not request.name
        row = new_row(
            ModelVersion,
            id=version_id,
            project_id=model.project_id,
            model_id=model.id,
            name=request.name or str(number),
            number=number,
            description=request.description,
            stage=request.stage,
            producer_run_id_if_numeric=producer_run_id
            if producer_run_id and numeric
            else version_id,
            user_id=user_id,
        )
        await self.versions.insert(row, ModelVersionAlreadyExists(model.name, row.name))
        await self.tags.attach(TAG_RESOURCE, version_id, request.tags or [], user_id)
        return version_id

    async def _locked_model(self, model_id: uuid.UUID) -> Model:
        model = await self.models.lock(model_id)
        if model is None:
            raise NotFound(
                f"The model with ID {model_id} referenced by the model version being "
                "created was not found."
            )
        return model

    async def for_run(
        self,
        configured: dict[str, Any],
        substitutions: dict[str, str],
        producer_run_id: uuid.UUID,
        project_id: uuid.UUID,
        user_id: uuid.UUID | None,
    ) -> uuid.UUID:
        """The version a run's (or its step's) configured model names, as the reference
        resolves it when the run or step is created: the model is made when new; a
        number or a stage names an existing version (404 when none); a name names its
        version, made when new; no version: the run's own numbered version, made once
        per run."""
        name = _filled(str(configured.get("name") or ""), substitutions)
        fields = {k: configured.get(k) for k in ModelRequest.model_fields if k in configured}
        fields.update(name=name, project=project_id, tags=None)
        try:
            request = ModelRequest.model_validate(fields)
        except ValidationError as exc:
            raise BadRequest(f"The configured model is not valid: {exc}") from None
        model_id = await ModelService(self.session).get_or_create(request, user_id)
        version = configured.get("version")
        version_name = _filled(str(version), substitutions) if version is not None else None
        if version_name is not None and (version_name.isnumeric() or version_name in STAGES):
            return await self._configured(model_id, version_name)
        model = await self._locked_model(model_id)
        found = await self.versions.find(
            model.id,
            name=version_name,
            producer_run_id=producer_run_id if version_name is None else None,
        )
        if found is not None:
            return found
        try:
            version_request = ModelVersionRequest(
                project=project_id,
                model=model_id,
                name=version_name,
                description=configured.get("description"),
                tags=configured.get("tags"),
            )
        except ValidationError as exc:
            raise BadRequest(f"The configured model version is not valid: {exc}") from None
        return await self._create(version_request, user_id, producer_run_id)

    async def _configured(self, model_id: uuid.UUID, version: str) -> uuid.UUID:
        if version.isnumeric():
            found = await self.versions.find(model_id, number=int(version))
            error = f"No version with number {version} found for model {model_id}."
        elif version == ModelStages.LATEST:
            found = await self.versions.find(model_id)
            error = f"No {version} stage version found for model {model_id}."
        else:
            found = await self.versions.find(model_id, stage=version)
            error = f"No {version} stage version found for model {model_id}."
        if found is None:
            raise VersionNotFound(error)
        return found

    # --- changing -------------------------------------------------------------------------

    async def update(
        self, version_id: uuid.UUID, update: ModelVersionUpdate, user_id: uuid.UUID
    ) -> VersionItem:
        """A stage another version of the model holds moves here when ``force``d (the
        other one is archived), else a 500 as the reference's."""
        version = await self.get_row(version_id)
        if update.stage is not None:
            holder = await self.versions.in_stage(version.model_id, update.stage)
            if holder is not None and holder.id != version.id:
                if not update.force:
                    raise StageTaken(holder.name, update.stage)
                holder.stage = ModelStages.ARCHIVED.value
                holder.updated = utcnow()
                await self.session.flush()
            version.stage = update.stage
        if update.description is not None:
            version.description = update.description
        version.updated = utcnow()
        if update.name is not None and update.name != version.name:
            model = await self.models.get(version.model_id)
            assert model is not None
            version.name = update.name
            await self.versions.save(version, ModelVersionNameTaken(model.name, update.name))
        await self.tags.attach(TAG_RESOURCE, version.id, update.add_tags or [], user_id)
        await self.tags.detach(TAG_RESOURCE, version.id, update.remove_tags or [])
        await self.session.flush()
        return await self.get(version.id)

    async def delete(self, version_id: uuid.UUID) -> None:
        """The version and its links (cascade); its runs and steps keep going without
        one (set null), as the reference's."""
        await self.delete_row(version_id)
        await self.tags.detach_all(TAG_RESOURCE, [version_id])
        await RunMetadataRepository(self.session).delete_of(
            MetadataResourceTypes.MODEL_VERSION, [version_id]
        )


def _filled(template: str, substitutions: dict[str, str]) -> str:
    """A configured name with the run's substitutions (``{date}`` …) filled in; a name
    that cannot be filled stays as it is."""
    try:
        return template.format_map(substitutions)
    except (KeyError, IndexError, ValueError, AttributeError):
        return template
