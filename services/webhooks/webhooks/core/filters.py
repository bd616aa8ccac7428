"""The trigger filter language (the reference's ``StringFilterOption`` and dynamic
payload-path targets), independent of any provider.

A filter value is a string or a list of strings; a list ORs its items. A string is
``<op>:<operand>`` for one of :data:`OPERATORS`, else a literal compared for equality.
An omitted (``None``) filter matches anything; a field the event lacks matches nothing.
On a collection, a positive operator needs one element to match, a negative one needs
every element to, and an empty collection never matches.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

MAX_EXPRESSIONS = 10
MAX_EXPRESSION_LENGTH = 512
MAX_CHOICES = 10
MAX_PATHS = 10
MAX_PATH_SEGMENTS = 8

OPERATORS = frozenset(
    {
        "equals",
        "notequals",
        "contains",
        "notcontains",
        "startswith",
        "endswith",
        "oneof",
        "notoneof",
    }
)
NEGATIVE = frozenset({"notequals", "notcontains", "notoneof"})
LIST_OPERATORS = frozenset({"oneof", "notoneof"})


def split(expression: str) -> tuple[str, str]:
    """(operator, operand); an unknown prefix makes the whole text a literal."""
    op, sep, operand = expression.partition(":")
    if sep and op in OPERATORS:
        return op, operand
    return "equals", expression


def _choices(operand: str) -> list[str]:
    try:
        choices = json.loads(operand)
    except ValueError:
        raise ValueError("oneof/notoneof take a JSON list of strings") from None
    if (
        not isinstance(choices, list)
        or not 1 <= len(choices) <= MAX_CHOICES
        or not all(isinstance(c, str) and c for c in choices)
    ):
        raise ValueError(f"oneof/notoneof take a JSON list of 1-{MAX_CHOICES} non-empty strings")
    return choices


def _check(value: str | list[str] | None) -> str | list[str] | None:
    if value is None:
        return None
    expressions = [value] if isinstance(value, str) else value
    if not 1 <= len(expressions) <= MAX_EXPRESSIONS:
        raise ValueError(f"a filter takes 1-{MAX_EXPRESSIONS} expressions")
    for expression in expressions:
        if not expression or len(expression) > MAX_EXPRESSION_LENGTH:
            raise ValueError(f"each expression is 1-{MAX_EXPRESSION_LENGTH} characters")
        op, operand = split(expression)
        if op in LIST_OPERATORS:
            _choices(operand)
    return value


FilterValue = Annotated[str | list[str] | None, AfterValidator(_check)]
"""A filter on one field (validated when a trigger is saved)."""

EventValue = str | Sequence[str] | None


def _one(op: str, operand: str, value: str) -> bool:
    match op:
        case "equals":
            return value == operand
        case "notequals":
            return value != operand
        case "contains":
            return operand in value
        case "notcontains":
            return operand not in value
        case "startswith":
            return value.startswith(operand)
        case "endswith":
            return value.endswith(operand)
        case "oneof":
            return value in _choices(operand)
        case _:  # notoneof
            return value not in _choices(operand)


def _expression(expression: str, value: str | Sequence[str]) -> bool:
    op, operand = split(expression)
    if isinstance(value, str):
        return _one(op, operand, value)
    items = list(value)
    if not items:
        return False
    check = all if op in NEGATIVE else any
    return check(_one(op, operand, item) for item in items)


def matches(condition: str | Sequence[str] | None, value: EventValue) -> bool:
    """Whether an event's ``value`` passes a field's filter."""
    if condition is None:
        return True
    if value is None:
        return False
    expressions = [condition] if isinstance(condition, str) else condition
    return any(_expression(e, value) for e in expressions)


# ----- dynamic targets: filters on paths into the raw payload -----

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_BRACKET = re.compile(r'\[(?:\d+|\*|"(?:[^"\\]|\\.)*")\]')
Segment = str | int | None  # a key, an index, or None for the wildcard


def _bracket(token: str) -> Segment:
    if token == "[*]":
        return None
    if token.startswith('["'):
        key: str = json.loads(token[1:-1])
        return key
    return int(token[1:-1])


def parse_path(path: str) -> list[Segment]:
    """``a.b[0].c``, ``items[*].id``, ``["odd key"]``; ``ValueError`` when malformed."""
    if not path or len(path) > MAX_EXPRESSION_LENGTH:
        raise ValueError(f"a path is 1-{MAX_EXPRESSION_LENGTH} characters")
    segments: list[Segment] = []
    position = 0
    while position < len(path):
        after_dot = path[position] == "." and bool(segments)
        start = position + 1 if after_dot else position
        bracket = None if after_dot else _BRACKET.match(path, start)
        key = None if bracket else _KEY.match(path, start)
        if bracket is not None:
            segments.append(_bracket(bracket.group(0)))
            position = bracket.end()
        elif key is not None and (after_dot or not segments):
            segments.append(key.group(0))
            position = key.end()
        else:
            raise ValueError(f"malformed path {path!r} at character {position}")
    if len(segments) > MAX_PATH_SEGMENTS:
        raise ValueError(f"a path has at most {MAX_PATH_SEGMENTS} segments")
    if segments.count(None) > 1:
        raise ValueError("a path has at most one [*] wildcard")
    return segments


def _scalar(value: Any) -> str | None:
    if isinstance(value, dict | list):
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value)


def resolve(payload: Any, segments: Sequence[Segment]) -> EventValue:
    """The scalar at the path (as JSON-style text), the scalars a wildcard reaches (a
    collection), or ``None``."""
    values: list[Any] = [payload]
    wildcard = False
    for segment in segments:
        reached: list[Any] = []
        for value in values:
            if segment is None:
                wildcard = True
                if isinstance(value, list):
                    reached.extend(value)
            elif isinstance(segment, int):
                if isinstance(value, list) and segment < len(value):
                    reached.append(value[segment])
            elif isinstance(value, dict) and segment in value:
                reached.append(value[segment])
        values = reached
    scalars = [s for s in (_scalar(v) for v in values) if s is not None]
    if wildcard:
        return scalars
    return scalars[0] if scalars else None


def _check_paths(filters: dict[str, FilterValue]) -> dict[str, FilterValue]:
    if len(filters) > MAX_PATHS:
        raise ValueError(f"at most {MAX_PATHS} paths")
    for path in filters:
        parse_path(path)
    return filters


class DynamicTarget(BaseModel):
    """``{type: "dynamic", event_type: <filter>, filters: {<path>: <filter>}}``."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(pattern="^dynamic$")
    event_type: FilterValue = None
    filters: Annotated[dict[str, FilterValue], AfterValidator(_check_paths)] = Field(
        default_factory=dict
    )

    def matches(self, event_type: str, payload: Mapping[str, Any]) -> bool:
        if not matches(self.event_type, event_type):
            return False
        return all(
            matches(condition, resolve(payload, parse_path(path)))
            for path, condition in self.filters.items()
        )
