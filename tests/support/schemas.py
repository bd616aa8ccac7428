"""Whether a request model's JSON schema (what the OpenAPI documents say) and the model
itself agree on a body."""

from __future__ import annotations

from typing import Any

import jsonschema_rs
from pydantic import BaseModel, ValidationError


def documented_and_taken(model: type[BaseModel], body: Any) -> tuple[bool, bool]:
    """Whether ``model``'s JSON schema admits ``body``, and whether ``model`` takes it."""
    documented = jsonschema_rs.validator_for(model.model_json_schema()).is_valid(body)
    try:
        model.model_validate(body)
    except ValidationError:
        return documented, False
    return documented, True
