"""The repository base of named, project-scoped tables (artifacts, code repositories,
pipelines, runs, schedules, deployments …): reads as Core rows to render, pages, and
writes that answer a name clash with a 409."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, Generic

from pydantic_core import PydanticUndefined
from sqlalchemy import Insert, Select, Table, bindparam
from sqlalchemy import insert as sa_insert
from sqlalchemy import select as sa_select
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.db import core_execute, flush_unique
from shared.errors import Conflict
from shared.listing import Listing, ListSpec, fetch_page
from shared.types import wire_timestamp
from tracking.core.listing import page_scope
from tracking.core.rows import Row, ScopedRow

_BUILT: dict[tuple[str, type, type], Any] = {}
"""Statements and conditions per repository class and model, built once and run with new
values: SQLAlchemy then also reuses their cache keys (walking a statement to make one
costs as much as running it)."""


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
    return sa_insert(table)


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
            return self.columns().where(id_column == bindparam("id", type_=id_column.type))

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
        total: int | None = None,
    ) -> tuple[int, list[ScopedRow]]:
        """The page's rows as Core rows (columns by name), to render; ``total``: the
        matches' number when the caller knows it (else counted)."""
        params = {"scope_project": project_id}
        if scope_user is not None:
            params["scope_user"] = scope_user
        scope = self._scope(scope_user is not None)
        return await fetch_page(
            self.session,
            spec,
            listing,
            self.columns(),
            scope=scope,
            params=params,
            core=True,
            total=total,
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

    async def by_id(self, model: type[Any], ids: set[Any]) -> dict[uuid.UUID, Any]:
        """The rows of ``model`` (any table: what this table's rows refer to) whose id is
        one of ``ids``, by id; ``None`` among ``ids`` is skipped."""
        ids.discard(None)
        if not ids:
            return {}
        rows = (await self.session.exec(select(model).where(col(model.id).in_(ids)))).all()
        return {row.id: row for row in rows}

    async def delete(self, row: Row) -> None:
        await self.session.delete(row)
        await self.session.flush()
