"""What a resource declares about its list endpoint, as data.

A :class:`ListSpec` names the filterable query parameters (each a :class:`Field`: a column,
or a related value reached through a subquery), and the sort keys. The engine
(:mod:`shared.listing.engine`) never branches on a model: everything it knows comes from
the spec.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model
from pydantic import Field as PydanticField
from sqlalchemy import bindparam, or_, select
from sqlalchemy.sql.elements import ColumnElement
from starlette.requests import HTTPConnection

from shared.listing.expressions import (
    EQUALITY_OPS,
    LIST_OPS,
    ORDER_OPS,
    Condition,
    Kind,
    Op,
    parse,
)
from shared.listing.forms import declare, filter_schema, sort_by_schema
from shared.listing.sql import Form, condition_expr, condition_form, condition_sql

__all__ = [
    "Field",
    "ListSpec",
    "Lookup",
    "SortKey",
    "as_uuid_condition",
    "base_fields",
    "column_field",
    "name_or_id",
    "query_extras",
]

# Builds the WHERE clause of one condition for a field.
Builder = Callable[[Condition], ColumnElement[bool]]
# Reads one value of a field into its condition (raising FilterError on a malformed one).
Reader = Callable[[str], Condition]
# Finds, elsewhere (another service), the ids of the related rows a condition matches.
Lookup = Callable[[HTTPConnection, Condition], Awaitable[Collection[uuid.UUID]]]

COMMON_PARAMS = frozenset({"hydrate", "sort_by", "logical_operator", "page", "size"})


@dataclass(frozen=True)
class Shaped:
    """How a field's conditions split into a form and values (``form``) and how the SQL
    of a form is built over given values or bound parameters (``expr``): see
    :func:`~shared.listing.sql.condition_form`. Lists filtered by such fields run
    statements built once per form."""

    form: Callable[[Condition], tuple[Form, tuple[Any, ...]]]
    expr: Callable[[Form, Sequence[Any]], ColumnElement[bool]]


@dataclass(frozen=True)
class Field:
    """A filterable query parameter.

    By default the condition applies to ``column``. ``build`` replaces that for values
    reached another way (an EXISTS over tags, a name-or-id lookup). ``lookup`` is for a
    name-or-id parameter whose names live in another service: the condition applies to
    ``column`` (the related id) or to the names, which ``lookup`` matches remotely
    (see :func:`shared.listing.read_list`). ``description`` goes into the OpenAPI document,
    and so does ``schema``, for a parameter whose forms its kind's schema does not state
    (see :func:`~shared.listing.forms.filter_schema`). ``read`` replaces the kind's reading
    of a value for a parameter whose values are not one filter expression (``run_metadata``:
    a key, then an expression).
    """

    name: str
    kind: Kind
    column: Any = None
    enum: type[Enum] | None = None
    build: Builder | None = None
    lookup: Lookup | None = None
    description: str = ""
    shaped: Shaped | None = None  # for a field with ``build``: its conditions' forms
    schema: Mapping[str, Any] | None = None
    read: Reader | None = None

    def condition(self, raw: str) -> Condition:
        """One value's condition (:class:`~shared.listing.FilterError` on a malformed one)."""
        return self.read(raw) if self.read is not None else parse(raw, self.kind)

    def documented(self) -> Mapping[str, Any] | None:
        """The parameter's JSON Schema, where it says more than "any text"."""
        if self.schema is not None:
            return self.schema
        return filter_schema(self.kind, self.description)

    def sql(self, cond: Condition) -> ColumnElement[bool]:
        if self.build is not None:
            return self.build(cond)
        return condition_sql(self.column, self.kind, cond)

    def form(self, cond: Condition) -> tuple[Form, tuple[Any, ...]] | None:
        """``cond``'s form and values (see :class:`Shaped`); ``None`` when this field's
        SQL is built afresh for every condition."""
        if self.build is None:
            return condition_form(self.kind, cond)
        if self.shaped is not None:
            return self.shaped.form(cond)
        return None

    def form_sql(self, form: Form, values: Sequence[Any]) -> ColumnElement[bool]:
        """The SQL of a condition of ``form`` (one :meth:`form` gave) over ``values``."""
        if self.build is None:
            return condition_expr(self.column, self.kind, form, values)
        assert self.shaped is not None
        return self.shaped.expr(form, values)


def column_field(name: str, column: Any, kind: Kind, **extra: Any) -> Field:
    return Field(name=name, kind=kind, column=column, **extra)


def base_fields(id_column: Any, created: Any, updated: Any) -> list[Field]:
    """The ``id``, ``created`` and ``updated`` filters every resource has."""
    return [
        column_field("id", id_column, Kind.UUID),
        column_field("created", created, Kind.DATETIME),
        column_field("updated", updated, Kind.DATETIME),
    ]


_UNIQUE_NAME = "unique name"


def name_or_id(
    name: str,
    foreign_key: Any,
    *,
    target_id: Any,
    target_names: Sequence[Any],
    description: str = "",
    unique_within: tuple[Any, str] | None = None,
) -> Field:
    """A ``user``/``artifact``/``project``-style parameter: the operator applies to the
    related row's id and to each of its name columns, joined by OR, and the row matches
    when its ``foreign_key`` points at such a related row.

    ``unique_within``: a column of the related rows within whose values their one name
    column is unique, and the name of the bound parameter in which the list gives the
    value every listed row's related row has there (a version's artifact is in the
    version's project, the list's ``scope_project``). A name (not an id) given with
    ``equals`` then names at most one related row, and the condition is written as
    ``foreign_key = (its id)`` rather than ``IN (the ids)``: the planner can then read
    an index on ``foreign_key`` in the page's order and stop at the page's end, where
    ``IN`` (any number of ids) has it sort every match."""
    if unique_within is not None and len(target_names) != 1:
        raise ValueError("unique_within needs exactly one name column")

    def form(cond: Condition) -> tuple[Form, tuple[Any, ...]]:
        id_form, id_values = condition_form(Kind.UUID, as_uuid_condition(cond))
        name_form, name_values = condition_form(Kind.STRING, cond)
        if unique_within is not None and cond.op is Op.EQUALS and id_form[0] == "constant":
            return (_UNIQUE_NAME,), name_values
        return (id_form, len(id_values), name_form), id_values + name_values

    def expr(form: Form, values: Sequence[Any]) -> ColumnElement[bool]:
        if form[0] == _UNIQUE_NAME:
            assert unique_within is not None
            within, parameter = unique_within
            named = select(target_id).where(
                within == bindparam(parameter, type_=within.type), target_names[0] == values[0]
            )
            return foreign_key == named.scalar_subquery()  # type: ignore[no-any-return]
        id_form, split, name_form = form
        by_id = condition_expr(target_id, Kind.UUID, id_form, values[:split])
        by_name = [
            condition_expr(column, Kind.STRING, name_form, values[split:])
            for column in target_names
        ]
        related = select(target_id).where(or_(by_id, *by_name))
        return foreign_key.in_(related)  # type: ignore[no-any-return]

    def build(cond: Condition) -> ColumnElement[bool]:
        shape, values = form(cond)
        return expr(shape, values)

    return Field(
        name=name,
        kind=Kind.STRING,
        build=build,
        description=description,
        shaped=Shaped(form, expr),
    )


def as_uuid_condition(cond: Condition) -> Condition:
    """The same condition read as a UUID condition (for the id side of name-or-id)."""
    if cond.op in EQUALITY_OPS:
        try:
            return Condition(cond.op, uuid.UUID(str(cond.value)))
        except ValueError:
            return Condition(cond.op, None)
    if cond.op in LIST_OPS:
        ids = []
        for item in cond.value:
            try:
                ids.append(uuid.UUID(str(item)))
            except ValueError:
                continue
        return Condition(cond.op, tuple(ids))
    if cond.op in ORDER_OPS:
        return Condition(Op.EQUALS, None)  # numbers never name an id
    if cond.value is None:
        return cond
    return Condition(cond.op, str(cond.value).replace("-", "").lower())


def query_extras(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s fields as ``extra`` parameters of :meth:`ListSpec.query_model`: those
    a list's handler reads besides its filters, for the OpenAPI document."""
    return {name: (info.annotation, info) for name, info in model.model_fields.items()}


@dataclass(frozen=True)
class SortKey:
    """A ``sort_by`` key: a column or SQL expression (correlated subqueries allowed)."""

    name: str
    expression: Any


@dataclass(frozen=True)
class ListSpec:
    """Everything the engine needs to list one resource."""

    resource: str
    id_column: Any
    fields: Sequence[Field]
    sort_keys: Sequence[SortKey]
    default_sort: str = "created"
    _by_name: Mapping[str, Field] = field(init=False, repr=False, compare=False)
    _sorts: Mapping[str, SortKey] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {f.name: f for f in self.fields})
        object.__setattr__(self, "_sorts", {s.name: s for s in self.sort_keys})

    def field(self, name: str) -> Field | None:
        return self._by_name.get(name)

    def sort_key(self, name: str) -> SortKey | None:
        return self._sorts.get(name)

    def query_model(self, *, extra: Mapping[str, Any] | None = None) -> type[BaseModel]:
        """A pydantic model of every query parameter, for the OpenAPI document: each
        declares the forms the engine takes (:mod:`shared.listing.forms`)."""
        extra = extra or {}
        fields: dict[str, Any] = {
            "hydrate": (bool, False),
            "sort_by": (str, self.default_sort),
            "logical_operator": (str, PydanticField(default="and", pattern="^(and|or)$")),
            "page": (int, PydanticField(default=1, ge=1)),
            "size": (int, PydanticField(default=20, ge=1, le=10000)),
        }
        documented: dict[str, Mapping[str, Any]] = {
            "sort_by": sort_by_schema(self._sorts, self.default_sort, COMMON_PARAMS)
        }
        for f in self.fields:
            fields[f.name] = (
                str | None,
                PydanticField(default=None, description=f.description or f"{f.kind} filter"),
            )
            schema = f.documented()
            if schema is not None:
                documented[f.name] = schema
        fields.update(extra)
        documented = {k: v for k, v in documented.items() if k not in extra}
        name = "".join(part.title() for part in self.resource.split("_")) + "Filter"
        config = ConfigDict(extra="ignore", json_schema_extra=declare(documented))
        model: type[BaseModel] = create_model(name, __config__=config, **fields)
        return model
