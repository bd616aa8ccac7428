"""Field types with the reference's wire form."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import AfterValidator, PlainSerializer, WithJsonSchema


def _to_wire(value: dt.datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.isoformat()


def _assume_utc(value: dt.datetime) -> dt.datetime:
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


WireDatetime = Annotated[
    dt.datetime,
    AfterValidator(_assume_utc),
    PlainSerializer(_to_wire, return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
"""A datetime held as aware UTC and sent as naive ISO-8601 UTC
(``2026-11-22T10:25:49.617843``), the way the reference sends every datetime."""
