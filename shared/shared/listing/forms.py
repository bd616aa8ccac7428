"""The forms a list's query parameters take, as the JSON Schema of the OpenAPI document.

:meth:`shared.listing.ListSpec.query_model` documents each parameter with these: a filter by
the forms its kind parses (:mod:`shared.listing.expressions`), ``sort_by`` by the spec's
keys. What a pattern admits, the engine takes; what it refuses, the engine refuses, but for
spellings no client writes (an int with ``_`` between digits or in another script's
digits, a JSON list spelled with spaces), which the patterns leave out.

Patterns are ECMA 262 as JSON Schema reads them and mean the same in Python's ``re``: one
group between ``^`` and ``$`` (so no value is taken with a final line break), ``[0-9]``
rather than ``\\d``, no flags.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from shared.listing.expressions import (
    ALLOWED,
    EQUALITY_OPS,
    LIST_OPS,
    NEVER_BLANK,
    NULL_OPS,
    ORDER_OPS,
    TEXT_OPS,
    Kind,
    Op,
)

__all__ = [
    "BOOL_FILTER",
    "DATETIME_FILTER",
    "FLOAT_FILTER",
    "INT_FILTER",
    "TEXT_FILTER_VALUE",
    "declare",
    "filter_schema",
    "sort_by_schema",
    "whole",
]

# What str.strip() takes off a value, in the ASCII the validators agree on.
_SPACE = r"[\t\n\v\f\r ]*"
# A datetime: the reference's '%Y-%m-%d %H:%M:%S' or ISO 8601 (a date alone, 'T' or a
# space, a fraction, 'Z' or an offset). Only dates every month has, so that whatever
# matches is a date the filter takes.
_DATETIME = (
    r"[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])"
    r"([T ]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?"
    r"(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?)?"
)
_INT32_MAX = str(2**31 - 1)


def _at_most(limit: str) -> str:
    """The decimal numbers from 0 to ``limit`` (without leading zeros), as a pattern."""
    alternatives = ["0"]
    if len(limit) > 1:
        alternatives.append(f"[1-9][0-9]{{0,{len(limit) - 2}}}")
    for index, digit in enumerate(limit):
        low, high = (1 if index == 0 else 0), int(digit) - 1
        if high >= low:
            rest = len(limit) - index - 1
            below = str(low) if high == low else f"[{low}-{high}]"
            tail = "" if not rest else "[0-9]" if rest == 1 else f"[0-9]{{{rest}}}"
            alternatives.append(f"{limit[:index]}{below}{tail}")
    alternatives.append(limit)
    return "(" + "|".join(alternatives) + ")"


# An integer PostgreSQL's integer holds (a larger one is refused by the database), with the
# sign, leading zeros and spaces int() takes.
_INT = rf"{_SPACE}([+-]?0*{_at_most(_INT32_MAX)}|-0*{int(_INT32_MAX) + 1}){_SPACE}"
_BOOL = rf"{_SPACE}([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|1|0){_SPACE}"
# A number as float() reads one (a float filter's; ordering a text field compares numbers).
_NUMBER = rf"{_SPACE}[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?{_SPACE}"
# A JSON list of strings (json.loads refuses control characters in a string).
_JSON_TEXT = r'"[^"\\\x00-\x1f]*"'
_JSON_LIST = rf"\[({_JSON_TEXT}(,{_JSON_TEXT})*)?\]"


def _alternatives(names: Collection[str]) -> str:
    return "(" + "|".join(re.escape(name) for name in sorted(names)) + ")"


def whole(*alternatives: str) -> str:
    """A pattern matching a value that is one of ``alternatives`` as a whole."""
    return "^(" + "|".join(alternatives) + ")$"


def _expression(kind: Kind, value: str) -> list[str]:
    """The forms of a filter of ``kind`` whose operand is ``value`` (a pattern), as
    :func:`~shared.listing.expressions.parse` reads them."""
    ops = ALLOWED[kind]
    forms = [f"{_alternatives(ops & NULL_OPS)}:"]
    scalar = ops - NULL_OPS - LIST_OPS - {Op.IN}
    forms.append(f"({_alternatives(scalar)}:)?{value}")
    if Op.IN in ops:
        forms.append(f"in:{value},{value}")
    if kind in NEVER_BLANK:
        forms.insert(0, _SPACE)
    return forms


_ANY = r"[\s\S]*"
TEXT_FILTER_VALUE = (
    f"((?!{_alternatives(set(Op))}:){_ANY}|{_alternatives(TEXT_OPS | EQUALITY_OPS)}:{_ANY}"
    f"|{_alternatives(NULL_OPS)}:|{_alternatives(LIST_OPS)}:{_JSON_LIST}"
    f"|{_alternatives(ORDER_OPS)}:{_NUMBER})"
)
"""A text filter's value, as a pattern (to build others with): a literal (text whose part
before a ``:`` is no operator), a text operator or ``equals``/``notequals`` on any text, a
null test, ``oneof``/``notoneof`` over a JSON list of strings, or an order over a number."""


def _kind_filter(kind: Kind, operand: str, description: str) -> dict[str, Any]:
    """The schema of a filter of ``kind`` whose operand is ``operand`` (a pattern)."""
    pattern = whole(*_expression(kind, operand))
    return {"type": "string", "pattern": pattern, "description": description}


DATETIME_FILTER = _kind_filter(
    Kind.DATETIME,
    _DATETIME,
    "datetime filter: [<operator>:]<datetime> (equals, notequals, gt, gte, lt, lte), "
    "in:<datetime>,<datetime>, isnull: or isnotnull:; a datetime is '%Y-%m-%d %H:%M:%S' or "
    "ISO 8601 (without an offset: UTC); left blank, no filter",
)
"""A list's datetime filter parameter, in the forms :mod:`shared.listing` takes."""

INT_FILTER = _kind_filter(
    Kind.INT,
    _INT,
    "int filter: [<operator>:]<integer> (equals, notequals, gt, gte, lt, "
    f"lte; from -{int(_INT32_MAX) + 1} to {_INT32_MAX}), isnull: or isnotnull:; "
    "left blank, no filter",
)
"""A list's integer filter parameter."""

FLOAT_FILTER = _kind_filter(
    Kind.FLOAT,
    _NUMBER,
    "float filter: [<operator>:]<number> (equals, notequals, gt, gte, lt, lte; a decimal "
    "number, with an optional exponent), isnull: or isnotnull:; left blank, no filter",
)
"""A list's number filter parameter."""

BOOL_FILTER = _kind_filter(
    Kind.BOOL,
    _BOOL,
    "bool filter: [equals:|notequals:]<true, false, 1 or 0>, isnull: or isnotnull:; "
    "left blank, no filter",
)
"""A list's boolean filter parameter."""

_BY_KIND = {
    Kind.DATETIME: DATETIME_FILTER,
    Kind.INT: INT_FILTER,
    Kind.FLOAT: FLOAT_FILTER,
    Kind.BOOL: BOOL_FILTER,
}


def filter_schema(kind: Kind, description: str = "") -> dict[str, Any] | None:
    """The schema of a filter of ``kind`` (``description`` before its forms'); ``None``
    for a kind that takes any text (a string, an id, an enum's value)."""
    schema = _BY_KIND.get(kind)
    if schema is None:
        return None
    if description:
        return {**schema, "description": f"{description}. {schema['description']}"}
    return dict(schema)


def sort_by_schema(
    keys: Collection[str], default: str, reserved: Collection[str]
) -> dict[str, Any]:
    """``sort_by``: ``[<direction>:]<key>`` over ``keys`` (but the ``reserved`` names,
    which the engine refuses); any direction but ``desc`` sorts ascending, and a blank
    value sorts by ``default``."""
    names = sorted(set(keys) - set(reserved))
    return {
        "type": "string",
        "default": default,
        "pattern": whole(f"([^:]*:)?{_alternatives(names)}", "") if names else "^$",
        "description": f"[asc:|desc:]<key>, a key one of {', '.join(names)}; "
        "another direction sorts ascending",
    }


def declare(schemas: Mapping[str, Mapping[str, Any]]) -> Any:
    """A model's ``json_schema_extra`` documenting its properties ``schemas`` names with
    those schemas, whole (no title or default pydantic would add)."""

    def document(schema: dict[str, Any]) -> None:
        for name, declared in schemas.items():
            schema["properties"][name] = dict(declared)

    return document
