"""Field types with the reference's wire form."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from pydantic import AfterValidator, TypeAdapter, WithJsonSchema
from sqlalchemy import ColumnElement, DateTime, Dialect, TypeDecorator, type_coerce

__all__ = [
    "WIRE_DATETIME_SENT",
    "WIRE_DATETIME_TAKEN",
    "WireDatetime",
    "naive_utc",
    "type_adapter",
    "wire_timestamp",
]


def naive_utc(value: dt.datetime) -> dt.datetime:
    """``value`` as naive UTC (aware values converted, naive ones taken as UTC)."""
    tz = value.tzinfo
    if tz is None:
        return value
    if tz is not dt.UTC:
        value = value.astimezone(dt.UTC)
    return value.replace(tzinfo=None)


WIRE_DATETIME_SENT: dict[str, Any] = {
    "type": "string",
    "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?$",
    "description": "UTC, ISO 8601 without offset",
}
"""How a response sends a :data:`WireDatetime` (RFC 3339's ``date-time`` needs an offset)."""

WIRE_DATETIME_TAKEN: dict[str, Any] = {
    "type": "string",
    "format": "date-time",
    "description": "ISO 8601; without an offset it is UTC. pydantic's parsing also takes "
    "a space or '_' for the 'T', minutes without seconds, and Unix seconds as a string of "
    "digits.",
}
"""What a request may send for a :data:`WireDatetime`."""

WireDatetime = Annotated[
    dt.datetime,
    AfterValidator(naive_utc),
    WithJsonSchema(WIRE_DATETIME_TAKEN, mode="validation"),
    WithJsonSchema(WIRE_DATETIME_SENT, mode="serialization"),
]
"""A datetime held as naive UTC, so pydantic's own serializer sends it as the reference
sends every datetime: ISO-8601 without an offset (``2026-11-22T10:25:49.617843``, the
fraction dropped when it is zero), which clients and the dashboard rely on. Aware values
are converted to UTC first; naive ones are taken as UTC. The OpenAPI documents describe
each direction as it is (:data:`WIRE_DATETIME_SENT`, :data:`WIRE_DATETIME_TAKEN`)."""


class WireTimestamp(TypeDecorator[Any]):
    """A UTC timestamp column read for a response only: its value comes back as the naive
    UTC datetime :data:`WireDatetime`'s place in a response body takes. Nothing is ever
    written through it."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        return None if value is None else naive_utc(value)


def wire_timestamp(column: ColumnElement[Any], name: str) -> ColumnElement[Any]:
    """``column`` (a UTC timestamp) selected as ``name`` for a response only (see
    :class:`WireTimestamp`): not for values the code goes on to compare or compute with."""
    return type_coerce(column, WireTimestamp()).label(name)


_ADAPTERS: dict[object, TypeAdapter[Any]] = {}


def type_adapter(kind: Any) -> TypeAdapter[Any]:
    """One :class:`~pydantic.TypeAdapter` per type, reused: building one costs far more
    than validating or serializing with it."""
    try:
        return _ADAPTERS[kind]
    except KeyError:
        adapter = _ADAPTERS[kind] = TypeAdapter(kind)
        return adapter
    except TypeError:  # an unhashable type expression
        return TypeAdapter(kind)
