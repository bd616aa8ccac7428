"""The one list path: parse a list request, filter, sort, count and page.

::

    listing = parse_list(request, ARTIFACTS)
    total, rows = await fetch_page(session, ARTIFACTS, listing, select(Artifact),
                                   scope=[Artifact.project_id == project.id])
    return render(page_of(listing, total, [to_response(r, listing.hydrate) for r in rows]))

Repeated parameters give one condition each; all conditions are joined with
``logical_operator``; ``scope`` conditions (the project, the caller) are always ANDed on.
The total is counted in SQL without loading rows; ``id`` breaks ties in the sort's
direction, so pages are stable.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic import Field as PydanticField
from sqlalchemy import Select, and_, bindparam, func, or_
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession
from starlette.requests import Request

from shared.db import core_execute
from shared.errors import RequestValidationFailed
from shared.listing.expressions import Condition, FilterError, Kind, is_blank
from shared.listing.spec import COMMON_PARAMS, Field, ListSpec, SortKey, as_uuid_condition
from shared.listing.sql import bound_values, condition_sql
from shared.pagination import MAX_PAGE_SIZE, Page, page_offset, total_pages
from shared.routing import parse_query

__all__ = [
    "ListParams",
    "Listing",
    "LogicalOperator",
    "fetch_page",
    "page_of",
    "parse_list",
    "read_list",
    "resolve_sort",
    "where_clause",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class LogicalOperator(StrEnum):
    AND = "and"
    OR = "or"


class ListParams(BaseModel):
    hydrate: bool = False
    sort_by: str | None = None
    logical_operator: LogicalOperator = LogicalOperator.AND
    page: int = PydanticField(default=1, ge=1)
    size: int = PydanticField(default=20, ge=1, le=MAX_PAGE_SIZE)


@dataclass(frozen=True)
class Listing:
    """A parsed list request."""

    hydrate: bool
    page: int
    size: int
    logical_operator: LogicalOperator
    conditions: Sequence[tuple[Field, Condition]]
    sort: SortKey
    descending: bool


def _invalid(param: str, message: str) -> RequestValidationFailed:
    return RequestValidationFailed.single(["query", param], message)


def resolve_sort(spec: ListSpec, sort_by: str | None) -> tuple[SortKey, bool]:
    """``[asc:|desc:]<key>``; an unknown prefix falls back to ascending, as the reference."""
    text = sort_by or spec.default_sort
    prefix, sep, name = text.partition(":")
    descending = False
    if not sep:
        name = text
    elif prefix in ("asc", "desc"):
        descending = prefix == "desc"
    else:
        logger.warning("unknown sort direction; sorting ascending", extra={"sort_by": text})
    if name in COMMON_PARAMS:
        raise _invalid("sort_by", "This resource can not be sorted by this field.")
    key = spec.sort_key(name)
    if key is None:
        raise _invalid("sort_by", "You can only sort by valid fields of this resource.")
    return key, descending


def parse_conditions(
    spec: ListSpec, values: Mapping[str, Sequence[str]], location: Sequence[str] = ("query",)
) -> list[tuple[Field, Condition]]:
    """One condition per value of each filter the spec declares, in the spec's order
    (422 at ``location`` + the field's name on a malformed one; none for a blank one, see
    :func:`~shared.listing.expressions.is_blank`); other names are left."""
    conditions: list[tuple[Field, Condition]] = []
    for field in spec.fields:
        for raw in values.get(field.name, ()):
            if is_blank(raw, field.kind):
                continue
            try:
                conditions.append((field, field.condition(raw)))
            except FilterError as exc:
                raise RequestValidationFailed.single([*location, field.name], str(exc)) from None
    return conditions


def listing_of(
    spec: ListSpec,
    params: ListParams,
    values: Mapping[str, Sequence[str]],
    location: Sequence[str] = ("query",),
) -> Listing:
    """A list request from its common parameters and its filters' values (see
    :func:`parse_conditions`), wherever they came from (a query, a request body)."""
    sort, descending = resolve_sort(spec, params.sort_by)
    return Listing(
        hydrate=params.hydrate,
        page=params.page,
        size=params.size,
        logical_operator=params.logical_operator,
        conditions=parse_conditions(spec, values, location),
        sort=sort,
        descending=descending,
    )


def parse_list(request: Request, spec: ListSpec) -> Listing:
    """Read the common list parameters and every filter the spec declares (422 on a
    malformed one). Parameters the spec does not declare are left to the caller."""
    params = parse_query(request, ListParams)
    query = request.query_params
    values = {name: query.getlist(name) for name in query}
    return listing_of(spec, params, values)


async def read_list(request: Request, spec: ListSpec) -> Listing:
    """:func:`parse_list`, then :func:`resolve_lookups`."""
    return await resolve_lookups(request, parse_list(request, spec))


async def resolve_lookups(request: Request, listing: Listing) -> Listing:
    """Every lookup answered: a condition on a field with a ``lookup`` becomes "the id
    matches, or the related row is one of those found"."""
    if not any(f.lookup for f, _ in listing.conditions):
        return listing
    conditions: list[tuple[Field, Condition]] = []
    for field, cond in listing.conditions:
        if field.lookup is not None:
            found = tuple(await field.lookup(request, cond))
            field = _resolved(field, cond, found)
        conditions.append((field, cond))
    return replace(listing, conditions=conditions)


def _resolved(field: Field, cond: Condition, found: tuple[uuid.UUID, ...]) -> Field:
    def build(_cond: Condition) -> ColumnElement[bool]:
        by_id = condition_sql(field.column, Kind.UUID, as_uuid_condition(cond))
        return or_(by_id, field.column.in_(found)) if found else by_id

    return Field(name=field.name, kind=field.kind, column=field.column, build=build)


def where_clause(
    listing: Listing, scope: Sequence[ColumnElement[bool]] = ()
) -> ColumnElement[bool] | None:
    """The scope ANDed with the filters joined by the logical operator."""
    return _joined(listing, scope, [field.sql(cond) for field, cond in listing.conditions])


def _joined(
    listing: Listing, scope: Sequence[ColumnElement[bool]], filters: Sequence[ColumnElement[bool]]
) -> ColumnElement[bool] | None:
    parts = list(scope)
    if filters:
        joined = or_(*filters) if listing.logical_operator is LogicalOperator.OR else and_(*filters)
        parts.append(joined)
    if not parts:
        return None
    return and_(*parts)


@dataclass(frozen=True)
class _Statements:
    """A list's count and page statements, the page's offset and size as parameters
    (``page_offset``, ``page_size``)."""

    count: Select[Any]
    page: Select[Any]


def _statements(
    spec: ListSpec,
    listing: Listing,
    statement: Select[Any],
    where: ColumnElement[bool] | None,
) -> _Statements:
    ids = select(spec.id_column)
    if where is not None:
        ids = ids.where(where)
        statement = statement.where(where)
    columns = (listing.sort.expression, spec.id_column)
    order = [c.desc() for c in columns] if listing.descending else [c.asc() for c in columns]
    page = statement.order_by(*order)
    return _Statements(
        count=select(func.count()).select_from(ids.subquery()),
        page=page.offset(bindparam("page_offset")).limit(bindparam("page_size")),
    )


@dataclass(frozen=True)
class _Built:
    """Statements built once: what their key names by ``id`` (kept alive, so a key found
    is always those same objects), and the names of each filter's bound values."""

    sources: tuple[object, ...]
    statements: _Statements
    names: Sequence[Sequence[str]]


_PREBUILT: dict[tuple[Any, ...], _Built] = {}
_PREBUILT_MAX = 256


def _prebuilt(
    spec: ListSpec,
    listing: Listing,
    statement: Select[Any],
    scope: Sequence[ColumnElement[bool]],
) -> tuple[_Statements, dict[str, Any]] | None:
    """The statements of a list of ``statement`` in ``scope``, built once per (spec,
    statement, scope, sort, operator and each filter's field and form: see
    :class:`~shared.listing.spec.Shaped`; an unfiltered list has none), and this
    request's filter values by the names of their bound parameters. The entry keeps what
    its key names by ``id`` alive, so a key found is always those same objects. ``None``
    when a filter's SQL is built afresh each time."""
    forms = []
    values: list[tuple[Any, ...]] = []
    for field, cond in listing.conditions:
        shaped = field.form(cond)
        if shaped is None:
            return None
        forms.append((field.name, shaped[0]))
        values.append(shaped[1])
    sources = (spec, statement, *scope, listing.sort)
    key = (
        *map(id, sources),
        listing.descending,
        listing.logical_operator,
        *forms,
    )
    found = _PREBUILT.get(key)
    if found is None:
        if len(_PREBUILT) >= _PREBUILT_MAX:
            _PREBUILT.clear()
        names: list[list[str]] = []
        filters = []
        for index, ((field, _), (_, form), given) in enumerate(
            zip(listing.conditions, forms, values, strict=True)
        ):
            params, named = bound_values(f"filter_{index}", given)
            names.append(list(named))
            filters.append(field.form_sql(form, params))
        built = _statements(spec, listing, statement, _joined(listing, scope, filters))
        found = _PREBUILT[key] = _Built(sources, built, names)
    bound = {
        name: value
        for slots, given in zip(found.names, values, strict=True)
        for name, value in zip(slots, given, strict=True)
    }
    return found.statements, bound


async def fetch_page(
    session: AsyncSession,
    spec: ListSpec,
    listing: Listing,
    statement: Select[Any],
    *,
    scope: Sequence[ColumnElement[bool]] = (),
    params: Mapping[str, Any] | None = None,
    core: bool = False,
    total: int | None = None,
) -> tuple[int, list[Any]]:
    """The total and the requested page of ``statement``'s rows (none past the last page).

    ``params``: values of the bound parameters of ``statement`` and ``scope``. A caller
    that builds those once and names its values here gets its list run from statements
    built once too, unfiltered or filtered by fields of known forms (see ``_prebuilt``).
    ``core``: ``statement`` selects columns, not ORM entities; its rows are read as Core
    rows on the session's connection (cheaper; see :func:`shared.db.core_execute`)."""
    values = dict(params or {})
    if params is not None and (prebuilt := _prebuilt(spec, listing, statement, scope)):
        statements = prebuilt[0]
        values.update(prebuilt[1])
    else:
        statements = _statements(spec, listing, statement, where_clause(listing, scope))
    if total is None:
        total = int((await core_execute(session, statements.count, values)).scalar_one())
    offset = page_offset(listing.page, listing.size, total)
    if offset is None:
        return total, []
    values["page_offset"] = offset
    values["page_size"] = listing.size
    if core:
        return total, list((await core_execute(session, statements.page, values)).all())
    rows = list((await session.exec(statements.page, params=values)).all())  # type: ignore[call-overload]
    return total, rows


def page_of(listing: Listing, total: int, items: list[T]) -> Page[T]:
    # The unparametrized Page: items are already validated response models, and
    # parametrizing per request (Page[T]) costs more than the rest of the envelope.
    return Page(
        index=listing.page,
        max_size=listing.size,
        total_pages=total_pages(total, listing.size),
        total=total,
        items=items,
    )
