"""What every named, project-scoped resource shares (artifacts, code repositories): the
request base, the response envelope, the list parameters and scope, the not-found and
name-clash errors, and a repository and service base that enforce them.

It lives here because artifacts were the first such resource; it belongs in
``tracking.core`` once a third resource (pipelines, deployments …) needs it.
"""

from __future__ import annotations

import datetime as dt
import functools
import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, ClassVar, Generic, Protocol, TypeVar, get_args

from pydantic import BaseModel, ConfigDict
from pydantic_core import PydanticUndefined
from sqlalchemy import Insert, Select, Table, bindparam
from sqlalchemy import insert as sa_insert
from sqlalchemy import select as sa_select
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession
from starlette.requests import Request
from starlette.responses import Response

from shared.auth import ScopeKind
from shared.db import core_execute, flush_unique, prepared, transaction
from shared.errors import Conflict, NotFound
from shared.listing import (
    Field,
    Kind,
    Listing,
    ListSpec,
    SortKey,
    base_fields,
    column_field,
    fetch_page,
    page_of,
    read_list,
)
from shared.pagination import Page
from shared.responses import render, render_null
from shared.routing import ApiRoute, Handler, api_route, parse_json, parse_query, path_param
from shared.shapes import Builders, Shape, compile_builder
from shared.types import wire_timestamp
from shared.users import NestedUser, user_field, users_by_id
from tracking.core.auth import USER_TOKEN_KINDS, caller, caller_id, object_caller
from tracking.core.schemas import HydrateQuery
from tracking.project.repository import ProjectRef
from tracking.project.scope import resolve_project_ref


class ScopedRow(Protocol):
    """The columns a named, project-scoped table has."""

    id: uuid.UUID
    project_id: uuid.UUID
    name: str
    user_id: uuid.UUID | None

    # Read-only here: a read row's are already in their wire form (see
    # ScopedRepository._columns), an instance's are datetimes.
    @property
    def created(self) -> dt.datetime | str: ...

    @property
    def updated(self) -> dt.datetime | str: ...


Row = TypeVar("Row", bound=ScopedRow)
Found = TypeVar("Found", covariant=True)
Body = TypeVar("Body", bound=BaseModel)
Metadata = TypeVar("Metadata", bound=BaseModel)
Resources = TypeVar("Resources", bound=BaseModel)


class ScopedRequest(BaseModel):
    """``user`` is accepted and ignored (the caller's token decides); unknown keys too."""

    model_config = ConfigDict(extra="ignore")

    user: uuid.UUID | None = None
    project: uuid.UUID


class NamedResponse(BaseModel, Generic[Body, Metadata, Resources]):
    """The reference's envelope, keys in its order; ``metadata`` only when hydrated."""

    body: Body | None = None
    metadata: Metadata | None = None
    resources: Resources | None = None
    id: uuid.UUID
    permission_denied: bool = False
    name: str


Envelope = TypeVar("Envelope", bound=NamedResponse[Any, Any, Any])


def _part(response: type[BaseModel], name: str) -> type[BaseModel]:
    """The model of one envelope part (``body`` …) of a parametrized response."""
    annotation = response.model_fields[name].annotation
    for candidate in get_args(annotation) or (annotation,):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    raise TypeError(f"{response.__name__}.{name} is not a model")


_NOTHING: dict[str, Any] = {}


class EnvelopeShape:
    """A response envelope's wire dict (a :class:`NamedResponse` subclass, or any model
    with ``body``, ``metadata`` and ``resources`` parts), built from a row (see
    :mod:`shared.shapes`): the body and, hydrated, the metadata from the row's columns of
    the same names; the resources from what the caller gathered. The whole envelope is
    built by one function, compiled per kind of row and set of given values."""

    def __init__(self, response: type[BaseModel]) -> None:
        self.envelope = Shape(response)
        self.body = Shape(_part(response, "body"))
        self.metadata = Shape(_part(response, "metadata"))
        self.resources = Shape(_part(response, "resources"))
        self._builders = Builders(self._compile)

    def __call__(
        self,
        row: Any,
        resources: dict[str, Any],
        *,
        hydrate: bool,
        body: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """``body`` and ``metadata`` give values the row lacks (or holds in another form)."""
        body = body or _NOTHING
        metadata = metadata or _NOTHING
        given = (tuple(body), tuple(metadata), tuple(resources), hydrate)
        builder = self._builders.for_row(row, given)
        return builder(row, body, metadata, resources)  # type: ignore[no-any-return]

    def _compile(
        self,
        columns: tuple[str, ...] | None,
        given: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], bool],
    ) -> Any:
        body, metadata, resources, hydrate = given
        env: dict[str, Any] = {}
        parts = {
            "body": self.body.display(columns, frozenset(body), env, "body", "b"),
            "metadata": (
                self.metadata.display(columns, frozenset(metadata), env, "metadata", "m")
                if hydrate
                else "None"
            ),
            "resources": self.resources.display(
                None, frozenset(resources), env, "resources", "r", row="None"
            ),
        }
        envelope = self.envelope.display(columns, frozenset(), env, "_", "e", inline=parts)
        return compile_builder("row, body, metadata, resources", envelope, env)


class ScopedListQuery(BaseModel):
    """The list parameters that scope rather than filter: always ANDed on."""

    project: str | None = None
    scope_user: uuid.UUID | None = None


def query_extras(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s fields as extra parameters of :meth:`ListSpec.query_model` (OpenAPI)."""
    return {name: (info.annotation, info) for name, info in model.model_fields.items()}


def scoped_fields(model: type[ScopedRow]) -> list[Field]:
    """``id``, ``created``, ``updated``, ``name`` and ``user`` (the creator: name, full
    name or id, looked up in identity)."""
    return [
        *base_fields(col(model.id), col(model.created), col(model.updated)),
        column_field("name", col(model.name), Kind.STRING),
        user_field(col(model.user_id)),
    ]


def scoped_sort_keys(model: type[ScopedRow]) -> list[SortKey]:
    """``user`` sorts by the creator's id: the reference sorts by user name, which lives
    in identity's database."""
    return [
        SortKey("created", col(model.created)),
        SortKey("updated", col(model.updated)),
        SortKey("id", col(model.id)),
        SortKey("name", col(model.name)),
        SortKey("user", col(model.user_id)),
    ]


class ScopedNotFound(NotFound):
    resource: ClassVar[str] = "resource"

    def __init__(self, row_id: uuid.UUID) -> None:
        super().__init__(
            f"Unable to get {self.resource} with ID '{row_id}': "
            f"No {self.resource} with this ID found"
        )


class NameTaken(Conflict):
    resource: ClassVar[str] = "resource"

    def __init__(self, name: str, project: str, operation: str = "create") -> None:
        super().__init__(
            f"Unable to {operation} the requested {self.resource} with name '{name}': "
            f"Found another existing {self.resource} with the same name in the "
            f"'{project}' project."
        )


_BUILT: dict[tuple[str, type, type], Any] = {}
"""Statements and conditions per repository class and model, built once and run with new
values: SQLAlchemy then also reuses their cache keys (walking a statement to make one
costs as much as running it)."""


def page_scope(table: Table, by_user: bool) -> tuple[ColumnElement[bool], ...]:
    """A page's scope in ``table``: its project and, ``by_user``, its creator, as the
    ``scope_project`` and ``scope_user`` parameters (to build once: see ``fetch_page``)."""
    project = table.c.project_id == bindparam("scope_project", type_=table.c.project_id.type)
    user = table.c.user_id == bindparam("scope_user", type_=table.c.user_id.type)
    return (project, user) if by_user else (project,)


def _built(kind: str, repository: ScopedRepository[Any], build: Callable[[], Any]) -> Any:
    key = (kind, type(repository), repository.model)
    found = _BUILT.get(key)
    if found is None:
        found = _BUILT[key] = build()
    return found


@functools.cache
def _column_defaults(model: type) -> tuple[tuple[str, Any, Callable[[], Any] | None], ...]:
    """Per column of ``model``'s table: its name, the model's default and default factory
    (a column without either is required)."""
    defaults = []
    for column in model.__table__.columns:  # type: ignore[attr-defined]
        info = model.model_fields.get(column.name)  # type: ignore[attr-defined]
        factory = info.default_factory if info is not None else None
        default = info.default if info is not None else None
        defaults.append((column.name, default, factory))
    return tuple(defaults)


def new_row(model: type[Row], **given: Any) -> Row:
    """A new row of ``model``'s table, its columns given or defaulted as the model would,
    as a plain object to :meth:`ScopedRepository.insert` and render: building an ORM
    instance costs more than writing the row."""
    values: dict[str, Any] = {}
    for name, default, factory in _column_defaults(model):
        if name in given:
            values[name] = given.pop(name)
        elif factory is not None:
            values[name] = factory()
        elif default is PydanticUndefined:
            raise TypeError(f"{model.__name__}: no value for the required column {name!r}")
        else:
            values[name] = default
    if given:
        raise TypeError(f"{model.__name__} has no columns {sorted(given)}")
    return SimpleNamespace(**values)  # type: ignore[return-value]


_RENDERED_ONLY = frozenset({"created", "updated"})


def rendered_columns(table: Table) -> list[ColumnElement[Any]]:
    """``table``'s columns, to select rows that are only rendered: ``created`` and
    ``updated`` in their wire form (:func:`~shared.types.wire_timestamp`)."""
    return [
        wire_timestamp(column, column.name) if column.name in _RENDERED_ONLY else column
        for column in table.columns
    ]


@functools.cache
def _insert_into(table: Table) -> Insert:
    """``INSERT INTO table``, its values given at execution (built once per table)."""
    return prepared(sa_insert(table))


class ScopedRepository(Generic[Row]):
    def __init__(self, session: AsyncSession, model: type[Row]) -> None:
        self.session = session
        self.model = model

    async def get(self, row_id: uuid.UUID) -> Row | None:
        """The ORM instance, to change or delete."""
        return await self.session.get(self.model, row_id)

    def _table(self) -> Table:
        return self.model.__table__  # type: ignore[attr-defined,no-any-return]

    def _columns(self) -> Select[Any]:
        """What a read row holds (built once per class: see :meth:`columns`). Read rows
        are rendered, never written back: ``created`` and ``updated`` come in their wire
        form (:func:`~shared.types.wire_timestamp`)."""
        return sa_select(*rendered_columns(self._table()))

    def columns(self) -> Select[Any]:
        return _built("columns", self, self._columns)  # type: ignore[no-any-return]

    async def read(self, row_id: uuid.UUID) -> ScopedRow | None:
        """The row's columns, to render: a Core row, much cheaper than an instance."""

        def build() -> Select[Any]:
            id_column = self._table().c.id
            return prepared(
                self.columns().where(id_column == bindparam("id", type_=id_column.type))
            )

        query = _built("read", self, build)
        return (await core_execute(self.session, query, {"id": row_id})).first()

    def _scope(self, by_user: bool) -> tuple[ColumnElement[bool], ...]:
        """The page's scope: the ``scope_project`` and, ``by_user``, ``scope_user``
        parameters (built once per class, so unfiltered pages are prebuilt statements)."""

        def build() -> tuple[ColumnElement[bool], ...]:
            return page_scope(self._table(), by_user)

        return _built("scope-user" if by_user else "scope", self, build)  # type: ignore[no-any-return]

    async def page(
        self,
        spec: ListSpec,
        listing: Listing,
        project_id: uuid.UUID,
        scope_user: uuid.UUID | None,
    ) -> tuple[int, list[ScopedRow]]:
        """The page's rows as Core rows (columns by name), to render."""
        params = {"scope_project": project_id}
        if scope_user is not None:
            params["scope_user"] = scope_user
        scope = self._scope(scope_user is not None)
        return await fetch_page(
            self.session, spec, listing, self.columns(), scope=scope, params=params, core=True
        )

    async def insert(self, row: Row, clash: Conflict) -> None:
        """Write the new ``row`` with one INSERT (no unit of work: ``row`` stays outside
        the session); the name's unique constraint answers ``clash`` (409)."""
        table = self._table()
        values = {c.name: getattr(row, c.name) for c in table.columns}
        await flush_unique(self.session, clash, _insert_into(table), values)

    async def save(self, row: Row, clash: Conflict) -> None:
        """Write ``row``; the name's unique constraint answers ``clash`` (409), so
        concurrent duplicates fail the same way as sequential ones."""
        self.session.add(row)
        await flush_unique(self.session, clash)

    async def delete(self, row: Row) -> None:
        await self.session.delete(row)
        await self.session.flush()


class ScopedService(Generic[Row]):
    """Reading, listing, naming and deleting rows of one named, project-scoped table."""

    not_found: ClassVar[type[ScopedNotFound]] = ScopedNotFound
    name_taken: ClassVar[type[NameTaken]] = NameTaken

    def __init__(self, session: AsyncSession, repository: ScopedRepository[Row]) -> None:
        self.session = session
        self.repository = repository

    async def project(self, name_or_id: str | uuid.UUID | None) -> ProjectRef:
        """The project's id and name (404 when unknown, the default one when not named)."""
        return await resolve_project_ref(self.session, name_or_id)

    async def get_row(self, row_id: uuid.UUID) -> Row:
        row = await self.repository.get(row_id)
        if row is None:
            raise self.not_found(row_id)
        return row

    async def read_row(self, row_id: uuid.UUID) -> ScopedRow:
        row = await self.repository.read(row_id)
        if row is None:
            raise self.not_found(row_id)
        return row

    async def list_rows(
        self, spec: ListSpec, listing: Listing, query: ScopedListQuery
    ) -> tuple[int, list[ScopedRow]]:
        project = await self.project(query.project)
        return await self.repository.page(spec, listing, project.id, query.scope_user)

    async def insert(self, row: Row, project: ProjectRef) -> None:
        await self.repository.insert(row, self.name_taken(row.name, project.name))

    async def rename(self, row: Row, name: str) -> None:
        """Give ``row`` a new name (409 when another row of its project has it)."""
        if name == row.name:
            return
        project = await self.project(row.project_id)
        row.name = name
        await self.repository.save(row, self.name_taken(name, project.name, "update"))

    async def delete_row(self, row_id: uuid.UUID) -> Row:
        row = await self.get_row(row_id)
        await self.repository.delete(row)
        return row


class HasCreator(Protocol):
    @property
    def user_id(self) -> uuid.UUID | None: ...


Creator = TypeVar("Creator", bound=HasCreator)
Respond = Callable[[Creator, bool, NestedUser | None], BaseModel | dict[str, Any]]
"""Renders one item: (item, hydrate, its creator), as a model or a shape's dict."""


def _creator(users: dict[uuid.UUID, NestedUser], item: HasCreator) -> NestedUser | None:
    return users.get(item.user_id) if item.user_id is not None else None


async def render_one(
    request: Request, item: Creator, respond: Respond[Creator], *, hydrate: bool
) -> Response:
    users = await users_by_id(request, [item.user_id])
    return render(respond(item, hydrate, _creator(users, item)))


async def render_page(
    request: Request,
    listing: Listing,
    total: int,
    items: Sequence[Creator],
    respond: Respond[Creator],
) -> Response:
    """One page, every creator looked up in one batch."""
    users = await users_by_id(request, [item.user_id for item in items])
    rendered = [respond(item, listing.hydrate, _creator(users, item)) for item in items]
    return render(page_of(listing, total, rendered))


async def render_many(
    request: Request, items: Sequence[Creator], respond: Respond[Creator]
) -> Response:
    """A JSON list of hydrated items (batch creates), creators looked up in one batch."""
    users = await users_by_id(request, [item.user_id for item in items])
    return render([respond(item, True, _creator(users, item)) for item in items])


class ReadsAndDeletes(Protocol[Found]):
    async def get(self, row_id: uuid.UUID) -> Found: ...

    async def delete(self, row_id: uuid.UUID) -> None: ...


OpenService = Callable[[AsyncSession], ReadsAndDeletes[Found]]


class Lists(Protocol):
    async def list_page(self, listing: Listing, query: Any) -> tuple[int, Sequence[Any]]: ...


class Creates(Protocol):
    async def create(self, request: Any, user_id: uuid.UUID) -> Any: ...


def list_handler(
    service: Callable[[AsyncSession], Lists],
    spec: ListSpec,
    respond: Respond[Any],
    query_model: type[BaseModel] = ScopedListQuery,
) -> Handler:
    """``GET …``: a page of ``spec``'s rows in the scope ``query_model`` reads."""

    async def list_(request: Request) -> Response:
        caller(request)
        listing = await read_list(request, spec)
        query = parse_query(request, query_model)
        async with transaction(request) as session:
            total, items = await service(session).list_page(listing, query)
        return await render_page(request, listing, total, items, respond)

    return list_


def create_handler(
    service: Callable[[AsyncSession], Creates],
    body: type[BaseModel],
    respond: Respond[Any],
    *,
    kinds: Collection[str] = USER_TOKEN_KINDS,
) -> Handler:
    """``POST …``: create from ``body``, answer it fully hydrated; callers' tokens of
    ``kinds`` only."""

    async def create(request: Request) -> Response:
        user_id = caller_id(request, kinds=kinds)
        parsed = await parse_json(request, body)
        async with transaction(request) as session:
            item = await service(session).create(parsed, user_id)
        return await render_one(request, item, respond, hydrate=True)

    return create


def _authorize(request: Request, id_param: str, scope: ScopeKind | None) -> uuid.UUID:
    """The row id, once the caller may address the row: a workload token only its own
    run, schedule or deployment (``scope`` names which of those the rows are)."""
    caller_id(request)
    row_id = path_param(request, id_param, uuid.UUID)
    if scope is not None:
        object_caller(request, scope, row_id)
    return row_id


def get_handler(
    service: OpenService[Creator],
    id_param: str,
    respond: Respond[Creator],
    *,
    scope: ScopeKind | None = None,
) -> Handler:
    """``GET …/{id_param}?hydrate=true``."""

    async def get(request: Request) -> Response:
        row_id = _authorize(request, id_param, scope)
        query = parse_query(request, HydrateQuery)
        async with transaction(request) as session:
            item = await service(session).get(row_id)
        return await render_one(request, item, respond, hydrate=query.hydrate)

    return get


class Updates(Protocol):
    async def update(self, row_id: uuid.UUID, update: Any) -> Any: ...


def update_handler(
    service: Callable[[AsyncSession], Updates],
    id_param: str,
    body: type[BaseModel],
    respond: Respond[Any],
    *,
    scope: ScopeKind | None = None,
) -> Handler:
    """``PUT …/{id_param}``: change the row from ``body``, answer it fully hydrated."""

    async def update(request: Request) -> Response:
        row_id = _authorize(request, id_param, scope)
        parsed = await parse_json(request, body)
        async with transaction(request) as session:
            item = await service(session).update(row_id, parsed)
        return await render_one(request, item, respond, hydrate=True)

    return update


def delete_handler(
    service: OpenService[Any], id_param: str, *, scope: ScopeKind | None = None
) -> Handler:
    """``DELETE …/{id_param}``: 200 ``null``."""

    async def delete(request: Request) -> Response:
        row_id = _authorize(request, id_param, scope)
        async with transaction(request) as session:
            await service(session).delete(row_id)
        return render_null()

    return delete


@dataclass(frozen=True)
class ResourceRoutes:
    """The usual operations of one resource, declared together: ``GET`` and ``POST`` on
    ``path``, ``GET``, ``PUT`` (with ``update_request``) and ``DELETE`` on
    ``path/{id_param}`` (any handler may be left out)."""

    path: str
    id_param: str
    label: str
    plural: str
    tag: str
    request: type[BaseModel]
    response: type[BaseModel]
    list_query: type[BaseModel]
    update_request: type[BaseModel] | None = None

    @property
    def one(self) -> str:
        return f"{self.path}/{{{self.id_param}}}"

    def routes(
        self,
        *,
        list_: Handler | None = None,
        create: Handler | None = None,
        get: Handler | None = None,
        update: Handler | None = None,
        delete: Handler | None = None,
    ) -> list[ApiRoute]:
        tags = [self.tag]
        declared: list[ApiRoute] = []
        if list_ is not None:
            declared.append(
                api_route(
                    self.path,
                    list_,
                    method="GET",
                    summary=f"List {self.plural}",
                    tags=tags,
                    query=self.list_query,
                    response=Page[self.response],  # type: ignore[name-defined]
                    errors=(400, 404),
                )
            )
        if create is not None:
            declared.append(
                api_route(
                    self.path,
                    create,
                    method="POST",
                    summary=f"Create {self.label}",
                    tags=tags,
                    body=self.request,
                    response=self.response,
                    errors=(400, 404, 409),
                )
            )
        if get is not None:
            declared.append(
                api_route(
                    self.one,
                    get,
                    method="GET",
                    summary=f"Get {self.label}",
                    tags=tags,
                    query=HydrateQuery,
                    response=self.response,
                    errors=(404,),
                )
            )
        if update is not None:
            declared.append(
                api_route(
                    self.one,
                    update,
                    method="PUT",
                    summary=f"Update {self.label}",
                    tags=tags,
                    body=self.update_request,
                    response=self.response,
                    errors=(400, 404, 409),
                )
            )
        if delete is not None:
            declared.append(
                api_route(
                    self.one,
                    delete,
                    method="DELETE",
                    summary=f"Delete {self.label}",
                    tags=tags,
                    errors=(400, 404),
                )
            )
        return declared
