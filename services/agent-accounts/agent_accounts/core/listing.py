"""The agent-run server's lists: cursor pages, ``field:asc|desc`` sorting and a JSON
filter tree.

``GET ...?size=&cursor=&sort=created:desc&filter={"and":[{"field":"name","op":"startswith",
"value":"ci-"}]}`` → ``{"items": [...], "next_cursor": "..." | null}``.

Pages are keyset pages: the cursor holds the sort, a digest of the filter, the last row's
sort value and its id, so rows written meanwhile never shift a page, and a cursor replayed
with another sort or another filter is refused (as kitaru refuses it). Filter fields and
sort keys are declared per resource as data; conditions become SQL through the shared list
engine's :func:`~shared.listing.sql.condition_sql` (literal ``%``/``_`` in text matches).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import functools
import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field, JsonValue, create_model
from sqlalchemy import Select, and_, false, not_, or_, true
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel.ext.asyncio.session import AsyncSession

from shared.errors import RequestValidationFailed
from shared.listing import Condition, Kind, Op
from shared.listing.sql import condition_sql

T = TypeVar("T")
Q = TypeVar("Q", bound="ListQuery")

MAX_DEPTH = 16
SORT_PATTERN = r"^[a-z][a-z0-9_]*:(asc|desc)$"
MAX_CONDITIONS = 64
# The cursors _encode_cursor writes: base64url without its padding.
CURSOR_PATTERN = r"^[A-Za-z0-9_-]+$"


class ListQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    cursor: str | None = Field(
        default=None,
        max_length=2048,
        pattern=CURSOR_PATTERN,
        description="An opaque token: the next_cursor of a page of this list, asked for with"
        " the same sort and filter (any other is refused with 422, as kitaru refuses it)",
    )
    size: int = Field(default=20, ge=1, le=1000)
    sort: str = Field(default="created:desc", pattern=SORT_PATTERN)
    filter: str | None = Field(default=None, max_length=8192)


@functools.cache
def _sorted_query(name: str, base: type[ListQuery], keys: tuple[str, ...]) -> type[ListQuery]:
    sorts: list[JsonValue] = [f"{key}:{d}" for key in keys for d in ("asc", "desc")]
    sort = base.model_fields["sort"]
    return create_model(
        name,
        __base__=base,
        sort=(
            str,
            Field(default=sort.default, pattern=SORT_PATTERN, json_schema_extra={"enum": sorts}),
        ),
    )


class Page(BaseModel, Generic[T]):
    items: list[T]
    next_cursor: str | None


@dataclass(frozen=True)
class CursorSpec:
    """A resource's filter fields and sort keys: name → (column, kind). A ``Kind.ENUM``
    field names its enum in ``enums``: a value outside it is a 422, not a filter that
    silently matches nothing."""

    id_column: Any
    fields: Mapping[str, tuple[Any, Kind]]
    sorts: Mapping[str, tuple[Any, Kind]]
    enums: Mapping[str, type[StrEnum]] = field(default_factory=dict)

    @overload
    def query_model(self, name: str) -> type[ListQuery]: ...
    @overload
    def query_model(self, name: str, base: type[Q]) -> type[Q]: ...
    def query_model(self, name: str, base: type[ListQuery] = ListQuery) -> type[ListQuery]:
        """``base`` (:class:`ListQuery` by default) named ``name``, whose ``sort`` the
        OpenAPI document lists as the ``key:asc``/``key:desc`` of this resource's sort keys.
        It validates as ``base`` does: an unknown key stays :func:`page`'s 422, which
        names the keys."""
        return _sorted_query(name, base, tuple(sorted(self.sorts)))


def _invalid(param: str, message: str) -> RequestValidationFailed:
    return RequestValidationFailed.single(["query", param], message)


_OPS = {
    "eq": Op.EQUALS,
    "ne": Op.NOT_EQUALS,
    "in": Op.ONEOF,
    "startswith": Op.STARTSWITH,
    "endswith": Op.ENDSWITH,
    "contains": Op.CONTAINS,
}
_ORDER = {"lt", "le", "gt", "ge"}
_TEXT = {"startswith", "endswith", "contains"}


def _typed(value: Any, kind: Kind, where: str, enum: type[StrEnum] | None = None) -> Any:
    try:
        if kind is Kind.ENUM:
            allowed = [str(member) for member in enum or ()]
            if not isinstance(value, str) or value not in allowed:
                raise _invalid("filter", f"{where}: {value!r} is not one of {allowed}.")
            return value
        if kind is Kind.UUID:
            return uuid.UUID(str(value))
        if kind is Kind.BOOL:
            if not isinstance(value, bool):
                raise ValueError
            return value
        if kind is Kind.DATETIME:
            parsed = dt.datetime.fromisoformat(str(value))
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
        if kind is Kind.INT:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError
            return value
        if not isinstance(value, str):
            raise ValueError
        return value
    except ValueError:
        raise _invalid("filter", f"{where}: {value!r} is not a valid {kind} value.") from None


def _condition(node: Mapping[str, Any], spec: CursorSpec) -> ColumnElement[bool]:
    name, op = node.get("field"), node.get("op")
    if set(node) - {"field", "op", "value"} or not isinstance(name, str):
        raise _invalid("filter", "A condition is {field, op, value}.")
    if name not in spec.fields:
        raise _invalid(
            "filter", f"Unknown filter field '{name}'; use one of {sorted(spec.fields)}."
        )
    column, kind = spec.fields[name]
    value = node.get("value")
    enum = spec.enums.get(name)
    if op == "is_null":
        if not isinstance(value, bool):
            raise _invalid("filter", "is_null takes true or false.")
        return column.is_(None) if value else column.is_not(None)  # type: ignore[no-any-return]
    if op in _TEXT:
        if kind not in (Kind.STRING,):
            raise _invalid("filter", f"'{op}' only works on text fields.")
        return condition_sql(column, kind, Condition(_OPS[op], _typed(value, kind, name)))
    if op == "in":
        if not isinstance(value, list) or len(value) > 1000:
            raise _invalid("filter", "'in' takes a list of at most 1000 values.")
        items = tuple(_typed(v, kind, name, enum) for v in value)
        return column.in_(items) if items else false()
    if op in ("eq", "ne"):
        return condition_sql(column, kind, Condition(_OPS[op], _typed(value, kind, name, enum)))
    if op in _ORDER:
        if kind in (Kind.BOOL, Kind.ENUM):
            raise _invalid("filter", f"'{op}' does not apply to {kind} fields.")
        typed = _typed(value, kind, name)
        return {  # type: ignore[no-any-return]
            "lt": column < typed,
            "le": column <= typed,
            "gt": column > typed,
            "ge": column >= typed,
        }[op]
    raise _invalid("filter", f"Unknown filter operator {op!r}.")


def _parse_filter(raw: str | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise _invalid("filter", "The filter is not valid JSON.") from None


def _filter_sql(tree: Any, spec: CursorSpec) -> ColumnElement[bool]:
    if tree is None:
        return true()
    budget = [MAX_CONDITIONS]

    def build(node: Any, depth: int) -> ColumnElement[bool]:
        if depth > MAX_DEPTH:
            raise _invalid("filter", f"The filter nests deeper than {MAX_DEPTH} levels.")
        if not isinstance(node, dict):
            raise _invalid("filter", "A filter is an object.")
        if len(node) == 1 and ("and" in node or "or" in node):
            (key, operands) = next(iter(node.items()))
            if not isinstance(operands, list) or not operands:
                raise _invalid("filter", f"'{key}' takes a non-empty list.")
            parts = [build(operand, depth + 1) for operand in operands]
            return and_(*parts) if key == "and" else or_(*parts)
        if len(node) == 1 and "not" in node:
            return not_(build(node["not"], depth + 1))
        budget[0] -= 1
        if budget[0] < 0:
            raise _invalid("filter", f"The filter has more than {MAX_CONDITIONS} conditions.")
        return _condition(node, spec)

    return build(tree, 0)


def filter_clause(raw: str | None, spec: CursorSpec) -> ColumnElement[bool]:
    """The WHERE clause of a JSON filter tree (422 when it is malformed)."""
    return _filter_sql(_parse_filter(raw), spec)


def _filter_digest(tree: Any) -> str:
    """What a cursor remembers of the filter: the same tree, however it was spelled."""
    if tree is None:
        return ""
    canonical = json.dumps(tree, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _encode_cursor(sort: str, digest: str, value: Any, row_id: uuid.UUID) -> str:
    if isinstance(value, dt.datetime):
        value = (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).isoformat()
    payload = {"s": sort, "f": digest, "v": value, "id": str(row_id)}
    text = json.dumps(payload, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _cursor_value(value: Any, kind: Kind) -> Any:
    """The sort value a cursor carries, typed as its column (ValueError if it is not)."""
    if value is None:
        return None
    if kind is Kind.DATETIME:
        parsed = dt.datetime.fromisoformat(value)
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
    if kind is Kind.UUID:
        return uuid.UUID(str(value))
    expected = {Kind.STRING: str, Kind.INT: int, Kind.BOOL: bool}.get(kind)
    if expected is None or type(value) is not expected:
        raise ValueError(value)
    return value


def _decode_cursor(raw: str, sort: str, digest: str, kind: Kind) -> tuple[Any, uuid.UUID]:
    try:
        payload = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
        if payload["s"] != sort:
            raise _invalid("cursor", "The cursor belongs to another sort order.")
        if payload["f"] != digest:
            raise _invalid("cursor", "The cursor belongs to another filter.")
        return _cursor_value(payload["v"], kind), uuid.UUID(str(payload["id"]))
    except (binascii.Error, ValueError, KeyError, TypeError, RecursionError):
        raise _invalid("cursor", "The cursor is malformed.") from None


async def fetch_page(
    session: AsyncSession,
    statement: Select[Any],
    query: ListQuery,
    spec: CursorSpec,
    *,
    scope: Sequence[ColumnElement[bool]] = (),
) -> tuple[list[Any], str | None]:
    """One page of ``statement``'s rows and the cursor of the next (``None`` at the end)."""
    sort_name, _, direction = query.sort.partition(":")
    if sort_name not in spec.sorts:
        raise _invalid("sort", f"Cannot sort by '{sort_name}'; use one of {sorted(spec.sorts)}.")
    column, kind = spec.sorts[sort_name]
    descending = direction == "desc"
    tree = _parse_filter(query.filter)
    digest = _filter_digest(tree)
    statement = statement.where(_filter_sql(tree, spec), *scope)
    if query.cursor is not None:
        value, last_id = _decode_cursor(query.cursor, query.sort, digest, kind)
        ahead = column < value if descending else column > value
        tie = spec.id_column < last_id if descending else spec.id_column > last_id
        statement = statement.where(or_(ahead, and_(column == value, tie)))
    order = [column.desc(), spec.id_column.desc()] if descending else [column, spec.id_column]
    rows = list((await session.exec(statement.order_by(*order).limit(query.size + 1))).all())  # type: ignore[call-overload]
    if len(rows) <= query.size:
        return rows, None
    rows = rows[: query.size]
    last = rows[-1]
    sort_value = getattr(last, column.key)
    return rows, _encode_cursor(query.sort, digest, sort_value, last.id)
