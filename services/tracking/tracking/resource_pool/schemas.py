"""The reference's resource pool, subject policy and list request models: requests are
read (a 422 for what the reference's models refuse) before the server answers that it has
no resource pools."""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

STR_FIELD_MAX_LENGTH = 255
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]


class _Request(BaseModel):
    """``user`` is accepted and ignored (the caller's token decides)."""

    model_config = ConfigDict(extra="ignore")

    user: uuid.UUID | None = None


class ResourcePoolRequest(_Request):
    name: str = Field(max_length=STR_FIELD_MAX_LENGTH)
    description: str | None = Field(default=None, max_length=STR_FIELD_MAX_LENGTH)
    capacity: dict[str, PositiveInt] = Field(json_schema_extra={"minProperties": 1})

    @model_validator(mode="after")
    def _has_capacity(self) -> ResourcePoolRequest:
        if not self.capacity:
            raise ValueError("Resource pools with no capacity are not allowed.")
        return self


class ResourcePoolUpdate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    description: str | None = Field(default=None, max_length=STR_FIELD_MAX_LENGTH)
    capacity: dict[str, NonNegativeInt] | None = None


def _reserved_within_limit(reserved: dict[str, int] | None, limit: dict[str, int] | None) -> None:
    for key, value in (reserved or {}).items():
        bound = (limit or {}).get(key)
        if bound is not None and value > bound:
            raise ValueError(
                f"Reserved value for resource `{key}` ({value}) must be less than limit `{bound}`."
            )


class ResourcePoolSubjectPolicyRequest(_Request):
    component_id: uuid.UUID
    pool_id: uuid.UUID
    priority: NonNegativeInt
    reserved: dict[str, NonNegativeInt] | None = None
    limit: dict[str, NonNegativeInt] | None = None

    @model_validator(mode="after")
    def _within_limit(self) -> ResourcePoolSubjectPolicyRequest:
        _reserved_within_limit(self.reserved, self.limit)
        return self


class ResourcePoolSubjectPolicyUpdate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    priority: NonNegativeInt
    reserved: dict[str, NonNegativeInt] | None = None
    limit: dict[str, NonNegativeInt] | None = None

    @model_validator(mode="after")
    def _within_limit(self) -> ResourcePoolSubjectPolicyUpdate:
        _reserved_within_limit(self.reserved, self.limit)
        return self


class LogicalOperator(StrEnum):
    AND = "and"
    OR = "or"


class ResourcePoolListQuery(BaseModel):
    """The paging part of the reference's list parameters (its filters are not read:
    nothing is listed)."""

    hydrate: bool = False
    sort_by: str = "created"
    logical_operator: LogicalOperator = LogicalOperator.AND
    page: int = Field(default=1, ge=1)
    size: int = Field(default=20, ge=1, le=10000)
