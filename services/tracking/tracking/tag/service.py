"""Tags and tags on resources: create, read, change and delete tags; attach and detach
them (by name, or by id as ``/tag_resources`` does), with exclusive tags on one resource
of a scope only; read them in bulk (the filters and sort keys by tags are the
repository's: :func:`tracking.tag.repository.tags_field`)."""

from __future__ import annotations

import hashlib
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import flush_unique, utcnow
from shared.errors import BadRequest, Conflict, NotFound
from shared.listing import Listing
from tracking.core.errors import ScopedNotFound
from tracking.models import Tag
from tracking.tag.repository import TAGGABLE, TagRepository
from tracking.tag.schemas import (
    ColorVariants,
    TaggableResourceTypes,
    TagListQuery,
    TagRequest,
    TagResourceRequest,
    TagRow,
    TagSpec,
    TagUpdate,
)

_COLORS = list(ColorVariants)


def tag_color(name: str) -> ColorVariants:
    """A tag's colour follows from its name (the reference picks one at random: a defect),
    so the same tag looks the same everywhere and every time."""
    digest = hashlib.sha256(name.encode()).digest()
    return _COLORS[digest[0] % len(_COLORS)]


# The reference's forbidden characters in names (``BANNED_NAME_CHARACTERS``).
_BANNED = frozenset("\t\n\r\v\f")


class TagNotFound(ScopedNotFound):
    resource = "tag"


class TagAlreadyExists(Conflict):
    def __init__(self, name: str) -> None:
        super().__init__(f"Tag with name `{name}` already exists.")


class TaggedResourceNotFound(NotFound):
    def __init__(self, resource_type: TaggableResourceTypes, resource_id: uuid.UUID) -> None:
        super().__init__(f"{resource_type.value} with ID `{resource_id}` not found.")


class ExclusiveTagRefused(BadRequest):
    pass


def _as_id(tag: str) -> uuid.UUID | None:
    """The id a tag given as a string stands for, if the string is a UUID (the reference
    looks such a tag up by id, never by name)."""
    try:
        return uuid.UUID(tag)
    except ValueError:
        return None


def _check_name(name: str) -> None:
    if found := _BANNED.intersection(name):
        raise BadRequest(
            f"The name `{name}` of the `Tag` contains the following forbidden "
            f"characters: `{''.join(sorted(found))!r}`."
        )


class TagService:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.repository = TagRepository(session)

    async def list_page(self, listing: Listing, query: TagListQuery) -> tuple[int, list[Any]]:
        return await self.repository.page(listing, query.scope_user)

    async def get(self, tag_id: uuid.UUID) -> Any:
        row = await self.repository.read(tag_id)
        if row is None:
            raise TagNotFound(tag_id)
        return row

    async def _tag(self, tag_id: uuid.UUID) -> Tag:
        tag = await self.repository.get(tag_id)
        if tag is None:
            raise TagNotFound(tag_id)
        return tag

    async def create(self, request: TagRequest, user_id: uuid.UUID) -> Any:
        _check_name(request.name)
        tag = Tag(
            name=request.name,
            color=request.color or tag_color(request.name),
            exclusive=request.exclusive,
            user_id=user_id,
        )
        self.session.add(tag)
        await flush_unique(self.session, TagAlreadyExists(request.name))
        return await self.get(tag.id)

    async def update(self, tag_id: uuid.UUID, update: TagUpdate) -> Any:
        """Fields sent and not null change. A tag becomes exclusive only while it is on
        resources an exclusive tag may be on, one per scope."""
        tag = await self._tag(tag_id)
        if update.exclusive and not tag.exclusive:
            await self._check_exclusive(tag)
        if update.name is not None and update.name != tag.name:
            _check_name(update.name)
            tag.name = update.name
        if update.exclusive is not None:
            tag.exclusive = update.exclusive
        if update.color is not None:
            tag.color = update.color
        tag.updated = utcnow()
        self.session.add(tag)
        await flush_unique(self.session, TagAlreadyExists(tag.name))
        return await self.get(tag_id)

    async def _check_exclusive(self, tag: Tag) -> None:
        allowed = {kind for kind, taggable in TAGGABLE.items() if taggable.exclusive_on_update}
        allowed.add(TaggableResourceTypes.RUN_TEMPLATE)
        errors = []
        if others := await self.repository.other_types(tag.id, allowed):
            errors.append(
                f"The tag `{tag.name}` cannot be made exclusive because it is associated "
                f"with non-allowed resource types: {', '.join(others)}. Exclusive tags can "
                "only be applied to pipeline runs, artifact versions, and run templates."
            )
        for kind in sorted(allowed - {TaggableResourceTypes.RUN_TEMPLATE}):
            if shared := await self.repository.shared_scopes(tag.id, kind):
                errors.append(
                    f"The tag `{tag.name}` is associated with multiple entries of "
                    f"`{kind.value}`s that share the same scope: {[str(s) for s in shared]}"
                )
        if errors:
            raise ExclusiveTagRefused(
                "\n".join(errors) + "\nYou can only convert a tag into an exclusive tag if "
                "the conflicts mentioned above are resolved."
            )

    async def delete(self, tag_id: uuid.UUID) -> None:
        """The tag goes with its links (the foreign key cascades)."""
        tag = await self._tag(tag_id)
        await self.session.delete(tag)
        await self.session.flush()

    async def link(self, requests: Sequence[TagResourceRequest]) -> list[Any]:
        """Put tags (by id) on resources; links already there stay as they are. Every tag
        and resource must exist (404 otherwise)."""
        if not requests:
            return []
        tags = {tag.id: tag for tag in await self._tags({r.tag_id for r in requests})}
        wanted: dict[TaggableResourceTypes, set[uuid.UUID]] = defaultdict(set)
        for request in requests:
            wanted[request.resource_type].add(request.resource_id)
        for kind, ids in wanted.items():
            found = await self.repository.existing(kind, ids)
            for request in requests:
                if request.resource_type is kind and request.resource_id not in found:
                    raise TaggedResourceNotFound(kind, request.resource_id)
        now = utcnow()
        links = list(dict.fromkeys((r.tag_id, r.resource_type, r.resource_id) for r in requests))
        await self.repository.insert_links(
            [
                {
                    "tag_id": tag_id,
                    "resource_id": resource_id,
                    "resource_type": kind.value,
                    "created": now,
                }
                for tag_id, kind, resource_id in links
            ]
        )
        exclusive: dict[tuple[uuid.UUID, TaggableResourceTypes], list[uuid.UUID]] = defaultdict(
            list
        )
        for tag_id, kind, resource_id in links:
            if tags[tag_id].exclusive:
                exclusive[(tag_id, kind)].append(resource_id)
        for (tag_id, kind), resource_ids in exclusive.items():
            await self._keep_exclusive(tag_id, kind, resource_ids)
        return await self._links(links)

    async def _tags(self, tag_ids: set[uuid.UUID]) -> list[Tag]:
        found = await self.repository.tags_by_id(tag_ids)
        missing = tag_ids - {tag.id for tag in found}
        if missing:
            raise TagNotFound(min(missing))
        return found

    async def _keep_exclusive(
        self, tag_id: uuid.UUID, kind: TaggableResourceTypes, resource_ids: Sequence[uuid.UUID]
    ) -> None:
        """An exclusive tag just put on ``resource_ids`` leaves the other resources of
        their scopes; two of them in one scope are refused."""
        taggable = TAGGABLE.get(kind)
        if taggable is None or taggable.scope is None:
            raise ExclusiveTagRefused(
                f"Can not attach exclusive tag to resource of type {kind.value} with ID: "
                f"`{resource_ids[0]}`. Exclusive tag functionality only works for pipeline "
                "runs, pipeline snapshots, pipeline deployments and artifact versions"
            )
        scopes = await self.repository.scopes(kind, set(resource_ids))
        seen: set[uuid.UUID] = set()
        for resource_id in resource_ids:
            scope = scopes.get(resource_id)
            if scope is None:
                continue
            if scope in seen:
                raise ExclusiveTagRefused(
                    f"You are trying to attach an exclusive tag to multiple {kind.value}s "
                    "within the same scope. This is not allowed."
                )
            seen.add(scope)
            await self.repository.detach_others_in_scope(tag_id, kind, resource_id, scope)

    async def _links(
        self, links: Sequence[tuple[uuid.UUID, TaggableResourceTypes, uuid.UUID]]
    ) -> list[Any]:
        """The links as stored, in the order asked."""
        tag_ids = {tag_id for tag_id, _, _ in links}
        stored = {
            (row.tag_id, row.resource_type, row.resource_id): row
            for row in await self.repository.links_of_tags(tag_ids)
        }
        return [
            stored[(tag_id, kind.value, resource_id)]
            for tag_id, kind, resource_id in links
            if (tag_id, kind.value, resource_id) in stored
        ]

    async def unlink(self, requests: Sequence[TagResourceRequest]) -> None:
        """Take tags (by id) off resources; a link that is not there is skipped."""
        for request in dict.fromkeys(
            (r.tag_id, r.resource_type.value, r.resource_id) for r in requests
        ):
            tag_id, kind, resource_id = request
            await self.repository.delete_link(tag_id, kind, resource_id)
        await self.session.flush()

    async def attach(
        self,
        resource_type: str,
        resource_id: uuid.UUID,
        names: Iterable[str | TagSpec],
        user_id: uuid.UUID | None,
    ) -> list[Tag]:
        """Tag a resource, creating the tags that do not exist yet (a :class:`TagSpec`'s
        with its colour and exclusivity); returns its new tags. A string that is a UUID
        names an existing tag by its id (404 if there is none), as in the reference. A
        spec whose exclusivity differs from its existing tag's is refused (400), as the
        reference refuses it.

        Safe under concurrency: two requests introducing the same tag both succeed.
        """
        names = list(names)
        by_id = [tag_id for tag in names if isinstance(tag, str) and (tag_id := _as_id(tag))]
        given = [
            TagSpec(name=tag) if isinstance(tag, str) else tag
            for tag in names
            if tag and not (isinstance(tag, str) and _as_id(tag))
        ]
        specs = {spec.name: spec for spec in given if spec.name}
        checked = {tag.name for tag in names if isinstance(tag, TagSpec)}
        wanted = list(specs)
        if not wanted and not by_id:
            return []
        now = utcnow()
        if specs:
            await self.repository.insert_new_tags(
                [
                    {
                        "id": uuid.uuid4(),
                        "name": name,
                        "color": spec.color or tag_color(name),
                        "exclusive": bool(spec.exclusive),
                        "user_id": user_id,
                        "created": now,
                        "updated": now,
                    }
                    for name, spec in specs.items()
                ]
            )
        tags = await self.repository.tags_named(wanted, by_id)
        if missing := [tag_id for tag_id in by_id if tag_id not in {tag.id for tag in tags}]:
            raise TagNotFound(missing[0])
        for tag in tags:
            if tag.name in checked and bool(specs[tag.name].exclusive) != tag.exclusive:
                raise BadRequest(
                    f"Tag `{tag.name}` has been defined as "
                    f"{'an exclusive' if tag.exclusive else 'a non-exclusive'} tag. Please "
                    "update it before attaching it to resources."
                )
        await self.repository.insert_links(
            [
                {
                    "tag_id": tag.id,
                    "resource_id": resource_id,
                    "resource_type": resource_type,
                    "created": now,
                }
                for tag in tags
            ]
        )
        for tag in tags:
            if tag.exclusive:
                kind = TaggableResourceTypes(resource_type)
                await self._keep_exclusive(tag.id, kind, [resource_id])
        return sorted(tags, key=lambda tag: tag.name)

    async def detach(
        self, resource_type: str, resource_id: uuid.UUID, names: Iterable[str]
    ) -> None:
        """Take tags off a resource: each given by its name or, a UUID, by its id (as the
        reference finds them); a tag not there is skipped."""
        names = list(names)
        if not names:
            return
        ids = [tag_id for name in names if (tag_id := _as_id(name))]
        by_name = [name for name in names if not _as_id(name)]
        await self.repository.delete_links_named(resource_type, resource_id, by_name, ids)
        await self.session.flush()

    async def detach_all(self, resource_type: str, resource_ids: Iterable[uuid.UUID]) -> None:
        await self.repository.delete_all_links(resource_type, list(resource_ids))

    async def for_resources(
        self, resource_type: str, resource_ids: Iterable[uuid.UUID]
    ) -> dict[uuid.UUID, list[TagRow]]:
        """Each resource's tags (their columns, to render), sorted by name."""
        ids = list(resource_ids)
        found: dict[uuid.UUID, list[TagRow]] = defaultdict(list)
        if not ids:
            return found
        for row in await self.repository.tags_of_resources(resource_type, ids):
            found[row.resource_id].append(row)
        return found

    async def for_rows(self, rows: Sequence[Any]) -> list[list[TagRow]]:
        """Each row's tags, sorted by name, from its :func:`tag_ids_column`: one query for
        the distinct tags of the whole page (a few rows, whatever the page's size)."""
        listed = [row.tag_ids.split(",") if row.tag_ids else [] for row in rows]
        keys = {key: uuid.UUID(key) for key in {key for ids in listed for key in ids}}
        if not keys:
            return [[] for _ in rows]
        tags = {row.id: row for row in await self.repository.tag_rows(set(keys.values()))}
        return [
            sorted((tags[keys[key]] for key in ids if keys[key] in tags), key=_tag_name)
            for ids in listed
        ]


def _tag_name(tag: TagRow) -> str:
    return tag.name
