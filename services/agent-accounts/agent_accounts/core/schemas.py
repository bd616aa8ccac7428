"""Request and response bases of the agent-run API (kitaru's wire conventions)."""

from __future__ import annotations

from typing import Annotated, TypeVar

from pydantic import BaseModel, ConfigDict, StringConstraints
from starlette.requests import Request

from shared.routing import parse_json
from shared.types import WireDatetime

M = TypeVar("M", bound=BaseModel)


class RequestModel(BaseModel):
    """Strict: an unknown field is a 422, so nothing can be mass-assigned."""

    model_config = ConfigDict(extra="forbid")


class TimestampedResponse(BaseModel):
    created: WireDatetime
    updated: WireDatetime


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
