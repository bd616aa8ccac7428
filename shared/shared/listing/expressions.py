"""Filter expressions: ``"<op>:<value>"`` parsed and typed, before any SQL.

The reference's syntax: a value whose text before the first ``:`` is an operator is that
operator applied to the rest; anything else is an ``equals`` match on the whole text (so
``weird:value`` is a literal). Each field kind admits some operators and parses the value
its own way; a bad value or operator is a :class:`FilterError` (422).

Datetimes take the reference's ``%Y-%m-%d %H:%M:%S`` or ISO 8601 (what its OpenAPI document
promises: ``T`` or a space, a fraction, ``Z`` or an offset); a value with an offset is
compared in UTC, one without is taken as UTC. A float field's value is a number as
``float()`` reads one, but NaN. An enum field's value outside its enum matches nothing
(``notequals`` everything), as the reference's string comparison does. A filter left
blank (``created=``) on a field whose values are never blank (a datetime, number, boolean
or enum) is no filter.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import uuid
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["Condition", "FilterError", "Kind", "Op", "is_blank", "parse"]


class Op(StrEnum):
    EQUALS = "equals"
    NOT_EQUALS = "notequals"
    CONTAINS = "contains"
    STARTSWITH = "startswith"
    ENDSWITH = "endswith"
    ONEOF = "oneof"
    NOT_ONEOF = "notoneof"
    NOT_CONTAINS = "notcontains"
    IS_NULL = "isnull"
    IS_NOT_NULL = "isnotnull"
    GTE = "gte"
    GT = "gt"
    LTE = "lte"
    LT = "lt"
    IN = "in"


class Kind(StrEnum):
    STRING = "string"
    UUID = "uuid"
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    DATETIME = "datetime"
    ENUM = "enum"


NULL_OPS = frozenset({Op.IS_NULL, Op.IS_NOT_NULL})
LIST_OPS = frozenset({Op.ONEOF, Op.NOT_ONEOF})
TEXT_OPS = frozenset({Op.CONTAINS, Op.STARTSWITH, Op.ENDSWITH, Op.NOT_CONTAINS})
ORDER_OPS = frozenset({Op.GT, Op.GTE, Op.LT, Op.LTE})
EQUALITY_OPS = frozenset({Op.EQUALS, Op.NOT_EQUALS})

ALLOWED: dict[Kind, frozenset[Op]] = {
    Kind.STRING: frozenset(Op) - {Op.IN},
    Kind.UUID: frozenset(Op) - {Op.IN},
    Kind.INT: EQUALITY_OPS | ORDER_OPS | NULL_OPS,
    Kind.FLOAT: EQUALITY_OPS | ORDER_OPS | NULL_OPS,
    Kind.BOOL: EQUALITY_OPS | NULL_OPS,
    Kind.DATETIME: EQUALITY_OPS | ORDER_OPS | NULL_OPS | {Op.IN},
    Kind.ENUM: frozenset(Op) - {Op.IN} - ORDER_OPS,
}

DATETIME_FORMAT = "%Y-%m-%d %H:%M:%S"
_TRUE = frozenset({"true", "1"})
_FALSE = frozenset({"false", "0"})


class FilterError(ValueError):
    """A filter value the field cannot take (rendered as a 422 by the engine)."""


@dataclass(frozen=True)
class Condition:
    """One parsed filter: an operator and its typed value (``None`` for null tests; a
    tuple for ``oneof``/``notoneof``; a ``(start, end)`` pair for ``in``)."""

    op: Op
    value: Any
    # The text it was parsed from, for passing the same filter on to another service.
    raw: str = field(default="", compare=False)


def split(raw: str) -> tuple[Op, str]:
    """The operator and the value text of ``raw`` (``equals`` when there is no operator)."""
    head, sep, rest = raw.partition(":")
    if sep:
        try:
            return Op(head), rest
        except ValueError:
            pass
    return Op.EQUALS, raw


def parse_datetime(text: str) -> dt.datetime:
    """``text`` in the reference's format or ISO 8601, as aware UTC."""
    try:
        value = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise FilterError(
            f"'{text}' is not a datetime: use '{DATETIME_FORMAT}' (for example "
            "'2026-11-22 10:25:49') or ISO 8601 (for example '2026-11-22T10:25:49Z')."
        ) from None
    if value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC)


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise FilterError(f"'{text}' is not a boolean; use true, false, 1 or 0.")


def parse_int(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise FilterError("The int filter only works with integer values.") from None


def parse_uuid(text: str) -> uuid.UUID:
    try:
        return uuid.UUID(text.strip())
    except ValueError:
        raise FilterError(f"'{text}' is not a valid UUID.") from None


def parse_float(text: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise FilterError(
            f"'{text}' is not a number; ordering a text field compares numbers."
        ) from None


def parse_number(text: str) -> float:
    """A float field's value: NaN is refused (no stored number equals or orders against
    it as a number would), an infinity taken (``1e999`` reads as one)."""
    try:
        value = float(text.strip())
    except ValueError:
        value = math.nan
    if math.isnan(value):
        raise FilterError(f"'{text}' is not a number.")
    return value


def _scalar(kind: Kind, op: Op, text: str) -> Any:
    if kind is Kind.INT:
        return parse_int(text)
    if kind is Kind.FLOAT:
        return parse_number(text)
    if kind is Kind.BOOL:
        return parse_bool(text)
    if kind is Kind.DATETIME:
        return parse_datetime(text)
    if kind is Kind.UUID:
        if op in EQUALITY_OPS or op in LIST_OPS:
            # The reference: an invalid UUID makes equals match nothing (and notequals
            # everything) instead of failing; lists must hold real UUIDs.
            if op in LIST_OPS:
                return parse_uuid(text)
            try:
                return uuid.UUID(text.strip())
            except ValueError:
                return None
        # Text operators work on the 32 hex digits, without hyphens.
        return text.replace("-", "").lower()
    if kind is Kind.STRING and op in ORDER_OPS:
        return parse_float(text)
    return text


def _list(text: str) -> list[str]:
    try:
        items = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        items = None
    if not isinstance(items, list) or not all(
        isinstance(i, str | int | float | bool) for i in items
    ):
        raise FilterError(
            'oneof and notoneof take a JSON list of values, for example oneof:["a","b"].'
        )
    return [str(i).lower() if isinstance(i, bool) else str(i) for i in items]


NEVER_BLANK = frozenset({Kind.DATETIME, Kind.INT, Kind.FLOAT, Kind.BOOL, Kind.ENUM})


def is_blank(raw: str, kind: Kind) -> bool:
    """A filter left empty (``created=``, as a form sends a blank field) on a field whose
    values are never blank: no filter rather than a 422. Text and ids can be blank (an
    empty name is one); an operator with nothing after it is still parsed (and refused)."""
    return kind in NEVER_BLANK and not raw.strip()


def parse(raw: str, kind: Kind) -> Condition:
    """Parse one filter value for a field of ``kind``."""
    op, text = split(raw)
    if op not in ALLOWED[kind]:
        raise FilterError(f"The operator '{op}' is not supported for {kind} fields.")
    if op in NULL_OPS:
        if text:
            raise FilterError(f"'{op}:' takes no value.")
        return Condition(op, None, raw)
    if op in LIST_OPS:
        return Condition(op, tuple(_scalar(kind, op, item) for item in _list(text)), raw)
    if op is Op.IN:
        start, sep, end = text.partition(",")
        if not sep:
            raise FilterError("'in:' takes two datetimes separated by a comma.")
        return Condition(op, (parse_datetime(start), parse_datetime(end)), raw)
    return Condition(op, _scalar(kind, op, text), raw)
