"""Conditions as PostgreSQL SQL.

Text matching (``contains``, ``startswith``, ``endswith``, ``notcontains``) is
case-insensitive and treats ``%``, ``_`` and ``\\`` in the user's value literally (the
reference left them as wildcards: a defect). ``equals`` is case-sensitive. Ordering a text
field compares it as a number, non-numeric text counting as 0, as the reference does.
UUID text operators work on the 32 lowercase hex digits.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Float, String, and_, bindparam, case, cast, false, func, not_, or_, true
from sqlalchemy.sql.elements import ColumnElement

from shared.listing.expressions import Condition, Kind, Op

__all__ = ["condition_sql"]

ESCAPE = "\\"


def escape_like(value: str) -> str:
    return value.replace(ESCAPE, ESCAPE * 2).replace("%", ESCAPE + "%").replace("_", ESCAPE + "_")


def _numeric(column: Any) -> ColumnElement[float]:
    """``column``'s text as a number, non-numeric text as 0 and NULL as NULL."""
    text = cast(column, String)
    number = text.regexp_match(r"^\s*[-+]?[0-9]+(\.[0-9]+)?\s*$")
    return case((number, cast(text, Float)), (text.is_not(None), 0.0))


def _hex(column: Any) -> ColumnElement[str]:
    # PostgreSQL's text form of a UUID has hyphens; the operators match the 32 hex digits.
    return func.lower(func.replace(cast(column, String), "-", ""))


def _pattern(op: Op, value: str) -> str:
    pattern = escape_like(value)
    if op is Op.STARTSWITH:
        return pattern + "%"
    if op is Op.ENDSWITH:
        return "%" + pattern
    return "%" + pattern + "%"


Form = tuple[Any, ...]
"""What a condition's SQL depends on besides its values (see :func:`condition_form`)."""

_TEXT_OPS = (Op.CONTAINS, Op.STARTSWITH, Op.ENDSWITH, Op.NOT_CONTAINS)
_COMPARISONS = {Op.GT: operator.gt, Op.GTE: operator.ge, Op.LT: operator.lt, Op.LTE: operator.le}


def condition_form(kind: Kind, cond: Condition) -> tuple[Form, tuple[Any, ...]]:
    """``cond`` split into its form and the values its SQL binds: conditions of one form
    on one column have the same SQL and differ only in those values, so a statement
    built once for a form (values as bound parameters) serves them all."""
    op, value = cond.op, cond.value
    if op is Op.IS_NULL or op is Op.IS_NOT_NULL:
        return (op,), ()
    if kind is Kind.UUID and op in (Op.EQUALS, Op.NOT_EQUALS) and value is None:
        # An invalid UUID: equals matches nothing, notequals everything.
        return ("constant", op is Op.NOT_EQUALS), ()
    if op is Op.ONEOF or op is Op.NOT_ONEOF:
        if not value:  # one of nothing: nothing; none of nothing: everything
            return ("constant", op is Op.NOT_ONEOF), ()
        return (op,), (list(value),)
    if op in _TEXT_OPS:
        return (op,), (_pattern(op, value),)
    if op is Op.IN:
        return (op,), tuple(value)
    return (op,), (value,)


def condition_expr(
    column: Any, kind: Kind, form: Form, values: Sequence[Any]
) -> ColumnElement[bool]:
    """The WHERE clause of a condition of ``form`` on ``column``, binding ``values``
    (the values themselves, or bound parameters that stand for them)."""
    op = form[0]
    if op == "constant":
        return true() if form[1] else false()
    if op is Op.IS_NULL:
        return column.is_(None)  # type: ignore[no-any-return]
    if op is Op.IS_NOT_NULL:
        return column.is_not(None)  # type: ignore[no-any-return]
    if op is Op.EQUALS:
        return column == values[0]  # type: ignore[no-any-return]
    if op is Op.NOT_EQUALS:
        return or_(column.is_(None), column != values[0])
    if op is Op.ONEOF:
        return column.in_(values[0])  # type: ignore[no-any-return]
    if op is Op.NOT_ONEOF:
        return or_(column.is_(None), column.not_in(values[0]))
    if op in _TEXT_OPS:
        target = _hex(column) if kind is Kind.UUID else cast(column, String)
        matched = target.ilike(values[0], escape=ESCAPE)
        if op is Op.NOT_CONTAINS:
            return or_(target.is_(None), not_(matched))
        return matched
    if op is Op.IN:
        return and_(column >= values[0], column <= values[1])
    if kind is Kind.STRING:
        column = _numeric(column)
    elif kind is Kind.UUID:
        column = _hex(column)
    return _COMPARISONS[op](column, values[0])  # type: ignore[no-any-return]


def condition_sql(column: Any, kind: Kind, cond: Condition) -> ColumnElement[bool]:
    """The WHERE clause for ``cond`` on ``column`` (a column of the given ``kind``)."""
    form, values = condition_form(kind, cond)
    return condition_expr(column, kind, form, values)


def bound_values(prefix: str, values: Sequence[Any]) -> tuple[list[Any], dict[str, Any]]:
    """Bound parameters standing for ``values`` (named ``<prefix>_<n>``; a list expands
    into ``IN``), and the values by those names."""
    params: list[Any] = []
    named: dict[str, Any] = {}
    for index, value in enumerate(values):
        name = f"{prefix}_{index}"
        params.append(bindparam(name, expanding=isinstance(value, list)))
        named[name] = value
    return params, named
