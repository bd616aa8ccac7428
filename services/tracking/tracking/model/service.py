"""Business rules for models: names, tags, and the project they live in."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import utcnow
from shared.errors import NotFound
from shared.listing import Listing
from tracking.artifact.service import check_name
from tracking.core.errors import NameTaken, ScopedNotFound
from tracking.core.repository import new_row
from tracking.core.rows import ScopedRow
from tracking.core.schemas import ScopedListQuery
from tracking.core.service import ScopedService
from tracking.model.repository import MODELS, TAG_RESOURCE, ModelRepository, TaggedModel
from tracking.model.schemas import ModelFields, ModelRequest, ModelUpdate
from tracking.models import Model
from tracking.project.repository import ProjectRef
from tracking.run_metadata.repository import RunMetadataRepository
from tracking.run_metadata.schemas import MetadataResourceTypes
from tracking.tag.service import TagService

VERSION_TAG_RESOURCE = "model_version"


class ModelNotFound(ScopedNotFound):
    resource = "model"


class ModelAlreadyExists(NameTaken):
    resource = "model"


class ModelNameNotFound(NotFound):
    def __init__(self, name: str, project: str) -> None:
        super().__init__(f"No model with name '{name}' found in the '{project}' project.")


class ModelService(ScopedService[Model]):
    not_found = ModelNotFound
    name_taken = ModelAlreadyExists

    def __init__(self, session: AsyncSession) -> None:
        self.models = ModelRepository(session)
        super().__init__(session, self.models)
        self.tags = TagService(session)

    async def list_page(
        self, listing: Listing, query: ScopedListQuery
    ) -> tuple[int, list[TaggedModel]]:
        total, rows = await self.list_rows(MODELS, listing, query)
        return total, await self._with_tags(rows)

    async def get(self, model_id: uuid.UUID) -> TaggedModel:
        (item,) = await self._with_tags([await self.read_row(model_id)])
        return item

    async def id_of(self, name_or_id: str, project: ProjectRef) -> uuid.UUID:
        """The model a path names, by id or by name in ``project`` (404 when none)."""
        try:
            model_id = uuid.UUID(name_or_id)
        except ValueError:
            found = await self.models.id_named(project.id, name_or_id)
            if found is None:
                raise ModelNameNotFound(name_or_id, project.name) from None
            return found
        await self.get_row(model_id)
        return model_id

    async def create(self, request: ModelRequest, user_id: uuid.UUID) -> TaggedModel:
        """Into ``request.project_ref()`` (a workspace path's project wins)."""
        check_name(request.name, "ModelRequest")
        project = await self.project(request.project_ref())
        model = new_row(
            Model,
            project_id=project.id,
            name=request.name,
            save_models_to_registry=request.save_models_to_registry,
            user_id=user_id,
            **request.model_dump(include=set(ModelFields.model_fields)),
        )
        await self.insert(model, project)
        if not request.tags:
            return TaggedModel(model)
        await self.tags.attach(TAG_RESOURCE, model.id, request.tags, user_id)
        return await self.get(model.id)

    async def get_or_create(self, request: ModelRequest, user_id: uuid.UUID | None) -> uuid.UUID:
        """The model of that name in the request's project, made when there is none
        (a run's configured model); safe when two runs make it at once."""
        project = await self.project(request.project)
        found = await self.models.id_named(project.id, request.name)
        if found is not None:
            return found
        check_name(request.name, "ModelRequest")
        values = request.model_dump(include={*ModelFields.model_fields, "name"})
        await self.models.insert_if_new(
            new_row(
                Model,
                project_id=project.id,
                save_models_to_registry=request.save_models_to_registry,
                user_id=user_id,
                **values,
            )
        )
        made = await self.models.id_named(project.id, request.name)
        assert made is not None
        return made

    async def update(
        self, model_id: uuid.UUID, update: ModelUpdate, user_id: uuid.UUID
    ) -> TaggedModel:
        """As the reference: the fields given (not null) replace the model's."""
        model = await self.get_row(model_id)
        for field, value in update.model_dump(
            include={*ModelFields.model_fields, "save_models_to_registry"}, exclude_none=True
        ).items():
            setattr(model, field, value)
        model.updated = utcnow()
        if update.name:
            check_name(update.name, "ModelUpdate")
            await self.rename(model, update.name)
        await self.tags.attach(TAG_RESOURCE, model.id, update.add_tags or [], user_id)
        await self.tags.detach(TAG_RESOURCE, model.id, update.remove_tags or [])
        await self.session.flush()
        return await self.get(model.id)

    async def delete(self, model_id: uuid.UUID) -> None:
        """The model with its versions, their tags, metadata and links (cascades); runs
        and steps keep going without a model version (set null), as the reference."""
        version_ids = await self.models.version_ids(model_id)
        await self.tags.detach_all(VERSION_TAG_RESOURCE, version_ids)
        await RunMetadataRepository(self.session).delete_of(
            MetadataResourceTypes.MODEL_VERSION, version_ids
        )
        model = await self.delete_row(model_id)
        await self.tags.detach_all(TAG_RESOURCE, [model.id])

    async def _with_tags(self, models: Sequence[ScopedRow]) -> list[TaggedModel]:
        tags = await self.tags.for_rows(models)
        return [TaggedModel(m, t) for m, t in zip(models, tags, strict=True)]
