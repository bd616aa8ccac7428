"""A resource pool's documented capacity states the rule the request model checks."""

from __future__ import annotations

import pytest

from tests.support.schemas import documented_and_taken
from tracking.resource_pool.schemas import ResourcePoolRequest


@pytest.mark.parametrize("capacity", [{}, {"gpu": 1}, {"gpu": 0}])
def test_the_document_takes_the_capacities_the_model_takes(capacity):
    documented, taken = documented_and_taken(
        ResourcePoolRequest, {"name": "pool", "capacity": capacity}
    )
    assert documented == taken
