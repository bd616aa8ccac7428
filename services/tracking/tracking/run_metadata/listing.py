"""The ``run_metadata`` list filter of the resources with metadata (runs, artifact
versions): ``key:value`` or ``key:operator:value`` on a key of the row's metadata."""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, case, exists, func
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import col

from shared.listing import Condition, Field, FilterError, Kind, Op, parse
from shared.listing.forms import TEXT_FILTER_VALUE, whole
from shared.listing.sql import condition_sql
from tracking.models import RunMetadata


def _unquoted(column: Any) -> ColumnElement[str]:
    """A JSON text value with a string's quotes dropped, so ``key:value`` matches the
    stored ``"value"`` as the reference does."""
    quoted = and_(column.like('"%'), column.like('%"'), func.length(column) >= 2)
    return case((quoted, func.substr(column, 2, func.length(column) - 2)), else_=column)


def metadata_condition(raw: str) -> tuple[str, Condition]:
    """``key:value`` or ``key:op:value``: the key is the text before the first colon (any,
    empty too, as the reference reads it: ``:x`` and ``gt:x`` name the keys ``""`` and
    ``gt``); 422 without a colon or on a malformed filter after the key."""
    key, sep, rest = raw.partition(":")
    if not sep:
        raise FilterError(
            f"Invalid run_metadata filter '{raw}': use 'key:value' or 'key:operator:value'."
        )
    return key, parse(rest, Kind.STRING)


def _read(raw: str) -> Condition:
    """The value as one condition whose value is its key and its filter on the key's value."""
    return Condition(Op.EQUALS, metadata_condition(raw), raw)


METADATA_FILTER = whole(f"[^:]*:{TEXT_FILTER_VALUE}")


def metadata_field(resource_type: str, id_column: Any, description: str) -> Field:
    """``run_metadata``: rows with a value of the key that matches (repeated, each
    condition on a key of its own)."""

    def build(cond: Condition) -> ColumnElement[bool]:
        key, inner = cond.value
        match = condition_sql(_unquoted(col(RunMetadata.value)), Kind.STRING, inner)
        return exists().where(
            col(RunMetadata.resource_type) == resource_type,
            col(RunMetadata.resource_id) == id_column,
            col(RunMetadata.key) == key,
            match,
        )

    schema = {
        "type": "array",
        "items": {"type": "string", "pattern": METADATA_FILTER},
        "description": description,
    }
    return Field(
        name="run_metadata",
        kind=Kind.STRING,
        build=build,
        description=description,
        schema=schema,
        read=_read,
    )
