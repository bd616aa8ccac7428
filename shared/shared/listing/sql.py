"""Conditions as SQL, the same on SQLite and PostgreSQL.

Text matching (``contains``, ``startswith``, ``endswith``, ``notcontains``) is
case-insensitive and treats ``%``, ``_`` and ``\\`` in the user's value literally (the
reference left them as wildcards: a defect). ``equals`` is case-sensitive. Ordering a text
field compares it as a number, non-numeric text counting as 0, as the reference does.
UUID text operators work on the 32 lowercase hex digits.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Float, String, and_, case, cast, false, func, not_, or_, true
from sqlalchemy.sql.elements import ColumnElement

from shared.listing.expressions import Condition, Kind, Op

ESCAPE = "\\"


def escape_like(value: str) -> str:
    return value.replace(ESCAPE, ESCAPE * 2).replace("%", ESCAPE + "%").replace("_", ESCAPE + "_")


def _numeric(column: Any, dialect: str) -> ColumnElement[float]:
    if dialect == "postgresql":
        text = cast(column, String)
        number = text.regexp_match(r"^\s*[-+]?[0-9]+(\.[0-9]+)?\s*$")
        # NULL stays NULL (no CASE branch matches), like SQLite's CAST.
        return case((number, cast(text, Float)), (text.is_not(None), 0.0))
    return cast(column, Float)  # SQLite: non-numeric text casts to 0


def _hex(column: Any) -> ColumnElement[str]:
    # SQLite keeps UUIDs as 32 hex digits; PostgreSQL's text form has hyphens.
    return func.lower(func.replace(cast(column, String), "-", ""))


def _text_match(target: ColumnElement[str], op: Op, value: str) -> ColumnElement[bool]:
    pattern = escape_like(value)
    if op is Op.STARTSWITH:
        pattern = pattern + "%"
    elif op is Op.ENDSWITH:
        pattern = "%" + pattern
    else:
        pattern = "%" + pattern + "%"
    matched = target.ilike(pattern, escape=ESCAPE)
    if op is Op.NOT_CONTAINS:
        return or_(target.is_(None), not_(matched))
    return matched


def condition_sql(column: Any, kind: Kind, cond: Condition, dialect: str) -> ColumnElement[bool]:
    """The WHERE clause for ``cond`` on ``column`` (a column of the given ``kind``)."""
    op, value = cond.op, cond.value
    if op is Op.IS_NULL:
        return column.is_(None)  # type: ignore[no-any-return]
    if op is Op.IS_NOT_NULL:
        return column.is_not(None)  # type: ignore[no-any-return]
    if kind is Kind.UUID and op in (Op.EQUALS, Op.NOT_EQUALS) and value is None:
        # An invalid UUID: equals matches nothing, notequals everything.
        return false() if op is Op.EQUALS else true()
    if op is Op.EQUALS:
        return column == value  # type: ignore[no-any-return]
    if op is Op.NOT_EQUALS:
        return or_(column.is_(None), column != value)
    if op is Op.ONEOF:
        return column.in_(value) if value else false()
    if op is Op.NOT_ONEOF:
        return or_(column.is_(None), column.not_in(value)) if value else true()
    if op in (Op.CONTAINS, Op.STARTSWITH, Op.ENDSWITH, Op.NOT_CONTAINS):
        target = _hex(column) if kind is Kind.UUID else cast(column, String)
        return _text_match(target, op, value)
    if op is Op.IN:
        start, end = value
        return and_(column >= start, column <= end)
    if kind is Kind.STRING:
        column = _numeric(column, dialect)
    elif kind is Kind.UUID:
        column = _hex(column)
    comparisons: dict[Op, ColumnElement[bool]] = {
        Op.GT: column > value,
        Op.GTE: column >= value,
        Op.LT: column < value,
        Op.LTE: column <= value,
    }
    return comparisons[op]
