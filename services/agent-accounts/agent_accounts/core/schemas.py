"""Request and response bases of the agent-run API (kitaru's wire conventions)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints
from starlette.requests import Request

from shared.routing import parse_json

M = TypeVar("M", bound=BaseModel)


class RequestModel(BaseModel):
    """Strict: an unknown field is a 422, so nothing can be mass-assigned."""

    model_config = ConfigDict(extra="forbid")


def aware_utc(value: dt.datetime) -> dt.datetime:
    """``value`` in UTC with its zone (naive values are taken as UTC)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC)


Timestamp = Annotated[dt.datetime, AfterValidator(aware_utc)]
"""Every datetime of an agent-run response: aware UTC, which pydantic writes as kitaru's
server does, ending in ``Z`` (``2026-01-01T10:25:49.617843Z``; ``2026-01-01T10:25:49Z``
when the fraction is zero). The platform's naive :data:`shared.types.WireDatetime` would
make a browser read the time in its own zone."""


class TimestampedResponse(BaseModel):
    created: Timestamp
    updated: Timestamp


# 1 to 255 ASCII letters, digits and - _ . + @, starting and ending with a letter or digit.
Name = Annotated[
    str,
    StringConstraints(
        min_length=1, max_length=255, pattern=r"^[A-Za-z0-9](?:[A-Za-z0-9_.+@-]*[A-Za-z0-9])?$"
    ),
]


async def parse_optional_json(request: Request, model: type[M]) -> M:
    """A JSON body that may be left out (the model's defaults then)."""
    if not await request.body():
        return model()
    return await parse_json(request, model)
