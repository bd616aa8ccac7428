"""The run metadata request, as ``zenml.log_metadata`` sends it."""

from __future__ import annotations

import json
import uuid
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tracking.artifact_version.schemas import MetadataValue


class MetadataResourceTypes(StrEnum):
    PIPELINE_RUN = "pipeline_run"
    STEP_RUN = "step_run"
    ARTIFACT_VERSION = "artifact_version"
    MODEL_VERSION = "model_version"
    SCHEDULE = "schedule"
    WAIT_CONDITION = "wait_condition"


class MetadataTypeEnum(StrEnum):
    STRING = "str"
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    LIST = "list"
    DICT = "dict"
    TUPLE = "tuple"
    SET = "set"
    URI = "Uri"
    PATH = "Path"
    DTYPE = "DType"
    STORAGE_SIZE = "StorageSize"


class RunMetadataResource(BaseModel):
    id: uuid.UUID
    type: MetadataResourceTypes


Key = Annotated[str, Field(min_length=1, max_length=255)]


class RunMetadataRequest(BaseModel):
    """``user`` is accepted and ignored (the caller's token decides); so are
    ``stack_component_id`` and ``publisher_step_id``, which no answer shows."""

    model_config = ConfigDict(extra="ignore")

    user: uuid.UUID | None = None
    project: uuid.UUID
    resources: list[RunMetadataResource]  # none: nothing to set, as the reference
    stack_component_id: uuid.UUID | None = None
    values: dict[Key, MetadataValue]
    types: dict[Key, MetadataTypeEnum]
    publisher_step_id: uuid.UUID | None = None

    @model_validator(mode="after")
    def _keys(self) -> RunMetadataRequest:
        if invalid := [key for key in self.values if ":" in key]:
            raise ValueError(
                "You can not use colons (`:`) in the key names when you are creating "
                "metadata for your ZenML objects. Please change the following keys: "
                f"{invalid}"
            )
        if untyped := [key for key in self.values if key not in self.types]:
            raise ValueError(f"No type given for the metadata keys {untyped}.")
        return self

    def encoded(self) -> dict[str, Any]:
        """Each value as the JSON text stored."""
        return {key: json.dumps(value) for key, value in self.values.items()}
