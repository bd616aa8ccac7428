"""A resource pool's documented capacity states the rule the request model checks."""

from __future__ import annotations

import jsonschema_rs
import pytest
from pydantic import ValidationError

from tracking.resource_pool.schemas import ResourcePoolRequest


@pytest.mark.parametrize("capacity", [{}, {"gpu": 1}, {"gpu": 0}])
def test_the_document_takes_the_capacities_the_model_takes(capacity):
    body = {"name": "pool", "capacity": capacity}
    schema = ResourcePoolRequest.model_json_schema()
    documented = jsonschema_rs.validator_for(schema).is_valid(body)
    try:
        ResourcePoolRequest.model_validate(body)
        taken = True
    except ValidationError:
        taken = False
    assert documented == taken
